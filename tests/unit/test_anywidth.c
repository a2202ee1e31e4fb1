/* test_anywidth.c — warp_reduce and warp_scan at every width 1..32 (CUB's logical warps) on the emulator,
 * through the engine (server/engine/reduce.c), against plain references written here, independent of
 * kernels/: integers against a sequential fold or scan (exact: the builtins are associative there);
 * f32 and f64 against the documented order written out in C arithmetic — tree_up (offsets 1, 2, 4, ..,
 * docs/semantics.md "Logical warps of any width") for a width that is not a power of two, the halving tree
 * for a power of two, Hillis-Steele for scans — so the bits must match exactly. Each n leaves a short
 * last group (CUB's valid_items) for every width above 1 and spans several warps and rows. Also: every
 * strategy of a non-power-of-two width gives shfl_down's bits, and the widths the spec refuses (0, 33,
 * 7.5, a string; 7 for the shuffle primitives; shfl_xor at width 7) with 400s naming their field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "t.h"

static wp_app app; /* emu only */

/* n = 1000 leaves a short last group for every width but 1, 2, 4, 5, 8, 10, 20, 25 (1000 = 2^3 * 5^3);
 * 999 for those; 0 is empty. */
static const uint64_t sizes[] = {0, 999, 1000};

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool make_spec(const char *family, wp_type t, const char *op, int strategy, int width, bool exclusive,
                      wp_spec *s) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(family);
    s->type = t;
    s->width = width;
    s->mask = 0xffffffffu;
    s->data = (wp_data_spec){.strategy = strategy, .exclusive = exclusive};
    snprintf(s->arch, sizeof s->arch, "sm_90");
    wp_err err = {0};
    if (!s->family || ((s->family->flags & WP_F_OP) && wp_op_parse(op, t, "op", &s->op, &err))) return false;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

/* Runs the spec over n values on emu; *out gets the output array (malloc'd), *count its length. */
static bool run(const wp_spec *s, const void *host, uint64_t n, bool has_init, uint64_t init, uint8_t **out,
                uint64_t *count) {
    size_t bytes = (size_t)n * wp_type_size(s->type);
    wp_buf *in = wp_buf_alloc(app.emu, bytes, NULL);
    wp_err err = {0};
    if (!in || wp_buf_write(in, 0, host, bytes, &err)) return false;
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .has_init = has_init, .init = init};
    wp_reduce_result r = {0};
    bool ok = wp_reduce_run(&app, app.emu, &job, &r, &err) == 0;
    if (!ok) fprintf(stderr, "  %s w%d: %s\n", s->family->name, s->width, err.msg);
    *count = ok ? r.out_count : 0;
    *out = malloc((size_t)*count * wp_type_size(s->type) + 8);
    if (ok && *count) ok = wp_buf_read(r.out, 0, *out, (size_t)*count * wp_type_size(s->type), &err) == 0;
    wp_reduce_result_free(&r);
    wp_buf_free(in);
    return ok;
}

/* ---- references ---- */

typedef enum { OP_SUM, OP_MIN, OP_MAX, OP_XOR, OP_SUB } ref_op; /* OP_SUB: the expression "a - b" */
static const char *const op_text[] = {"sum", "min", "max", "xor", "a - b"};

static double dop(ref_op op, double a, double b) {
    return op == OP_SUM ? a + b : op == OP_MIN ? fmin(a, b) : op == OP_MAX ? fmax(a, b) : a - b;
}
static float fop(ref_op op, float a, float b) {
    return op == OP_SUM ? a + b : op == OP_MIN ? fminf(a, b) : op == OP_MAX ? fmaxf(a, b) : a - b;
}
static int64_t iop(ref_op op, int64_t a, int64_t b) {
    return op == OP_SUM   ? (int64_t)((uint64_t)a + (uint64_t)b)
           : op == OP_MIN ? (a < b ? a : b)
           : op == OP_MAX ? (a > b ? a : b)
                          : a ^ b;
}

/* The documented order of one group of `valid` values (v clobbered): tree_up for a width that is not a
 * power of two, the halving tree (offsets P/2 .. 1) for a power of two. Written per type. */
#define TREE_REF(NAME, T, OPF)                                                                                         \
    static T NAME(ref_op op, T *v, int valid, int width) {                                                             \
        if (width & (width - 1)) {                                                                                     \
            for (int o = 1; o < valid; o <<= 1)                                                                        \
                for (int l = 0; l + o < valid; l += 2 * o) v[l] = OPF(op, v[l], v[l + o]);                             \
        } else {                                                                                                       \
            int p = 1;                                                                                                 \
            while (p < valid) p <<= 1;                                                                                 \
            for (int o = p / 2; o > 0; o >>= 1)                                                                        \
                for (int i = 0; i < o && i + o < valid; i++) v[i] = OPF(op, v[i], v[i + o]);                           \
        }                                                                                                              \
        return v[0];                                                                                                   \
    }
TREE_REF(tree_f32, float, fop)
TREE_REF(tree_f64, double, dop)

/* Hillis-Steele over v[0..m): for o = 1, 2, 4, .., v[i] = op(v[i-o], v[i]) for every i >= o at once. */
#define HS_REF(NAME, T, OPF)                                                                                           \
    static void NAME(ref_op op, T *v, int m) {                                                                         \
        for (int o = 1; o < m; o <<= 1)                                                                                \
            for (int i = m - 1; i >= o; i--) v[i] = OPF(op, v[i - o], v[i]);                                           \
    }
HS_REF(hs_f32, float, fop)
HS_REF(hs_f64, double, dop)

/* Random input: i32 in -1000..1000, f32/f64 with full mantissas in [-4, 4). */
static void fill(wp_type t, void *host, uint64_t n, uint64_t seed) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = rng(&seed);
        if (t == WP_I32) ((int32_t *)host)[i] = (int32_t)(r % 2001) - 1000;
        if (t == WP_F32) ((float *)host)[i] = (float)((double)(r >> 40) * 0x1p-24 * 8.0 - 4.0);
        if (t == WP_F64) ((double *)host)[i] = (double)(r >> 11) * 0x1p-53 * 8.0 - 4.0;
    }
}

/* Group g's reference result as raw bits. */
static uint64_t ref_group(wp_type t, ref_op op, const void *host, uint64_t from, int valid, int width) {
    uint64_t bits = 0;
    if (t == WP_I32) {
        int64_t acc = ((const int32_t *)host)[from];
        for (int i = 1; i < valid; i++) acc = iop(op, acc, ((const int32_t *)host)[from + (uint64_t)i]);
        return (uint32_t)(int32_t)acc;
    }
    if (t == WP_F32) {
        float v[32];
        memcpy(v, (const float *)host + from, (size_t)valid * sizeof *v);
        float r = tree_f32(op, v, valid, width);
        memcpy(&bits, &r, 4);
    } else {
        double v[32];
        memcpy(v, (const double *)host + from, (size_t)valid * sizeof *v);
        double r = tree_f64(op, v, valid, width);
        memcpy(&bits, &r, 8);
    }
    return bits;
}

/* ---- warp_reduce: every width, type, operator and size ---- */

static void test_reduce_widths(void) {
    T_CASE("warp_reduce every width");
    static const wp_type types[] = {WP_I32, WP_F32, WP_F64};
    for (int w = 1; w <= 32; w++)
        for (size_t ti = 0; ti < WP_ARRAY_LEN(types); ti++)
            for (int op = OP_SUM; op <= OP_SUB; op++) {
                wp_type t = types[ti];
                if (op == OP_XOR && t != WP_I32) continue;
                if (op == OP_SUB && t == WP_I32) continue; /* integers: the builtins */
                wp_spec s;
                if (!make_spec("warp_reduce", t, op_text[op], 0, w, false, &s)) {
                    CHECKF(0, "spec w%d %s %s", w, wp_type_name(t), op_text[op]);
                    continue;
                }
                for (size_t si = 0; si < WP_ARRAY_LEN(sizes); si++) {
                    uint64_t n = sizes[si], count = 0;
                    uint8_t *host = malloc((size_t)n * 8 + 8), *out = NULL;
                    fill(t, host, n, n * 131 + (uint64_t)w);
                    bool ok = run(&s, host, n, false, 0, &out, &count) && count == (n + (uint64_t)w - 1) / (uint64_t)w;
                    for (uint64_t g = 0; ok && g < count; g++) {
                        uint64_t from = g * (uint64_t)w;
                        int valid = n - from < (uint64_t)w ? (int)(n - from) : w;
                        uint64_t want = ref_group(t, (ref_op)op, host, from, valid, w);
                        ok = wp_data_load(t, out, g) == want;
                        if (!ok)
                            fprintf(stderr, "  group %llu (valid %d): emu 0x%llx, reference 0x%llx\n",
                                    (unsigned long long)g, valid, (unsigned long long)wp_data_load(t, out, g),
                                    (unsigned long long)want);
                    }
                    CHECKF(ok, "warp_reduce/%s op=%s w%d n=%llu", wp_type_name(t), op_text[op], w,
                           (unsigned long long)n);
                    free(host);
                    free(out);
                }
                wp_spec_free(&s);
            }
}

/* ---- warp_scan: every width, inclusive and exclusive, with and without init ---- */

static bool check_scan_i32(const int32_t *x, uint64_t n, int w, bool excl, bool has_init, int32_t init,
                           const int32_t *out) {
    int64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        bool first = i % (uint64_t)w == 0;
        int64_t want;
        if (excl) {
            want = first ? (has_init ? init : 0) : acc;
            acc = first ? (has_init ? init + (int64_t)x[i] : x[i]) : acc + x[i];
        } else {
            acc = first ? (has_init ? init + (int64_t)x[i] : x[i]) : acc + x[i];
            want = acc;
        }
        if (out[i] != (int32_t)(uint32_t)(uint64_t)want) return false;
    }
    return true;
}

static bool check_scan_f32(const float *x, uint64_t n, int w, bool excl, bool has_init, float init, const float *out) {
    float v[32];
    for (uint64_t g = 0; g * (uint64_t)w < n; g++) {
        uint64_t from = g * (uint64_t)w;
        int valid = n - from < (uint64_t)w ? (int)(n - from) : w;
        memcpy(v, x + from, (size_t)valid * sizeof *v);
        hs_f32(OP_SUM, v, valid);
        for (int i = 0; i < valid; i++) {
            float want = excl ? (i == 0     ? (has_init ? init : 0.0f)
                                 : has_init ? init + v[i - 1]
                                            : v[i - 1])
                              : (has_init ? init + v[i] : v[i]);
            if (memcmp(&want, &out[from + (uint64_t)i], 4)) return false;
        }
    }
    return true;
}

static bool check_scan_f64_sub(const double *x, uint64_t n, int w, const double *out) {
    double v[32];
    for (uint64_t g = 0; g * (uint64_t)w < n; g++) {
        uint64_t from = g * (uint64_t)w;
        int valid = n - from < (uint64_t)w ? (int)(n - from) : w;
        memcpy(v, x + from, (size_t)valid * sizeof *v);
        hs_f64(OP_SUB, v, valid);
        if (memcmp(v, out + from, (size_t)valid * sizeof *v)) return false;
    }
    return true;
}

static void test_scan_widths(void) {
    T_CASE("warp_scan every width");
    const uint64_t n = 1000;
    uint8_t *host = malloc(n * 8);
    for (int w = 1; w <= 32; w++)
        for (int variant = 0; variant < 5; variant++) {
            bool excl = variant & 1, has_init = variant & 2, sub = variant == 4;
            wp_type t = sub ? WP_F64 : (w & 1) ? WP_I32 : WP_F32; /* odd widths i32, even f32 */
            wp_spec s;
            if (!make_spec("warp_scan", t, sub ? "a - b" : "sum", 0, w, excl && !sub, &s)) {
                CHECKF(0, "spec warp_scan w%d", w);
                continue;
            }
            fill(t, host, n, (uint64_t)w * 7 + (uint64_t)variant);
            uint64_t init = 0, count = 0;
            if (t == WP_I32) init = (uint32_t)(int32_t)-77;
            if (t == WP_F32) init = wp_f32_bits(0.375f);
            uint8_t *out = NULL;
            bool ok = run(&s, host, n, has_init && !sub, init, &out, &count) && count == n;
            if (ok && sub)
                ok = check_scan_f64_sub((const double *)host, n, w, (const double *)out);
            else if (ok && t == WP_I32)
                ok = check_scan_i32((const int32_t *)host, n, w, excl, has_init, -77, (const int32_t *)out);
            else if (ok)
                ok = check_scan_f32((const float *)host, n, w, excl, has_init, 0.375f, (const float *)out);
            CHECKF(ok, "warp_scan/%s w%d%s%s%s", wp_type_name(t), w, excl ? " exclusive" : "", has_init ? " init" : "",
                   sub ? " a - b" : "");
            free(out);
            wp_spec_free(&s);
        }
    free(host);
}

/* ---- strategies of a non-power-of-two width agree with shfl_down bit for bit ---- */

static void test_strategies(void) {
    T_CASE("any-width strategies");
    static const int widths[] = {3, 7, 17, 31};
    const uint64_t n = 1000;
    uint8_t *host = malloc(n * 8);
    for (size_t wi = 0; wi < WP_ARRAY_LEN(widths); wi++)
        for (int ti = 0; ti < 2; ti++) {
            wp_type t = ti ? WP_F32 : WP_I32;
            const char *op = ti ? "a - b" : "sum";
            fill(t, host, n, widths[wi] + 99u);
            wp_spec base;
            uint8_t *want = NULL, *got = NULL;
            uint64_t cw = 0, cg = 0;
            if (!make_spec("warp_reduce", t, op, WP_STRAT_SHFL_DOWN, widths[wi], false, &base) ||
                !run(&base, host, n, false, 0, &want, &cw)) {
                CHECKF(0, "shfl_down w%d", widths[wi]);
                continue;
            }
            for (int st = 1; st < WP_STRAT_COUNT; st++) {
                wp_spec s;
                if (!(base.family->strategies & WP_STRATBIT(st)) || st == WP_STRAT_SHFL_XOR) continue;
                if (!make_spec("warp_reduce", t, op, st, widths[wi], false, &s)) continue; /* redux, atomic on f32 */
                bool ok = run(&s, host, n, false, 0, &got, &cg) && cg == cw && !memcmp(got, want, cw * 4);
                CHECKF(ok, "warp_reduce/%s w%d %s", wp_type_name(t), widths[wi], wp_strategy_name(st));
                free(got);
                got = NULL;
                wp_spec_free(&s);
            }
            wp_spec smem;
            if (make_spec("warp_scan", t, op, WP_STRAT_SMEM, widths[wi], false, &smem)) {
                wp_spec shfl;
                uint8_t *a = NULL, *b = NULL;
                uint64_t ca = 0, cb = 0;
                bool ok = make_spec("warp_scan", t, op, WP_STRAT_SHFL_UP, widths[wi], false, &shfl) &&
                          run(&smem, host, n, false, 0, &a, &ca) && run(&shfl, host, n, false, 0, &b, &cb) && ca == n &&
                          cb == n && !memcmp(a, b, n * 4);
                CHECKF(ok, "warp_scan/%s w%d smem = shfl_up", wp_type_name(t), widths[wi]);
                free(a);
                free(b);
                wp_spec_free(&shfl);
                wp_spec_free(&smem);
            }
            free(want);
            wp_spec_free(&base);
        }
    free(host);
}

/* ---- block_reduce / block_scan at any block size (CUB's BlockReduce/BlockScan) ---- */

/* The block combine of docs/semantics.md in float: a tree over the group (smem, gmem), or a tree per warp
 * of 32 (valid lanes first) and then a tree over the warps' results (shuffles). */
static float block_combine_ref(float *v, int valid, bool one_tree) {
    if (one_tree || valid <= 32) return tree_f32(OP_SUB, v, valid, 32);
    float warps[32];
    int n_warps = (valid + 31) / 32;
    for (int w = 0; w < n_warps; w++)
        warps[w] = tree_f32(OP_SUB, v + 32 * w, valid - 32 * w < 32 ? valid - 32 * w : 32, 32);
    return tree_f32(OP_SUB, warps, n_warps, 32);
}

/* Hillis-Steele over the group (smem, or 32 and fewer), or per warp, over the warps' totals, then
 * op(total of the warps before, v). */
static void block_scan_ref(float *v, int valid, bool one_scan) {
    if (one_scan || valid <= 32) {
        hs_f32(OP_SUB, v, valid);
        return;
    }
    float totals[32];
    int n_warps = (valid + 31) / 32;
    for (int w = 0; w < n_warps; w++) {
        int wv = valid - 32 * w < 32 ? valid - 32 * w : 32;
        hs_f32(OP_SUB, v + 32 * w, wv);
        totals[w] = v[32 * w + wv - 1];
    }
    hs_f32(OP_SUB, totals, n_warps);
    for (int i = 32; i < valid; i++) v[i] = totals[i / 32 - 1] - v[i];
}

static bool check_block(const wp_spec *s, const float *x, uint64_t n, const uint8_t *out, uint64_t count) {
    const int g = s->data.block;
    const bool one = s->data.strategy == WP_STRAT_SMEM || s->data.strategy == WP_STRAT_GMEM;
    const bool scan = s->family->flags & WP_F_SCAN;
    float v[1024];
    if (count != (scan ? n : (n + (uint64_t)g - 1) / (uint64_t)g)) return false;
    for (uint64_t from = 0; from < n; from += (uint64_t)g) {
        int valid = n - from < (uint64_t)g ? (int)(n - from) : g;
        memcpy(v, x + from, (size_t)valid * sizeof *v);
        if (scan) {
            block_scan_ref(v, valid, one);
            if (memcmp(v, out + from * 4, (size_t)valid * 4)) return false;
        } else {
            float r = block_combine_ref(v, valid, one);
            if (memcmp(&r, out + from / (uint64_t)g * 4, 4)) return false;
        }
    }
    return true;
}

static void test_block_sizes(void) {
    T_CASE("block_reduce/block_scan any block");
    static const int blocks[] = {1, 3, 7, 31, 33, 63, 100, 255, 1000, 1024};
    const uint64_t n = 2500;
    float *x = malloc(n * sizeof *x);
    fill(WP_F32, x, n, 2024);
    for (size_t bi = 0; bi < WP_ARRAY_LEN(blocks); bi++)
        for (int fam = 0; fam < 2; fam++)
            for (int st = 1; st < WP_STRAT_COUNT; st++) {
                wp_spec s;
                const char *family = fam ? "block_scan" : "block_reduce";
                if (st == WP_STRAT_REDUX || st == WP_STRAT_ATOMIC) continue; /* f32 "a - b": not allowed */
                if (!make_spec(family, WP_F32, "a - b", st, 32, false, &s)) continue;
                wp_spec_free(&s);
                memset(&s, 0, sizeof s);
                s.family = wp_family_find(family);
                s.type = WP_F32;
                s.width = 32;
                s.mask = 0xffffffffu;
                s.data = (wp_data_spec){.strategy = st, .block = blocks[bi]};
                snprintf(s.arch, sizeof s.arch, "sm_90");
                wp_err err = {0};
                bool ok = wp_op_parse("a - b", WP_F32, "op", &s.op, &err) == 0 && wp_spec_validate(&s, &err) == 0;
                uint8_t *out = NULL;
                uint64_t count = 0;
                ok = ok && run(&s, x, n, false, 0, &out, &count) && check_block(&s, x, n, out, count);
                CHECKF(ok, "%s f32 a - b block %d %s %s", family, blocks[bi], wp_strategy_name(st), err.msg);
                free(out);
                wp_spec_free(&s);
            }
    free(x);
}

/* ---- the widths the spec refuses, and what the family table says ---- */

static void expect_width_error(const char *json, const char *code, const char *field) {
    cJSON *o = cJSON_Parse(json);
    wp_spec s;
    wp_err err = {0};
    int rc = wp_spec_from_json(o, "sm_90", &s, &err);
    CHECKF(rc != 0 && err.status == 400 && !strcmp(err.code, code) && !strcmp(err.field, field), "%s -> %d %s %s (%s)",
           json, err.status, err.code, err.field, err.msg);
    if (rc == 0) wp_spec_free(&s);
    cJSON_Delete(o);
}

static void expect_width_ok(const char *json, int width) {
    cJSON *o = cJSON_Parse(json);
    wp_spec s;
    wp_err err = {0};
    int rc = wp_spec_from_json(o, "sm_90", &s, &err);
    CHECKF(rc == 0 && s.width == width, "%s: %s", json, err.msg);
    if (rc == 0) wp_spec_free(&s);
    cJSON_Delete(o);
}

static void test_bad_widths(void) {
    T_CASE("bad widths");
    static const char *const fams[] = {"warp_reduce", "warp_scan"};
    char json[160];
    for (size_t i = 0; i < WP_ARRAY_LEN(fams); i++) {
        for (int w = 1; w <= 32; w++) {
            snprintf(json, sizeof json, "{\"family\":\"%s\",\"type\":\"f32\",\"width\":%d}", fams[i], w);
            expect_width_ok(json, w);
        }
        static const char *const bad[] = {"0", "33", "7.5", "-1", "64", "1e9"};
        for (size_t b = 0; b < WP_ARRAY_LEN(bad); b++) {
            snprintf(json, sizeof json, "{\"family\":\"%s\",\"type\":\"f32\",\"width\":%s}", fams[i], bad[b]);
            expect_width_error(json, "bad_width", "width");
        }
        snprintf(json, sizeof json, "{\"family\":\"%s\",\"type\":\"f32\",\"width\":\"7\"}", fams[i]);
        expect_width_error(json, "wrong_type", "width");
    }
    /* the shuffle primitives keep CUDA's power-of-two rule */
    expect_width_error("{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":7}", "bad_width", "width");
    expect_width_error("{\"family\":\"shfl_down\",\"type\":\"i32\",\"width\":12}", "bad_width", "width");
    expect_width_error("{\"family\":\"warp_allreduce\",\"type\":\"i32\",\"width\":3}", "bad_width", "width");
    expect_width_error("{\"family\":\"block_reduce\",\"type\":\"i32\",\"width\":7}", "bad_width", "width");
    expect_width_ok("{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":8}", 8);
    /* shfl_xor has no meaning in a group of 7; every other strategy does */
    expect_width_error("{\"family\":\"warp_reduce\",\"type\":\"f32\",\"width\":7,\"strategy\":\"shfl_xor\"}",
                       "strategy_not_allowed", "strategy");
    expect_width_ok("{\"family\":\"warp_reduce\",\"type\":\"f32\",\"width\":8,\"strategy\":\"shfl_xor\"}", 8);
    expect_width_ok("{\"family\":\"warp_reduce\",\"type\":\"i32\",\"width\":7,\"strategy\":\"redux\"}", 7);
    /* block_reduce / block_scan take any block 1..1024 (the group); the others keep powers of two 32..1024 */
    expect_width_ok("{\"family\":\"block_reduce\",\"type\":\"f32\",\"block\":100}", 32);
    expect_width_ok("{\"family\":\"block_scan\",\"type\":\"f32\",\"block\":7}", 32);
    expect_width_error("{\"family\":\"block_reduce\",\"type\":\"f32\",\"block\":1025}", "bad_block", "block");
    expect_width_error("{\"family\":\"block_scan\",\"type\":\"f32\",\"block\":0}", "bad_block", "block");
    expect_width_error("{\"family\":\"block_scan\",\"type\":\"f32\",\"block\":7.5}", "bad_block", "block");
    expect_width_error("{\"family\":\"device_reduce\",\"type\":\"f32\",\"block\":100}", "bad_block", "block");
    expect_width_error("{\"family\":\"warp_reduce\",\"type\":\"f32\",\"block\":100}", "bad_block", "block");
    CHECK(wp_family_find("warp_reduce")->widths & WP_W_ANY);
    CHECK(wp_family_find("warp_scan")->widths & WP_W_ANY);
    CHECK(!(wp_family_find("shfl")->widths & WP_W_ANY));
    CHECK(!(wp_family_find("block_reduce")->widths & WP_W_ANY));
}

int main(void) {
    app.emu = wp_backend_emu_open();
    app.preferred = app.emu;
    app.max_elements = 1ull << 30;
    snprintf(app.arch, sizeof app.arch, "sm_90");
    test_reduce_widths();
    test_scan_widths();
    test_strategies();
    test_block_sizes();
    test_bad_widths();
    wp_backend_close(app.emu);
    return t_done("anywidth");
}
