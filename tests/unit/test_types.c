/* test_types.c — kernels/types.c: the type table, f16/bf16 <-> f32 conversions (every f16 and bf16
 * value, every rounding midpoint, NaN, subnormals, overflow) against an independent bit-level
 * reference, and the double/int/compare helpers. The NaN answers are what an sm_90 GPU gives
 * (tests/unit/ops_nan_probe.cu): cvt to f16/bf16 makes every NaN 0x7fff, f16 -> f32 makes it
 * 0x7fffffff, bf16 -> f32 is a plain shift. */
#include <math.h>
#include <stdint.h>

#include "kernels/types.h"
#include "t.h"
#include "util/common.h"

/* ---- independent reference: round f32 bits to a 16-bit format by integer arithmetic ---- */

/* f16 the way NVIDIA's host fallback does it (integer remainder, then round half to even). */
static uint16_t ref_f32_to_f16(uint32_t x) {
    uint32_t u = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u, rem, res;
    if (u > 0x7f800000u) return 0x7fff;
    if (u == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
    if (u > 0x477fefffu) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
    if (u >= 0x38800000u) {
        rem = u << 19;
        res = sign | ((u - 0x38000000u) >> 13);
    } else if (u < 0x33000001u) {
        rem = u;
        res = sign;
    } else {
        uint32_t shift = 0x7eu - (u >> 23), mant = (u & 0x7fffffu) | 0x800000u;
        rem = mant << (32 - shift);
        res = sign | (mant >> shift);
    }
    if (rem > 0x80000000u || (rem == 0x80000000u && (res & 1))) res++;
    return (uint16_t)res;
}

static uint16_t ref_f32_to_bf16(uint32_t x) {
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static float f32(uint32_t b) { return wp_bits_f32(b); }
static uint32_t bits32(float f) { return (uint32_t)wp_f32_bits(f); }

static void test_table(void) {
    T_CASE("type table");
    static const struct {
        wp_type t;
        const char *name, *cxx;
        size_t size;
        bool is_int, is_signed;
        uint64_t mask;
    } rows[] = {
        {WP_I32, "i32", "int", 4, true, true, 0xffffffffu},
        {WP_U32, "u32", "unsigned", 4, true, false, 0xffffffffu},
        {WP_I64, "i64", "long long", 8, true, true, ~0ull},
        {WP_U64, "u64", "unsigned long long", 8, true, false, ~0ull},
        {WP_F32, "f32", "float", 4, false, false, 0xffffffffu},
        {WP_F64, "f64", "double", 8, false, false, ~0ull},
        {WP_F16, "f16", "__half", 2, false, false, 0xffffu},
        {WP_BF16, "bf16", "__nv_bfloat16", 2, false, false, 0xffffu},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        CHECK(strcmp(wp_type_name(rows[i].t), rows[i].name) == 0);
        CHECK(strcmp(wp_type_cxx(rows[i].t), rows[i].cxx) == 0);
        CHECK(wp_type_parse(rows[i].name) == (int)rows[i].t);
        CHECK(wp_type_size(rows[i].t) == rows[i].size);
        CHECK(wp_type_is_int(rows[i].t) == rows[i].is_int);
        CHECK(wp_type_is_float(rows[i].t) == !rows[i].is_int);
        CHECK(wp_type_is_signed(rows[i].t) == rows[i].is_signed);
        CHECK(wp_type_bitmask(rows[i].t) == rows[i].mask);
        CHECK(((WP_T_INT >> rows[i].t) & 1) == rows[i].is_int);
    }
    static const char *bad[] = {"", "I32", "int", "f8", "i32 ", "float16", NULL};
    for (int i = 0; bad[i]; i++) CHECKF(wp_type_parse(bad[i]) == -1, "'%s'", bad[i]);
    CHECK(wp_type_parse(NULL) == -1);
}

static void test_f16_every_value(void) {
    T_CASE("f16 every value");
    int bad_roundtrip = 0, bad_ref = 0, nans = 0;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = wp_f16_to_f32((uint16_t)h);
        bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan) {
            nans++;
            if (bits32(f) != 0x7fffffffu || wp_f32_to_f16(f) != 0x7fff) bad_roundtrip++;
            continue;
        }
        if (wp_f32_to_f16(f) != h) bad_roundtrip++;
        /* the value is exactly sign * mant * 2^(exp-25) (or subnormal): check it with ldexp */
        uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0x1f ? INFINITY : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
        if (h & 0x8000) v = -v;
        if ((double)f != v || (signbit(f) != 0) != ((h & 0x8000) != 0)) bad_ref++;
    }
    CHECKF(bad_roundtrip == 0, "%d values do not round-trip", bad_roundtrip);
    CHECKF(bad_ref == 0, "%d values decode wrong", bad_ref);
    CHECK(nans == 2 * 1023);
}

/* Every midpoint between neighbouring f16 values, and one f32 ulp either side: the rounding edges. */
static void test_f16_midpoints(void) {
    T_CASE("f16 midpoints");
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
            double lo = fabs((double)wp_f16_to_f32((uint16_t)h));
            double hi = h + 1 == 0x7c00 ? 65520.0 : fabs((double)wp_f16_to_f32((uint16_t)(h + 1)));
            uint32_t mid = bits32((float)((lo + hi) / 2)); /* exact in f32 */
            for (int d = -1; d <= 1; d++) {
                uint32_t x = (mid + (uint32_t)d) | (sign << 16);
                uint16_t got = wp_f32_to_f16(f32(x)), want = ref_f32_to_f16(x);
                if (got != want) {
                    if (bad++ < 5) fprintf(stderr, "  f32 %08x -> f16 %04x, want %04x\n", x, got, want);
                }
            }
        }
    }
    CHECKF(bad == 0, "%d midpoint conversions differ", bad);
}

static void test_f16_sweep(void) {
    T_CASE("f32 -> f16 strided sweep");
    int bad = 0;
    for (uint64_t x = 0; x <= 0xffffffffu; x += 65521) { /* a prime stride touches every exponent */
        uint16_t got = wp_f32_to_f16(f32((uint32_t)x)), want = ref_f32_to_f16((uint32_t)x);
        if (got != want && bad++ < 5) fprintf(stderr, "  f32 %08x -> f16 %04x, want %04x\n", (unsigned)x, got, want);
    }
    CHECKF(bad == 0, "%d sweep conversions differ", bad);
}

static void test_f16_edges(void) {
    T_CASE("f16 edges");
    static const struct {
        uint32_t f32;
        uint16_t f16;
    } rows[] = {
        {0x00000000, 0x0000},
        {0x80000000, 0x8000},
        {0x3f800000, 0x3c00},
        {0xbf800000, 0xbc00},
        {0x477fe000, 0x7bff}, /* 65504, the largest f16 */
        {0x477fefff, 0x7bff}, /* just under 65520 */
        {0x477ff000, 0x7c00}, /* 65520 ties to even: infinity */
        {0xc77ff000, 0xfc00},
        {0x7f7fffff, 0x7c00},
        {0x7f800000, 0x7c00},
        {0xff800000, 0xfc00},
        {0x33800000, 0x0001}, /* 2^-24, the smallest subnormal */
        {0x33000000, 0x0000}, /* 2^-25 ties to even: zero */
        {0xb3000000, 0x8000},
        {0x33000001, 0x0001},
        {0x33c00000, 0x0002}, /* 1.5 * 2^-24 -> 2 (even) */
        {0x34200000, 0x0002}, /* 2.5 * 2^-24 -> 2 (even) */
        {0x387fc000, 0x03ff}, /* largest subnormal */
        {0x387fe000, 0x0400}, /* ties up into the smallest normal */
        {0x38800000, 0x0400},
        {0x3f801000, 0x3c00}, /* 1 + 2^-11: tie to even */
        {0x3f803000, 0x3c02},
        {0x3f801001, 0x3c01},
        {0x00000001, 0x0000},
        {0x80000001, 0x8000},
        /* every NaN, quiet or signalling, either sign, any payload: 0x7fff */
        {0x7fc00000, 0x7fff},
        {0xffc00000, 0x7fff},
        {0x7f800001, 0x7fff},
        {0xff812345, 0x7fff},
        {0x7fffffff, 0x7fff},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++)
        CHECKF(wp_f32_to_f16(f32(rows[i].f32)) == rows[i].f16, "%08x -> %04x, want %04x", rows[i].f32,
               wp_f32_to_f16(f32(rows[i].f32)), rows[i].f16);
    static const struct {
        uint16_t f16;
        uint32_t f32;
    } back[] = {
        {0x0001, 0x33800000}, {0x8001, 0xb3800000}, {0x03ff, 0x387fc000}, {0x0400, 0x38800000},
        {0x7bff, 0x477fe000}, {0x7c00, 0x7f800000}, {0xfc00, 0xff800000}, {0x8000, 0x80000000},
        {0x7e00, 0x7fffffff}, {0xfe00, 0x7fffffff}, {0x7c01, 0x7fffffff}, {0xfd55, 0x7fffffff},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(back); i++)
        CHECKF(bits32(wp_f16_to_f32(back[i].f16)) == back[i].f32, "%04x -> %08x, want %08x", back[i].f16,
               bits32(wp_f16_to_f32(back[i].f16)), back[i].f32);
}

static void test_bf16(void) {
    T_CASE("bf16");
    int bad = 0;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = wp_bf16_to_f32((uint16_t)h);
        if (bits32(f) != h << 16) bad++; /* plain shift, NaN too */
        bool is_nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        if (wp_f32_to_bf16(f) != (is_nan ? 0x7fff : h)) bad++; /* round trip */
        for (int d = -1; d <= 1; d++) {                        /* midpoints to h+1 */
            uint32_t x = (h << 16) + 0x8000u + (uint32_t)d;
            if (wp_f32_to_bf16(f32(x)) != ref_f32_to_bf16(x) && bad++ < 5)
                fprintf(stderr, "  f32 %08x -> bf16 %04x, want %04x\n", x, wp_f32_to_bf16(f32(x)), ref_f32_to_bf16(x));
        }
    }
    CHECKF(bad == 0, "%d bf16 conversions differ", bad);
    static const struct {
        uint32_t f32;
        uint16_t bf16;
    } rows[] = {
        {0x3f808000, 0x3f80},                                             /* 1 + 2^-8: tie to even */
        {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81}, {0x7f7f8000, 0x7f80}, /* ties up to infinity */
        {0x7f7f7fff, 0x7f7f}, {0x7f7fffff, 0x7f80}, {0x00008000, 0x0000}, /* subnormal tie to even */
        {0x00018000, 0x0002}, {0x80008001, 0x8001}, {0xff800000, 0xff80}, {0x7fc00000, 0x7fff},
        {0xffc00001, 0x7fff}, {0x7f800001, 0x7fff}, {0xff812345, 0x7fff},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++)
        CHECKF(wp_f32_to_bf16(f32(rows[i].f32)) == rows[i].bf16, "%08x -> %04x, want %04x", rows[i].f32,
               wp_f32_to_bf16(f32(rows[i].f32)), rows[i].bf16);
}

static void test_double_helpers(void) {
    T_CASE("value <-> double");
    static const struct {
        wp_type t;
        double v;
        uint64_t bits;
    } from[] = {
        {WP_I32, -1.9, 0xffffffffu},
        {WP_I32, 2.9, 2},
        {WP_I32, 3e9, 0x7fffffffu},
        {WP_I32, -3e9, 0x80000000u},
        {WP_I32, NAN, 0},
        {WP_U32, -0.5, 0},
        {WP_U32, -7, 0},
        {WP_U32, 5e9, 0xffffffffu},
        {WP_U32, 4294967295.0, 0xffffffffu},
        {WP_I64, -0x1p63, 0x8000000000000000ull},
        {WP_I64, 0x1p63, 0x7fffffffffffffffull},
        {WP_I64, -2.5, 0xfffffffffffffffeull},
        {WP_U64, 0x1p64, ~0ull},
        {WP_U64, 0x1p63, 0x8000000000000000ull},
        {WP_F32, 1.0, 0x3f800000u},
        {WP_F32, 0.1, 0x3dcccccdu},
        {WP_F64, -2.0, 0xc000000000000000ull},
        {WP_F16, 1.0, 0x3c00},
        {WP_F16, 65504.0, 0x7bff},
        {WP_F16, 1e6, 0x7c00},
        {WP_F16, -INFINITY, 0xfc00},
        {WP_F16, NAN, 0x7fff},
        {WP_F16, 0x1p-24, 0x0001},
        {WP_F16, 0x1p-25, 0x0000},
        {WP_F16, 0x1p-25 + 0x1p-60, 0x0001},     /* above the tie, though f32 would round it onto it */
        {WP_F16, 1 + 0x1p-11 + 0x1p-40, 0x3c01}, /* rounded once from double, not twice via f32 */
        {WP_BF16, 1 + 0x1p-8 + 0x1p-40, 0x3f81},
        {WP_BF16, 1.0, 0x3f80},
        {WP_BF16, NAN, 0x7fff},
        {WP_BF16, -0.0, 0x8000},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(from); i++) {
        uint64_t got = wp_value_from_double(from[i].t, from[i].v);
        CHECKF(got == from[i].bits, "%s from %g: %llx, want %llx", wp_type_name(from[i].t), from[i].v,
               (unsigned long long)got, (unsigned long long)from[i].bits);
    }
    CHECK(wp_value_to_double(WP_I32, 0xffffffffu) == -1.0);
    CHECK(wp_value_to_double(WP_I32, 0x1ffffffffull) == -1.0); /* high garbage ignored */
    CHECK(wp_value_to_double(WP_U32, 0xffffffffu) == 4294967295.0);
    CHECK(wp_value_to_double(WP_I64, 0x8000000000000000ull) == -0x1p63);
    CHECK(wp_value_to_double(WP_U64, ~0ull) == 0x1p64);
    CHECK(wp_value_to_double(WP_F16, 0x3555) == (double)wp_f16_to_f32(0x3555));
    CHECK(wp_value_to_double(WP_BF16, 0xc0a0) == -5.0);
    CHECK(wp_value_to_double(WP_F32, 0x3dcccccdu) == (double)0.1f);
    CHECK(wp_value_to_double(WP_F64, 0x3fb999999999999aull) == 0.1);
    CHECK(wp_value_to_i64(WP_I32, 0x80000000u) == INT32_MIN);
    CHECK(wp_value_to_i64(WP_U32, 0x80000000u) == 0x80000000ll);
    CHECK(wp_value_to_i64(WP_I64, ~0ull) == -1);
    CHECK(wp_value_to_i64(WP_U64, 5) == 5);
}

static void test_cmp(void) {
    T_CASE("wp_value_cmp");
    static const struct {
        wp_type t;
        uint64_t a, b;
        int want;
    } rows[] = {
        {WP_I32, 0xffffffffu, 1, -1},
        {WP_U32, 0xffffffffu, 1, 1},
        {WP_I32, 5, 5, 0},
        {WP_I32, 0x100000005ull, 5, 0}, /* high bits ignored */
        {WP_I64, 0x8000000000000000ull, 0, -1},
        {WP_U64, 0x8000000000000000ull, 0, 1},
        {WP_F32, 0x80000000u, 0, 0}, /* -0 == +0 */
        {WP_F32, 0xbf800000u, 0x3f800000u, -1},
        {WP_F32, 0x7fc00000u, 0, 2},
        {WP_F32, 0, 0x7fc00000u, 2},
        {WP_F32, 0x7f800000u, 0x7f7fffffu, 1},
        {WP_F64, 0x3ff0000000000000ull, 0x4000000000000000ull, -1},
        {WP_F64, 0x7ff8000000000000ull, 1, 2},
        {WP_F16, 0x3c00, 0xbc00, 1},
        {WP_F16, 0x7e00, 0x3c00, 2},
        {WP_F16, 0x8000, 0x0000, 0},
        {WP_BF16, 0x3f80, 0x4000, -1},
        {WP_BF16, 0xff81, 0x3f80, 2},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++)
        CHECKF(wp_value_cmp(rows[i].t, rows[i].a, rows[i].b) == rows[i].want, "row %zu: %d", i,
               wp_value_cmp(rows[i].t, rows[i].a, rows[i].b));
}

int main(void) {
    test_table();
    test_f16_every_value();
    test_f16_midpoints();
    test_f16_sweep();
    test_f16_edges();
    test_bf16();
    test_double_helpers();
    test_cmp();
    return t_done("test_types");
}
