/* types.c — the element types: names, sizes, C++ spellings, and exact conversions between raw bits
 * and C values. f16/bf16 conversions reproduce the GPU's cvt instructions bit for bit (measured on
 * sm_90): round to nearest even, subnormals kept, and every NaN made the canonical 0x7fff (f32 -> 16
 * bits) or 0x7fffffff (f16 -> f32); bf16 -> f32 is a plain shift that keeps NaN payloads.
 * Owns: nothing mutable. */
#include "types.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *cxx;
    size_t size;
    bool is_int, is_signed;
} type_row;

static const type_row type_rows[WP_TYPE_COUNT] = {
    [WP_I32] = {"i32", "int", 4, true, true},       [WP_U32] = {"u32", "unsigned", 4, true, false},
    [WP_I64] = {"i64", "long long", 8, true, true}, [WP_U64] = {"u64", "unsigned long long", 8, true, false},
    [WP_F32] = {"f32", "float", 4, false, false},   [WP_F64] = {"f64", "double", 8, false, false},
    [WP_F16] = {"f16", "__half", 2, false, false},  [WP_BF16] = {"bf16", "__nv_bfloat16", 2, false, false},
};

static bool type_ok(wp_type t) { return (unsigned)t < WP_TYPE_COUNT; }

const char *wp_type_name(wp_type t) { return type_ok(t) ? type_rows[t].name : "?"; }
const char *wp_type_cxx(wp_type t) { return type_ok(t) ? type_rows[t].cxx : "?"; }
size_t wp_type_size(wp_type t) { return type_ok(t) ? type_rows[t].size : 0; }
bool wp_type_is_int(wp_type t) { return type_ok(t) && type_rows[t].is_int; }
bool wp_type_is_signed(wp_type t) { return type_ok(t) && type_rows[t].is_signed; }
bool wp_type_is_float(wp_type t) { return type_ok(t) && !type_rows[t].is_int; }

int wp_type_parse(const char *s) {
    if (!s) return -1;
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        if (s[0] == type_rows[t].name[0] && strcmp(s, type_rows[t].name) == 0) return t;
    return -1;
}

uint64_t wp_type_bitmask(wp_type t) {
    size_t bytes = wp_type_size(t);
    return bytes >= 8 ? ~0ull : (1ull << (bytes * 8)) - 1;
}

/* A small binary float format: `mant_bits` stored fraction bits, exponent bias. */
typedef struct {
    int mant_bits, bias;
    uint16_t inf_bits;
} small_format;

static const small_format fmt_f16 = {10, 15, 0x7c00};
static const small_format fmt_bf16 = {7, 127, 0x7f80};

#define WP_SMALL_NAN 0x7fffu /* what cvt.rn.{f16,bf16}.f32 gives for every NaN */

/* Rounds a double once, to nearest even, into a small format. Widening f32 to double is exact, so
 * this also serves f32 -> f16/bf16 without double rounding. */
static uint16_t round_to_small(double v, const small_format *f) {
    if (isnan(v)) return WP_SMALL_NAN;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double mag = fabs(v);
    if (mag == 0) return sign;
    if (isinf(mag)) return sign | f->inf_bits;
    int min_exp = 1 - f->bias;
    int exp = ilogb(mag);
    if (exp < min_exp) exp = min_exp; /* subnormal: the quantum stops shrinking */
    /* mag / quantum is exact (a power-of-two scaling within double range); rint rounds half to even. */
    double units = rint(ldexp(mag, f->mant_bits - exp));
    if (units == 0) return sign;
    /* Exponent field (exp + bias - 1) plus units (which carries the implicit bit, or not when subnormal);
     * a carry out of the fraction moves into the exponent field, as the encoding intends. */
    uint32_t bits = ((uint32_t)(exp + f->bias - 1) << f->mant_bits) + (uint32_t)units;
    if (bits >= f->inf_bits) return sign | f->inf_bits;
    return sign | (uint16_t)bits;
}

float wp_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f) return wp_bits_f32(mant ? 0x7fffffffu : (sign | 0x7f800000u));
    if (exp == 0) {
        float mag = (float)mant * 0x1p-24f; /* exact: at most 10 significant bits */
        return wp_bits_f32(sign | (uint32_t)wp_f32_bits(mag));
    }
    return wp_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t wp_f32_to_f16(float f) { return round_to_small((double)f, &fmt_f16); }

float wp_bf16_to_f32(uint16_t h) { return wp_bits_f32((uint32_t)h << 16); }

uint16_t wp_f32_to_bf16(float f) { return round_to_small((double)f, &fmt_bf16); }

double wp_value_to_double(wp_type t, uint64_t bits) {
    switch (t) {
    case WP_I32:
        return (double)(int32_t)(uint32_t)bits;
    case WP_U32:
        return (double)(uint32_t)bits;
    case WP_I64:
        return (double)(int64_t)bits;
    case WP_U64:
        return (double)bits;
    case WP_F32:
        return (double)wp_bits_f32(bits);
    case WP_F64:
        return wp_bits_f64(bits);
    case WP_F16:
        return (double)wp_f16_to_f32((uint16_t)bits);
    case WP_BF16:
        return (double)wp_bf16_to_f32((uint16_t)bits);
    default:
        return 0;
    }
}

int64_t wp_value_to_i64(wp_type t, uint64_t bits) {
    switch (t) {
    case WP_I32:
        return (int32_t)(uint32_t)bits;
    case WP_U32:
        return (int64_t)(uint32_t)bits;
    case WP_I64:
    case WP_U64:
        return (int64_t)bits;
    default:
        return (int64_t)wp_value_to_double(t, bits);
    }
}

/* Truncates toward zero and saturates at the type's range (NaN gives 0), as cvt.rzi does. */
static uint64_t double_to_int_bits(wp_type t, double v) {
    if (isnan(v)) return 0;
    switch (t) {
    case WP_I32:
        if (v >= 0x1p31) return 0x7fffffffu;
        if (v <= -0x1p31) return 0x80000000u;
        return (uint32_t)(int32_t)v;
    case WP_U32:
        if (v >= 0x1p32) return 0xffffffffu;
        return v <= -1.0 ? 0 : (uint32_t)v;
    case WP_I64:
        if (v >= 0x1p63) return 0x7fffffffffffffffull;
        if (v <= -0x1p63) return 0x8000000000000000ull;
        return (uint64_t)(int64_t)v;
    default: /* WP_U64 */
        if (v >= 0x1p64) return ~0ull;
        return v <= -1.0 ? 0 : (uint64_t)v;
    }
}

uint64_t wp_value_from_double(wp_type t, double v) {
    switch (t) {
    case WP_F32:
        return wp_f32_bits((float)v);
    case WP_F64:
        return wp_f64_bits(v);
    case WP_F16:
        return round_to_small(v, &fmt_f16);
    case WP_BF16:
        return round_to_small(v, &fmt_bf16);
    default:
        return wp_type_is_int(t) ? double_to_int_bits(t, v) : 0;
    }
}

int wp_value_cmp(wp_type t, uint64_t a, uint64_t b) {
    uint64_t m = wp_type_bitmask(t);
    a &= m;
    b &= m;
    if (t == WP_I32 || t == WP_I64) {
        int64_t x = wp_value_to_i64(t, a), y = wp_value_to_i64(t, b);
        return (x > y) - (x < y);
    }
    if (t == WP_U32 || t == WP_U64) return (a > b) - (a < b);
    double x = wp_value_to_double(t, a), y = wp_value_to_double(t, b); /* exact for every float type */
    if (isnan(x) || isnan(y)) return 2;
    return (x > y) - (x < y);
}
