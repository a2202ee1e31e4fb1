/* test_emu.c — the warp emulator (kernels/lanes.c and the family files, through the emu backend)
 * against docs/semantics.md, two ways:
 *  - named cases in emu_cases.json (the tutorial patterns and the corners), expectations literal;
 *  - a sweep over every family x width x mask x type x scene x variant, each checked against a
 *    small direct reference written here from the contract (divisions and loops, not lanes.c's
 *    bit tricks, and none of its helpers).
 * Every element's out, why and (where the family writes it) src is compared. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/expr.h"
#include "kernels/family.h"
#include "kernels/spec.h"
#include "kernels/types.h"
#include "t.h"

#define SLOTS (WP_MAX_LANES * WP_MAX_ELEMS)
#define OUT_UNTOUCHED 0x5e5e5e5e5e5e5e5eull /* pre-filled out: an undefined element must keep it */
#define WHY_UNWRITTEN 0xff                  /* pre-filled why: every element must get one */

typedef struct {
    uint64_t in[SLOTS];
    int32_t arg[WP_MAX_LANES];
    uint8_t active[WP_MAX_LANES];
    uint64_t out[SLOTS], want_out[SLOTS];
    uint8_t why[SLOTS], want_why[SLOTS];
    int32_t src[WP_MAX_LANES], want_src[WP_MAX_LANES];
    bool check_src;
} bench;

/* ------------------------------------------------------------------------------------------------
 * Running and comparing */

static void reset_result(uint64_t *out, uint8_t *why, int32_t *src) {
    for (int i = 0; i < SLOTS; i++) out[i] = OUT_UNTOUCHED, why[i] = WHY_UNWRITTEN;
    for (int i = 0; i < WP_MAX_LANES; i++) src[i] = -1;
}

static int run_on_emu(wp_backend *emu, const wp_spec *s, const wp_warp_job *job, bench *b) {
    reset_result(b->out, b->why, b->src);
    wp_warp_result res = {b->out, b->src, b->why};
    wp_run_timing timing = {0};
    wp_err err = {0};
    int rc = wp_backend_run_warp(emu, NULL, s, job, &res, &timing, &err);
    CHECKF(rc == 0, "run_warp: %s", err.msg);
    CHECK(timing.kernel_us >= 0 && timing.upload_us == 0 && timing.download_us == 0);
    return rc;
}

static const char *why_text(uint8_t w) { return w == WHY_UNWRITTEN ? "(unwritten)" : wp_why_name((wp_why)w); }

/* One CHECK per run; the first differing element is printed. */
static void compare(const char *label, const wp_warp_job *job, const bench *b) {
    int slots = job->n * job->elems;
    for (int i = 0; i < slots; i++) {
        if (b->why[i] == b->want_why[i] && b->out[i] == b->want_out[i]) continue;
        CHECKF(0, "%s: thread %d elem %d: got %#llx (%s), want %#llx (%s)", label, i / job->elems, i % job->elems,
               (unsigned long long)b->out[i], why_text(b->why[i]), (unsigned long long)b->want_out[i],
               why_text(b->want_why[i]));
        return;
    }
    for (int t = 0; b->check_src && t < job->n; t++) {
        if (b->src[t] == b->want_src[t]) continue;
        CHECKF(0, "%s: thread %d: src %d, want %d", label, t, b->src[t], b->want_src[t]);
        return;
    }
    CHECK(1);
}

/* ------------------------------------------------------------------------------------------------
 * The reference: the contract, written out directly */

static uint64_t ref_bits(wp_type t, uint64_t v) {
    static const int bits[WP_TYPE_COUNT] = {32, 32, 64, 64, 32, 64, 16, 16};
    return bits[t] == 64 ? v : v % (1ull << bits[t]);
}

static bool ref_active(const wp_warp_job *job, int t) { return t < job->n && job->active[t]; }
static bool ref_member(uint32_t mask, int lane) { return (mask >> lane) % 2 == 1; }
static int ref_seg(int width, int lane) { return lane / width * width; }

/* Whether thread t calls the primitive, and if not, why. */
static wp_why ref_call(const wp_warp_job *job, uint32_t mask, int t) {
    if (!ref_active(job, t)) return WP_WHY_INACTIVE;
    if (!ref_member(mask, t % 32)) return WP_WHY_NOT_MEMBER;
    return WP_WHY_DEFINED;
}

static void ref_lane_why(bench *b, const wp_warp_job *job, int t, wp_why why) {
    for (int e = 0; e < job->elems; e++) b->want_why[t * job->elems + e] = (uint8_t)why;
}

static void ref_reset(bench *b) {
    reset_result(b->want_out, b->want_why, b->want_src);
    b->check_src = true;
}

/* Source lane per shuffle mode; *in_range is PTX's pval. */
static int ref_shfl_j(const wp_family *f, int width, int lane, int32_t b, bool *in_range) {
    int seg = ref_seg(width, lane);
    long long j;
    if (!strcmp(f->name, "shfl")) {
        j = seg + ((b % width) + width) % width;
        *in_range = true;
    } else if (!strcmp(f->name, "shfl_up")) {
        j = (long long)lane - b;
        *in_range = j >= seg;
    } else if (!strcmp(f->name, "shfl_down")) {
        j = (long long)lane + b;
        *in_range = j < seg + width;
    } else { /* shfl_xor, swap */
        j = lane ^ b;
        *in_range = j >= 0 && j < seg + width;
    }
    return *in_range ? (int)j : -1;
}

/* Shuffle of thread t: the source thread to copy from, or -1 with b->want_why set. */
static int ref_shfl_from(const wp_spec *s, const wp_warp_job *job, bench *b, int t) {
    int lane = t % 32, base = t - lane;
    bool in_range;
    int j = ref_shfl_j(s->family, s->width, lane, job->arg[t], &in_range);
    b->want_src[t] = j;
    if (!in_range) return t;
    if (!ref_member(s->mask, j)) return ref_lane_why(b, job, t, WP_WHY_SRC_NOT_MEMBER), -1;
    if (!ref_active(job, base + j)) return ref_lane_why(b, job, t, WP_WHY_SRC_INACTIVE), -1;
    return base + j;
}

static void ref_shuffle(const wp_spec *s, const wp_warp_job *job, bench *b) {
    for (int t = 0; t < job->n; t++) {
        wp_why call = ref_call(job, s->mask, t);
        ref_lane_why(b, job, t, call);
        if (call != WP_WHY_DEFINED) continue;
        int from = ref_shfl_from(s, job, b, t);
        for (int e = 0; from >= 0 && e < job->elems; e++)
            b->want_out[t * job->elems + e] = ref_bits(s->type, job->in[from * job->elems + e]);
    }
}

static void ref_swap(const wp_spec *s, const wp_warp_job *job, bench *b) {
    int E = job->elems, first = job->first, second = job->second;
    for (int t = 0; t < job->n; t++) {
        wp_why call = ref_call(job, s->mask, t);
        ref_lane_why(b, job, t, call);
        if (call != WP_WHY_DEFINED) continue;
        int from = ref_shfl_from(s, job, b, t); /* -1: both written elements undefined */
        uint8_t why_written = b->want_why[t * E];
        for (int e = 0; e < E; e++) {
            b->want_why[t * E + e] = WP_WHY_DEFINED;
            b->want_out[t * E + e] = ref_bits(s->type, job->in[t * E + e]);
        }
        b->want_why[t * E + first] = b->want_why[t * E + second] = why_written;
        b->want_out[t * E + first] = b->want_out[t * E + second] = OUT_UNTOUCHED;
        if (from < 0) continue;
        b->want_out[t * E + first] = ref_bits(s->type, job->in[from * E + second]);
        b->want_out[t * E + second] = ref_bits(s->type, job->in[from * E + first]);
    }
}

static double ref_float(wp_type t, uint64_t x) {
    if (t == WP_F16) return wp_f16_to_f32((uint16_t)x);
    if (t == WP_BF16) return wp_bf16_to_f32((uint16_t)x);
    if (t == WP_F32) {
        float f;
        uint32_t u = (uint32_t)x;
        memcpy(&f, &u, 4);
        return f;
    }
    double d;
    memcpy(&d, &x, 8);
    return d;
}

#define REF_PRED(x, a, b)                                                                                              \
    switch (kind) {                                                                                                    \
    case WP_PRED_NONZERO:                                                                                              \
        return x != 0;                                                                                                 \
    case WP_PRED_GT:                                                                                                   \
        return x > a;                                                                                                  \
    case WP_PRED_GE:                                                                                                   \
        return x >= a;                                                                                                 \
    case WP_PRED_LT:                                                                                                   \
        return x < a;                                                                                                  \
    case WP_PRED_LE:                                                                                                   \
        return x <= a;                                                                                                 \
    case WP_PRED_EQ:                                                                                                   \
        return x == a;                                                                                                 \
    case WP_PRED_NE:                                                                                                   \
        return x != a;                                                                                                 \
    default:                                                                                                           \
        return a < x && x < b;                                                                                         \
    }

static bool ref_holds(wp_type t, int kind, uint64_t x, uint64_t a, uint64_t b) {
    x = ref_bits(t, x), a = ref_bits(t, a), b = ref_bits(t, b);
    if (t == WP_I32) {
        int32_t xi = (int32_t)(uint32_t)x, ai = (int32_t)(uint32_t)a, bi = (int32_t)(uint32_t)b;
        REF_PRED(xi, ai, bi)
    }
    if (t == WP_I64) {
        int64_t xi = (int64_t)x, ai = (int64_t)a, bi = (int64_t)b;
        REF_PRED(xi, ai, bi)
    }
    if (t == WP_U32 || t == WP_U64) REF_PRED(x, a, b)
    double xf = ref_float(t, x), af = ref_float(t, a), bf = ref_float(t, b);
    REF_PRED(xf, af, bf)
}

/* The participants of thread t's call in a TILED family: lanes of its tile, members, active. */
static uint32_t ref_parts(const wp_warp_job *job, uint32_t mask, int width, int t) {
    int lane = t % 32, base = t - lane, seg = ref_seg(width, lane);
    uint32_t parts = 0;
    for (int k = seg; k < seg + width; k++)
        if (ref_member(mask, k) && ref_active(job, base + k)) parts |= 1u << k;
    return parts;
}

static uint32_t ref_relative(uint32_t warp_bits, int width, int lane) {
    uint32_t rel = 0;
    int seg = ref_seg(width, lane);
    for (int k = seg; k < seg + width; k++)
        if (ref_member(warp_bits, k)) rel |= 1u << (k - seg);
    return rel;
}

static int ref_count(uint32_t m) {
    int c = 0;
    for (int k = 0; k < 32; k++) c += ref_member(m, k);
    return c;
}

static void ref_vote(const wp_spec *s, const wp_warp_job *job, bench *b) {
    const char *name = s->family->name;
    bool no_mask = !strcmp(name, "activemask");
    uint32_t mask = no_mask ? 0xffffffffu : s->mask; /* src is not written: stays -1 */
    for (int t = 0; t < job->n; t++) {
        wp_why call = ref_call(job, mask, t);
        ref_lane_why(b, job, t, call);
        if (call != WP_WHY_DEFINED) continue;
        int lane = t % 32, base = t - lane;
        uint32_t parts = ref_parts(job, mask, s->width, t), holds = 0;
        for (int k = 0; k < 32 && !no_mask; k++)
            if (ref_member(parts, k) &&
                ref_holds(s->type, job->pred_kind, job->in[(base + k) * job->elems], job->pred_a, job->pred_b))
                holds |= 1u << k;
        uint64_t *out = &b->want_out[t * job->elems];
        if (!strcmp(name, "vote_all"))
            *out = ref_count(holds) == ref_count(parts);
        else if (!strcmp(name, "vote_any"))
            *out = ref_count(holds) > 0;
        else if (!strcmp(name, "vote_uni"))
            *out = ref_count(holds) == 0 || ref_count(holds) == ref_count(parts);
        else if (!strcmp(name, "ballot"))
            *out = ref_relative(holds, s->width, lane);
        else
            *out = ref_relative(parts, s->width, lane);
    }
}

static void ref_match(const wp_spec *s, const wp_warp_job *job, bench *b) {
    bool all = !strcmp(s->family->name, "match_all");
    for (int t = 0; t < job->n; t++) {
        wp_why call = ref_call(job, s->mask, t);
        ref_lane_why(b, job, t, call);
        if (call != WP_WHY_DEFINED) continue;
        int lane = t % 32, base = t - lane;
        uint32_t parts = ref_parts(job, s->mask, s->width, t), same = 0;
        uint64_t own = ref_bits(s->type, job->in[t * job->elems]);
        for (int k = 0; k < 32; k++)
            if (ref_member(parts, k) && ref_bits(s->type, job->in[(base + k) * job->elems]) == own) same |= 1u << k;
        uint64_t *out = &b->want_out[t * job->elems];
        if (!all) {
            *out = ref_relative(same, s->width, lane);
            continue;
        }
        b->want_src[t] = same == parts;
        *out = same == parts ? ref_relative(parts, s->width, lane) : 0;
    }
}

static uint32_t ref_redux_op(wp_op_kind k, bool is_signed, uint32_t x, uint32_t y) {
    int32_t sx = (int32_t)x, sy = (int32_t)y;
    switch (k) {
    case WP_OP_SUM:
        return x + y;
    case WP_OP_MIN:
        return is_signed ? (uint32_t)(sx < sy ? sx : sy) : (x < y ? x : y);
    case WP_OP_MAX:
        return is_signed ? (uint32_t)(sx > sy ? sx : sy) : (x > y ? x : y);
    case WP_OP_AND:
        return x & y;
    case WP_OP_OR:
        return x | y;
    default:
        return x ^ y;
    }
}

static void ref_redux(const wp_spec *s, const wp_warp_job *job, bench *b) {
    for (int t = 0; t < job->n; t++) {
        wp_why call = ref_call(job, s->mask, t);
        ref_lane_why(b, job, t, call);
        if (call != WP_WHY_DEFINED) continue;
        int base = t - t % 32;
        uint32_t parts = ref_parts(job, s->mask, s->width, t), acc = 0;
        bool first = true;
        for (int k = 0; k < 32; k++) {
            if (!ref_member(parts, k)) continue;
            uint32_t x = (uint32_t)job->in[(base + k) * job->elems];
            acc = first ? x : ref_redux_op(s->op.kind, s->type == WP_I32, acc, x);
            first = false;
        }
        b->want_out[t * job->elems] = acc;
    }
}

/* The butterfly, step by step over a warp; operator arithmetic is expr.c's (the operator's
 * definition, not the emulator's). */
static void ref_allreduce_warp(const wp_spec *s, const wp_warp_job *job, bench *b, int base, int e) {
    uint64_t val[32], next_val[32];
    uint8_t why[32], next_why[32];
    for (int lane = 0; lane < 32; lane++) {
        why[lane] = (uint8_t)ref_call(job, s->mask, base + lane);
        val[lane] = why[lane] == WP_WHY_DEFINED ? ref_bits(s->type, job->in[(base + lane) * job->elems + e]) : 0;
    }
    for (int o = s->width / 2; o >= 1; o /= 2) {
        memcpy(next_val, val, sizeof val);
        memcpy(next_why, why, sizeof why);
        for (int lane = 0; lane < 32; lane++) {
            int p = lane ^ o;
            if (why[lane] != WP_WHY_DEFINED) continue;
            if (!ref_member(s->mask, p))
                next_why[lane] = WP_WHY_SRC_NOT_MEMBER;
            else if (!ref_active(job, base + p))
                next_why[lane] = WP_WHY_SRC_INACTIVE;
            else if (why[p] != WP_WHY_DEFINED)
                next_why[lane] = WP_WHY_UNDEF_OPERAND;
            else
                next_val[lane] = wp_op_apply(&s->op, s->type, val[lane], val[p]);
        }
        memcpy(val, next_val, sizeof val);
        memcpy(why, next_why, sizeof why);
    }
    for (int lane = 0; lane < 32 && base + lane < job->n; lane++) {
        int slot = (base + lane) * job->elems + e;
        b->want_why[slot] = why[lane];
        if (why[lane] == WP_WHY_DEFINED) b->want_out[slot] = val[lane];
    }
}

static void ref_allreduce(const wp_spec *s, const wp_warp_job *job, bench *b) {
    for (int base = 0; base < job->n; base += 32)
        for (int e = 0; e < job->elems; e++) ref_allreduce_warp(s, job, b, base, e);
}

typedef void (*ref_fn)(const wp_spec *s, const wp_warp_job *job, bench *b);

static const struct {
    const char *family;
    ref_fn ref;
} refs[] = {
    {"shfl", ref_shuffle},      {"shfl_up", ref_shuffle},
    {"shfl_down", ref_shuffle}, {"shfl_xor", ref_shuffle},
    {"swap", ref_swap},         {"vote_all", ref_vote},
    {"vote_any", ref_vote},     {"vote_uni", ref_vote},
    {"ballot", ref_vote},       {"activemask", ref_vote},
    {"match_any", ref_match},   {"match_all", ref_match},
    {"redux", ref_redux},       {"warp_allreduce", ref_allreduce},
};

/* ------------------------------------------------------------------------------------------------
 * The sweep */

typedef struct {
    uint64_t state;
} rng;
static uint32_t rng_next(rng *r) {
    r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->state >> 32);
}

/* Per type, bit patterns that matter: zeros of both signs, NaNs with different payloads, extremes,
 * 64-bit values that differ only in one half, the ballot constants 42 and 53. Index 4 is a NaN for
 * floats (a predicate constant too). */
#define POOL 10
static const uint64_t pools[WP_TYPE_COUNT][POOL] = {
    [WP_I32] = {0, 1, 0xffffffff, 42, 0x80000000, 0x7fffffff, 53, 7, 0xfffffff0, 43},
    [WP_U32] = {0, 1, 0xffffffff, 42, 0x80000000, 0x7fffffff, 53, 7, 0xfffffff0, 43},
    [WP_I64] = {0, 1, ~0ull, 42, 0x8000000000000000, 0x100000000, 53, 0x100000001, 0xdeadbeefcafebabe, 0xffffffff},
    [WP_U64] = {0, 1, ~0ull, 42, 0x8000000000000000, 0x100000000, 53, 0x100000001, 0xdeadbeefcafebabe, 0xffffffff},
    [WP_F32] = {0, 0x80000000, 0x3f800000, 0x42280000, 0x7fc00000, 0x7fc00001, 0xffc00000, 0x7f800000, 0x42540000,
                0xbf800000},
    [WP_F64] = {0, 0x8000000000000000, 0x3ff0000000000000, 0x4045000000000000, 0x7ff8000000000000, 0x7ff0000000000001,
                0xfff8000000000000, 0x7ff0000000000000, 0x404a800000000000, 0xbff0000000000000},
    [WP_F16] = {0, 0x8000, 0x3c00, 0x5140, 0x7e00, 0x7e01, 0xfe00, 0x7c00, 0x52a0, 0xbc00},
    [WP_BF16] = {0, 0x8000, 0x3f80, 0x4228, 0x7fc0, 0x7fc1, 0xffc0, 0x7f80, 0x4254, 0xbf80},
};

/* A scene is a job shape: lanes, which are active, how inputs are drawn. */
enum { IN_RANDOM, IN_UNIFORM };
static const struct {
    const char *name;
    int n;
    int active_pct; /* percent of lanes active (drawn); 100 = all */
    bool odd_exit;  /* odd lanes of warp 0 return early */
    int input;
} scenes[] = {
    {"n=32 all active", 32, 100, false, IN_RANDOM},
    {"n=40 some inactive", 40, 75, false, IN_RANDOM},
    {"n=64 odd lanes of warp 0 exit, uniform input", 64, 100, true, IN_UNIFORM},
    {"n=1", 1, 100, false, IN_RANDOM},
};

static const uint32_t masks[] = {0xffffffffu, 0x0000ffffu, 0x55555555u, 0x9e3779b9u};
static const int pred_pairs[][2] = {{3, 6}, {6, 3}, {4, 2}}; /* pool indices of a, b */
static const int swap_pairs[][2] = {{0, 2}, {1, 1}, {2, 0}};
static const char *const sweep_ops[] = {"sum", "prod", "min", "max", "and", "or", "xor", "a - b"};

/* How many variants a family has for a type; each variant fills op/pred/elems/first/second. */
static int variant_count(const wp_family *f) {
    if (f->flags & WP_F_OP) return (int)WP_ARRAY_LEN(sweep_ops);
    if (f->flags & WP_F_PRED) return 8 * (int)WP_ARRAY_LEN(pred_pairs);
    if (f->flags & WP_F_SWAP) return (int)WP_ARRAY_LEN(swap_pairs);
    if (f->flags & WP_F_ARRAY) return 2;
    return 1;
}

/* Returns false when the variant does not apply (an operator the family or type does not take). */
static bool variant_apply(wp_spec *s, wp_warp_job *job, int v, char *label, size_t ln) {
    const wp_family *f = s->family;
    const uint64_t *pool = pools[s->type];
    job->elems = 1;
    if (f->flags & WP_F_OP) {
        wp_err err = {0};
        wp_op op;
        if (wp_op_parse(sweep_ops[v], s->type, "op", &op, &err)) return false;
        if (!(f->ops & WP_OPBIT(op.kind))) return wp_op_free(&op), false;
        wp_op_free(&s->op);
        s->op = op;
        snprintf(label, ln, "op %s", sweep_ops[v]);
    } else if (f->flags & WP_F_PRED) {
        job->pred_kind = v % 8;
        job->pred_a = pool[pred_pairs[v / 8][0]], job->pred_b = pool[pred_pairs[v / 8][1]];
        snprintf(label, ln, "pred %d a %#llx b %#llx", job->pred_kind, (unsigned long long)job->pred_a,
                 (unsigned long long)job->pred_b);
    } else if (f->flags & WP_F_SWAP) {
        job->elems = 3, job->first = swap_pairs[v][0], job->second = swap_pairs[v][1];
        snprintf(label, ln, "first %d second %d", job->first, job->second);
    } else if (f->flags & WP_F_ARRAY) {
        job->elems = v ? 3 : 1;
        snprintf(label, ln, "elems %d", job->elems);
    } else {
        snprintf(label, ln, "-");
    }
    return true;
}

/* Per-lane argument: src_lane anywhere in int32 (negative and huge too), others in their range. */
static int32_t draw_arg(const wp_family *f, rng *r) {
    if (!f->arg) return 0;
    if (f->arg_min == INT32_MIN) {
        uint32_t pick = rng_next(r);
        return pick % 4 == 0 ? (int32_t)rng_next(r) : (int32_t)(pick % 48) - 8;
    }
    return f->arg_min + (int32_t)(rng_next(r) % (uint32_t)(f->arg_max - f->arg_min + 1));
}

static void fill_scene(const wp_family *f, wp_type type, int sc, wp_warp_job *job, bench *b, rng *r) {
    job->n = scenes[sc].n;
    uint64_t uniform = pools[type][rng_next(r) % POOL];
    for (int t = 0; t < job->n; t++) {
        b->active[t] = (int)(rng_next(r) % 100) < scenes[sc].active_pct && !(scenes[sc].odd_exit && t < 32 && t % 2);
        b->arg[t] = draw_arg(f, r);
        for (int e = 0; e < job->elems; e++)
            b->in[t * job->elems + e] = scenes[sc].input == IN_UNIFORM ? uniform : pools[type][rng_next(r) % POOL];
    }
}

static void sweep_one(wp_backend *emu, wp_spec *s, int sc, int v, bench *b, rng *r) {
    wp_warp_job job = {.in = b->in, .arg = b->arg, .active = b->active};
    char vlabel[96], label[256];
    if (!variant_apply(s, &job, v, vlabel, sizeof vlabel)) return;
    fill_scene(s->family, s->type, sc, &job, b, r);
    snprintf(label, sizeof label, "sweep %s/%s/w%d/m%#x/%s/%s", s->family->name, wp_type_name(s->type), s->width,
             s->mask, scenes[sc].name, vlabel);
    T_CASE(label);
    if (run_on_emu(emu, s, &job, b)) return;
    ref_reset(b);
    for (size_t i = 0; i < WP_ARRAY_LEN(refs); i++)
        if (!strcmp(refs[i].family, s->family->name)) refs[i].ref(s, &job, b);
    compare(label, &job, b);
}

static void sweep_family(wp_backend *emu, const wp_family *f, bench *b, rng *r) {
    for (int lw = 0; lw <= 5; lw++) {
        if (!(f->widths & (1u << lw))) continue;
        for (size_t m = 0; m < WP_ARRAY_LEN(masks); m++) {
            if ((f->flags & WP_F_NO_MASK) && masks[m] != 0xffffffffu) continue;
            for (int type = 0; type < WP_TYPE_COUNT; type++) {
                if (!(f->types & WP_TBIT(type))) continue;
                wp_spec s = {.family = f, .type = (wp_type)type, .width = 1 << lw, .mask = masks[m]};
                for (int sc = 0; sc < (int)WP_ARRAY_LEN(scenes); sc++)
                    for (int v = 0; v < variant_count(f); v++) sweep_one(emu, &s, sc, v, b, r);
                wp_op_free(&s.op);
            }
        }
    }
}

static void test_sweep(wp_backend *emu, bench *b) {
    rng r = {0x5eed};
    for (size_t i = 0; i < WP_ARRAY_LEN(refs); i++) {
        const wp_family *f = wp_family_find(refs[i].family);
        T_CASE(refs[i].family);
        CHECKF(f != NULL, "family %s is in the table", refs[i].family);
        if (f) sweep_family(emu, f, b, &r);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Named cases from emu_cases.json */

static const char *const pred_names[] = {
    [WP_PRED_NONZERO] = "nonzero", [WP_PRED_GT] = "gt", [WP_PRED_GE] = "ge", [WP_PRED_LT] = "lt",
    [WP_PRED_LE] = "le",           [WP_PRED_EQ] = "eq", [WP_PRED_NE] = "ne", [WP_PRED_BETWEEN] = "between",
};

static int why_parse(const char *s) {
    for (int w = WP_WHY_INACTIVE; w <= WP_WHY_UNDEF_OPERAND; w++)
        if (!strcmp(s, wp_why_name((wp_why)w))) return w;
    return -1;
}

/* A number is a value of the type (raw = a plain integer: masks, bools, lanes); "0x..." raw bits. */
static uint64_t value_of(wp_type t, bool raw, double d) {
    if (raw || wp_type_is_int(t)) return ref_bits(raw ? WP_U64 : t, (uint64_t)(int64_t)d);
    if (t == WP_F64) return wp_f64_bits(d);
    if (t == WP_F32) return wp_f32_bits((float)d);
    return t == WP_F16 ? wp_f32_to_f16((float)d) : wp_f32_to_bf16((float)d);
}

/* Expands a JSON list: numbers, "0x..." bits, why names (undefined), {"rep": v, "n": k},
 * {"range": [a, b], "step": s}. Returns the count, or -1 on a malformed entry or overflow. */
static int expand(const cJSON *list, wp_type t, bool raw, uint64_t *vals, uint8_t *whys, int cap) {
    int n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *rep = cJSON_GetObjectItem(item, "rep"), *range = cJSON_GetObjectItem(item, "range");
        if (rep) {
            int k = cJSON_GetObjectItem(item, "n") ? cJSON_GetObjectItem(item, "n")->valueint : 1;
            cJSON *one = cJSON_CreateArray();
            cJSON_AddItemToArray(one, cJSON_Duplicate(rep, 1));
            for (int i = 0; i < k; i++) {
                if (n >= cap || expand(one, t, raw, vals + n, whys ? whys + n : NULL, 1) != 1) {
                    cJSON_Delete(one);
                    return -1;
                }
                n++;
            }
            cJSON_Delete(one);
        } else if (range) {
            const cJSON *step = cJSON_GetObjectItem(item, "step");
            double lo = cJSON_GetArrayItem(range, 0)->valuedouble, hi = cJSON_GetArrayItem(range, 1)->valuedouble;
            for (double d = lo; d <= hi; d += step ? step->valuedouble : 1) {
                if (n >= cap) return -1;
                vals[n] = value_of(t, raw, d);
                if (whys) whys[n] = WP_WHY_DEFINED;
                n++;
            }
        } else {
            if (n >= cap) return -1;
            int why = WP_WHY_DEFINED;
            if (cJSON_IsNumber(item))
                vals[n] = value_of(t, raw, item->valuedouble);
            else if (cJSON_IsString(item) && !strncmp(item->valuestring, "0x", 2))
                vals[n] = strtoull(item->valuestring, NULL, 16);
            else if (cJSON_IsString(item) && whys && (why = why_parse(item->valuestring)) > 0)
                vals[n] = OUT_UNTOUCHED;
            else
                return -1;
            if (whys) whys[n] = (uint8_t)why;
            n++;
        }
    }
    return n;
}

static const char *str_or(const cJSON *c, const char *key, const char *dflt) {
    const cJSON *v = cJSON_GetObjectItem(c, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}
static int int_or(const cJSON *c, const char *key, int dflt) {
    const cJSON *v = cJSON_GetObjectItem(c, key);
    return cJSON_IsNumber(v) ? v->valueint : dflt;
}

static int fill_input(const cJSON *c, wp_type t, wp_warp_job *job, bench *b) {
    const cJSON *in = cJSON_GetObjectItem(c, "input");
    int slots = job->n * job->elems;
    if (cJSON_IsString(in) && !strcmp(in->valuestring, "iota")) {
        for (int i = 0; i < slots; i++) b->in[i] = value_of(t, false, i);
        return 0;
    }
    if (!in) return 0; /* NO_INPUT families */
    return expand(in, t, false, b->in, NULL, SLOTS) == slots ? 0 : -1;
}

static int fill_arg(const cJSON *c, const wp_family *f, wp_warp_job *job, bench *b) {
    const cJSON *arg = cJSON_GetObjectItem(c, "arg"), *plus = cJSON_GetObjectItem(arg, "lane_plus");
    uint64_t vals[WP_MAX_LANES];
    for (int t = 0; t < job->n; t++) b->arg[t] = f->arg_default;
    if (cJSON_IsNumber(arg))
        for (int t = 0; t < job->n; t++) b->arg[t] = arg->valueint;
    if (plus)
        for (int t = 0; t < job->n; t++) b->arg[t] = t % 32 + plus->valueint;
    if (cJSON_IsArray(arg)) {
        if (expand(arg, WP_I32, true, vals, NULL, WP_MAX_LANES) != job->n) return -1;
        for (int t = 0; t < job->n; t++) b->arg[t] = (int32_t)vals[t];
    }
    return 0;
}

static int fill_active(const cJSON *c, wp_warp_job *job, bench *b) {
    const cJSON *inactive = cJSON_GetObjectItem(c, "inactive");
    uint64_t threads[WP_MAX_LANES];
    for (int t = 0; t < job->n; t++) b->active[t] = 1;
    int k = inactive ? expand(inactive, WP_I32, true, threads, NULL, WP_MAX_LANES) : 0;
    for (int i = 0; i < k; i++)
        if (threads[i] < (uint64_t)job->n) b->active[threads[i]] = 0;
    return k < 0 ? -1 : 0;
}

/* pred: {"kind": "between", "a": 42, "b": 53}; a and b are values of the type (or "0x..." bits). */
static int fill_pred(const cJSON *c, wp_type t, wp_warp_job *job) {
    const cJSON *pred = cJSON_GetObjectItem(c, "pred");
    if (!pred) return 0;
    uint64_t *consts[] = {&job->pred_a, &job->pred_b};
    const char *keys[] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItem(pred, keys[i]);
        cJSON *one = cJSON_CreateArray();
        if (v) cJSON_AddItemToArray(one, cJSON_Duplicate(v, 1));
        int got = expand(one, t, false, consts[i], NULL, 1);
        cJSON_Delete(one);
        if (got != (v ? 1 : 0)) return -1;
    }
    const char *kind = str_or(pred, "kind", "");
    for (int k = 0; k < (int)WP_ARRAY_LEN(pred_names); k++)
        if (!strcmp(kind, pred_names[k])) return job->pred_kind = k, 0;
    return -1;
}

/* Reads the spec part of a case; the op is parsed only for families that take one. */
static int case_spec(const cJSON *c, wp_spec *s) {
    wp_err err = {0};
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(str_or(c, "family", ""));
    int type = wp_type_parse(str_or(c, "type", "i32"));
    s->width = int_or(c, "width", 32);
    s->mask = (uint32_t)strtoul(str_or(c, "mask", "0xffffffff"), NULL, 16);
    CHECKF(s->family && type >= 0, "family and type");
    if (!s->family || type < 0) return -1;
    s->type = (wp_type)type;
    if (!(s->family->flags & WP_F_OP)) return 0;
    int rc = wp_op_parse(str_or(c, "op", "sum"), s->type, "op", &s->op, &err);
    CHECKF(rc == 0, "op: %s", err.msg);
    return rc;
}

static void run_case(wp_backend *emu, const cJSON *c, bench *b) {
    const char *name = str_or(c, "name", "(unnamed)");
    T_CASE(name);
    wp_spec s;
    if (case_spec(c, &s)) return;
    wp_warp_job job = {.in = b->in,
                       .arg = b->arg,
                       .active = b->active,
                       .n = int_or(c, "n", 32),
                       .elems = int_or(c, "elems", 1),
                       .first = int_or(c, "first", 0),
                       .second = int_or(c, "second", 0)};
    bool raw = s.family->out != WP_OUT_VALUE;
    int parse_ok = !fill_input(c, s.type, &job, b) && !fill_arg(c, s.family, &job, b) && !fill_active(c, &job, b) &&
                   !fill_pred(c, s.type, &job);
    CHECKF(parse_ok, "case input, arg, inactive and pred parse");
    const cJSON *expect = cJSON_GetObjectItem(c, "expect"), *src = cJSON_GetObjectItem(expect, "src");
    ref_reset(b);
    int slots = job.n * job.elems;
    int got = expand(cJSON_GetObjectItem(expect, "out"), s.type, raw, b->want_out, b->want_why, SLOTS);
    CHECKF(got == slots, "expect.out has %d entries, want n*elems = %d", got, slots);
    uint64_t src_vals[WP_MAX_LANES];
    b->check_src = src != NULL;
    if (src) {
        CHECKF(expand(src, WP_I32, true, src_vals, NULL, WP_MAX_LANES) == job.n, "expect.src has n entries");
        for (int t = 0; t < job.n; t++) b->want_src[t] = (int32_t)src_vals[t];
    }
    if (parse_ok && got == slots && !run_on_emu(emu, &s, &job, b)) compare(name, &job, b);
    wp_op_free(&s.op);
}

static char *cases_path(void) {
    static const char *const tries[] = {"tests/unit/emu_cases.json", "emu_cases.json"};
    for (size_t i = 0; i < WP_ARRAY_LEN(tries); i++) {
        char *text = wp_read_file(tries[i], NULL);
        if (text) return text;
    }
    return NULL;
}

static void test_named(wp_backend *emu, bench *b) {
    T_CASE("emu_cases.json");
    char *text = cases_path();
    CHECKF(text != NULL, "tests/unit/emu_cases.json readable (run from the repository root)");
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases"), *c;
    CHECKF(cJSON_GetArraySize(cases) > 0, "emu_cases.json has cases");
    cJSON_ArrayForEach(c, cases) run_case(emu, c, b);
    cJSON_Delete(root);
}

/* ------------------------------------------------------------------------------------------------
 * The table and the backend */

static void test_table(void) {
    int count = 0;
    const wp_family *const *list = wp_family_list(&count);
    T_CASE("family table");
    CHECK(count >= (int)WP_ARRAY_LEN(refs));
    for (int i = 0; i < count; i++) {
        const wp_family *f = list[i];
        /* Emulator-only rows (ds_permute, ds_bpermute) have no template. */
        CHECKF(f->name && f->doc && *f->doc && (!(f->backends & WP_BACKEND_CUDA) || (f->template_file && f->kernel)),
               "row %d complete", i);
        CHECKF(wp_family_find(f->name) == f, "%s found by name", f->name);
        /* Data-parallel rows (kernels/data.h) run through data_emulate and a plan instead. */
        bool emulates = (f->flags & WP_F_DATA) ? f->data_emulate && f->plan : f->emulate != NULL;
        CHECKF(f->types && f->widths && (f->backends & WP_BACKEND_EMU ? emulates : 1), "%s", f->name);
        CHECKF(!(f->flags & WP_F_OP) == !f->ops, "%s: ops iff OP", f->name);
        CHECKF(f->arg_min <= f->arg_default && f->arg_default <= f->arg_max, "%s: default in range", f->name);
    }
    CHECK(wp_family_find("nope") == NULL && wp_family_find(NULL) == NULL);
    const wp_family *redux = wp_family_find("redux"), *match = wp_family_find("match_any");
    CHECK(redux && redux->min_sm == 80 && redux->types == WP_T_32 && !(redux->ops & WP_OPBIT(WP_OP_PROD)) &&
          !(redux->ops & WP_OPBIT(WP_OP_EXPR)));
    CHECK(match && match->min_sm == 70 && !(match->types & WP_TBIT(WP_F16)) && (match->types & WP_TBIT(WP_F64)));
    const wp_family *act = wp_family_find("activemask"), *shfl = wp_family_find("shfl");
    CHECK(act && act->types == WP_TBIT(WP_U32) && (act->flags & WP_F_NO_INPUT) && (act->flags & WP_F_NO_MASK));
    CHECK(shfl && !strcmp(shfl->arg, "src_lane") && shfl->arg_min == INT32_MIN && shfl->arg_default == 0);
    CHECK(!strcmp(wp_why_name(WP_WHY_SRC_NOT_MEMBER), "src_not_member") &&
          !strcmp(wp_why_name(WP_WHY_UNDEF_OPERAND), "undef_operand") && !strcmp(wp_why_name(99), "unknown"));
}

static void test_backend(wp_backend *emu) {
    T_CASE("emu backend");
    wp_device_info info;
    void *fn = (void *)1;
    wp_err err = {0};
    CHECK(!strcmp(wp_backend_name(emu), "emu"));
    wp_backend_info(emu, &info);
    CHECK(!strcmp(info.backend, "emu") && !strcmp(info.name, "CPU emulator") && info.sms >= 1 && info.sm == 0);
    CHECK(wp_backend_load(emu, NULL, &fn, &err) == 0 && fn == NULL);
    wp_backend_unload(emu, NULL);
    wp_family no_emu = {.name = "gpu_only", .backends = WP_BACKEND_CUDA};
    wp_spec s = {.family = &no_emu};
    wp_warp_job job = {0};
    wp_warp_result res = {0};
    CHECK(wp_backend_run_warp(emu, NULL, &s, &job, &res, NULL, &err) == -1 && err.status == 400);
}

int main(void) {
    wp_backend *emu = wp_backend_emu_open();
    bench *b = calloc(1, sizeof *b);
    CHECK(emu && b);
    if (emu && b) {
        test_table();
        test_backend(emu);
        test_named(emu, b);
        test_sweep(emu, b);
    }
    free(b);
    wp_backend_close(emu);
    return t_done("emu");
}
