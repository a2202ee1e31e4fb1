/* test_permute.c — AMD's ds_permute / ds_bpermute families (kernels/permute.c) against
 * docs/semantics.md, as two tables run by one loop:
 *  - the ISA manual's own four-lane examples, literal (addresses, EXEC, expected registers);
 *  - patterns over whole waves of 32 and 64 (rotate by one both ways, wrap-around, collisions,
 *    inactive writers and readers, partial waves, several waves), each lane's expected source
 *    written as a formula.
 * Plus the rows: emulator only, no template, widths 32 and 64, no member mask, and what the spec
 * accepts. Every lane's out, why and src is compared. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/family.h"
#include "kernels/lanes.h"
#include "kernels/spec.h"
#include "kernels/types.h"
#include "t.h"

#define MAX_N 256
#define OFF (-3)         /* expected: inactive (EXEC off), nothing written */
#define NONE WP_SRC_NONE /* expected: defined, 0, no source lane */
#define UNTOUCHED 0x5e5e5eull

static uint64_t in_value(int t) { return 1000u + (unsigned)t; } /* distinct per thread */

/* ---- the ISA manual's examples (RDNA/CDNA "simplified 4-thread wavefronts") ---------------------
 * SRC = {A, B, C, D} = {1000..1003}, ADDR = {0, 0, 12, 4}. Expected: the thread whose value lands in
 * each lane. ds_permute, EXEC 0xF: {B, D, 0, C}; EXEC 0xA: {-, D, -, 0}. ds_bpermute, EXEC 0xF:
 * {A, A, D, B}; EXEC 0xA: {-, 0, -, B}. */
typedef struct {
    const char *name, *family;
    int wave;
    unsigned exec; /* bit per lane */
    int want[4];
} isa_case;

static const isa_case isa_cases[] = {
    {"isa permute exec 0xf", "ds_permute", 64, 0xf, {1, 3, NONE, 2}},
    {"isa permute exec 0xa", "ds_permute", 64, 0xa, {OFF, 3, OFF, NONE}},
    {"isa bpermute exec 0xf", "ds_bpermute", 64, 0xf, {0, 0, 3, 1}},
    {"isa bpermute exec 0xa", "ds_bpermute", 64, 0xa, {OFF, NONE, OFF, 1}},
    {"isa permute exec 0xf, wave 32", "ds_permute", 32, 0xf, {1, 3, NONE, 2}},
    {"isa bpermute exec 0xf, wave 32", "ds_bpermute", 32, 0xf, {0, 0, 3, 1}},
};
static const int32_t isa_addr[4] = {0, 0, 12, 4};

/* ---- patterns ------------------------------------------------------------------------------------
 * addr(lane, wave): the byte address of a lane (lane within its wave). active(t): NULL = all.
 * want(t, wave, n): the thread whose value thread t gets, NONE or OFF. */
typedef struct {
    const char *name, *family;
    int wave, n;
    int32_t (*addr)(int lane, int wave);
    bool (*active)(int t);
    int (*want)(int t, int wave, int n);
} pattern_case;

static int wave_base(int t, int wave) { return t - t % wave; }

static int32_t next_lane(int l, int w) {
    (void)w;
    return (l + 1) * 4;
} /* lane w-1 says w*4: wraps to 0 */
static int32_t far_next(int l, int w) { return (l + 1) * 4 + 7 * w * 4 + 3; } /* high and low bits ignored */
static int32_t prev_lane_neg(int l, int w) {
    (void)w;
    return (l - 1) * 4;
} /* lane 0 says -4: the last lane */
static int32_t all_to_5(int l, int w) {
    (void)l, (void)w;
    return 5 * 4;
}
static int32_t half(int l, int w) {
    (void)w;
    return l / 2 * 4;
} /* lanes 2k and 2k+1 aim at lane k */
static int32_t lane_33(int l, int w) {
    (void)l, (void)w;
    return 33 * 4;
} /* lane 1 of a wave32, 33 of a wave64 */
static int32_t reverse(int l, int w) { return (w - 1 - l) * 4; }

static bool odd_off(int t) { return t % 2 == 0; }
static bool last_off(int t) { return t % 64 != 63 && t % 32 != 31; }
static bool lane5_off(int t) { return t % 32 != 5; }

/* Rotate by one. Forward (push to lane+1): lane l gets lane l-1. Backward (pull from lane+1): l+1. */
static int from_prev(int t, int w, int n) {
    int b = wave_base(t, w), l = t - b, last = (n - b < w ? n - b : w) - 1;
    if (l == 0) return last == w - 1 ? b + w - 1 : NONE; /* a partial wave's last lane never writes lane 0 */
    return t - 1;
}
static int from_next(int t, int w, int n) {
    int b = wave_base(t, w), l = t - b, j = (l + 1) % w;
    return b + j < n ? b + j : NONE; /* a lane past n is not in the wave: reading it gives 0 */
}
static int push_all_to_5(int t, int w, int n) {
    int b = wave_base(t, w), top = (n - b < w ? n - b : w) - 1;
    return t - b == 5 ? b + top : NONE; /* the highest lane wins; everyone else gets nothing */
}
static int push_all_to_5_top_off(int t, int w, int n) {
    (void)n;
    int b = wave_base(t, w);
    if (t % 64 == 63 || t % 32 == 31) return OFF;
    return t - b == 5 ? b + w - 2 : NONE; /* the top lane is inactive: the one below it wins */
}
static int pull_all_from_5(int t, int w, int n) {
    (void)n;
    return wave_base(t, w) + 5;
}
static int pull_from_inactive_5(int t, int w, int n) {
    (void)n;
    return t % 32 == 5 ? OFF : t - wave_base(t, w) == 5 ? OFF : NONE;
}
static int push_half(int t, int w, int n) {
    (void)n;
    int b = wave_base(t, w), l = t - b;
    return l < w / 2 ? b + 2 * l + 1 : NONE; /* lane k gets 2k+1 (the higher of 2k, 2k+1) */
}
static int push_half_odd_off(int t, int w, int n) {
    (void)n;
    int b = wave_base(t, w), l = t - b;
    if (t % 2) return OFF;
    return l < w / 2 ? b + 2 * l : NONE; /* odd lanes are off: only 2k writes lane k */
}
static int from_33(int t, int w, int n) {
    (void)n;
    return wave_base(t, w) + 33 % w;
}
static int reversed(int t, int w, int n) {
    (void)n;
    int b = wave_base(t, w);
    return b + w - 1 - (t - b);
}

static const pattern_case pattern_cases[] = {
    {"rotate by one, forward, wave 32", "ds_permute", 32, 32, next_lane, NULL, from_prev},
    {"rotate by one, forward, wave 64", "ds_permute", 64, 64, next_lane, NULL, from_prev},
    {"rotate by one, backward, wave 32", "ds_bpermute", 32, 32, next_lane, NULL, from_next},
    {"rotate by one, backward, wave 64", "ds_bpermute", 64, 64, next_lane, NULL, from_next},
    {"rotate, high and low address bits ignored, wave 64", "ds_bpermute", 64, 64, far_next, NULL, from_next},
    {"rotate, high and low address bits ignored, wave 32", "ds_permute", 32, 64, far_next, NULL, from_prev},
    {"negative address wraps to the last lane", "ds_permute", 64, 64, prev_lane_neg, NULL, from_next},
    {"collision: the highest lane wins, wave 32", "ds_permute", 32, 32, all_to_5, NULL, push_all_to_5},
    {"collision: the highest lane wins, wave 64", "ds_permute", 64, 64, all_to_5, NULL, push_all_to_5},
    {"collision: an inactive top lane does not write", "ds_permute", 64, 128, all_to_5, last_off,
     push_all_to_5_top_off},
    {"pairs collide: lane k gets 2k+1, the upper half 0", "ds_permute", 64, 64, half, NULL, push_half},
    {"pairs, odd lanes inactive: lane k gets 2k", "ds_permute", 32, 64, half, odd_off, push_half_odd_off},
    {"broadcast by pull, wave 64", "ds_bpermute", 64, 128, all_to_5, NULL, pull_all_from_5},
    {"pull from an inactive lane gives 0", "ds_bpermute", 32, 96, all_to_5, lane5_off, pull_from_inactive_5},
    {"addr 132: lane 1 of a wave32", "ds_bpermute", 32, 64, lane_33, NULL, from_33},
    {"addr 132: lane 33 of a wave64", "ds_bpermute", 64, 64, lane_33, NULL, from_33},
    {"reverse by push equals reverse by pull", "ds_permute", 64, 64, reverse, NULL, reversed},
    {"reverse by pull", "ds_bpermute", 64, 64, reverse, NULL, reversed},
    {"partial wave (n = 40): lane 0 gets nothing by push", "ds_permute", 64, 40, next_lane, NULL, from_prev},
    {"partial wave (n = 40): lane 39 reads a missing lane", "ds_bpermute", 64, 40, next_lane, NULL, from_next},
    {"three waves of 64, the last partial", "ds_permute", 64, 150, next_lane, NULL, from_prev},
    {"eight waves of 32", "ds_bpermute", 32, 256, next_lane, NULL, from_next},
};

/* ---- running ------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t in[MAX_N], out[MAX_N];
    int32_t arg[MAX_N], src[MAX_N];
    uint8_t active[MAX_N], why[MAX_N];
} bench;

static void run(wp_backend *emu, const char *label, const char *family, wp_type type, int wave, int n, bench *b,
                const int *want) {
    T_CASE(label);
    const wp_family *f = wp_family_find(family);
    CHECKF(f != NULL, "%s in the table", family);
    if (!f) return;
    wp_spec s = {.family = f, .type = type, .width = wave, .mask = 0xffffffffu};
    wp_err err = {0};
    CHECKF(wp_spec_validate(&s, &err) == 0, "%s: spec: %s", label, err.msg);
    for (int t = 0; t < n; t++) b->out[t] = UNTOUCHED, b->why[t] = 0xff, b->src[t] = -1;
    wp_warp_job job = {.n = n, .elems = 1, .in = b->in, .arg = b->arg, .active = b->active};
    wp_warp_result res = {b->out, b->src, b->why};
    CHECKF(wp_backend_run_warp(emu, NULL, &s, &job, &res, NULL, &err) == 0, "%s: run: %s", label, err.msg);
    for (int t = 0; t < n; t++) {
        int w = want[t];
        uint64_t want_out = w == OFF ? UNTOUCHED : w == NONE ? 0 : wp_lanes_bits(type, b->in[w]);
        uint8_t want_why = w == OFF ? WP_WHY_INACTIVE : WP_WHY_DEFINED;
        int32_t want_src = w == OFF ? -1 : w == NONE ? NONE : w % wave; /* src counts within the wave */
        if (b->out[t] != want_out || b->why[t] != want_why || b->src[t] != want_src) {
            CHECKF(0, "%s: thread %d: got %#llx why %d src %d, want %#llx why %d src %d", label, t,
                   (unsigned long long)b->out[t], b->why[t], b->src[t], (unsigned long long)want_out, want_why,
                   want_src);
            return;
        }
    }
    CHECK(1);
}

static void test_isa(wp_backend *emu, bench *b) {
    for (size_t i = 0; i < WP_ARRAY_LEN(isa_cases); i++) {
        const isa_case *c = &isa_cases[i];
        for (int t = 0; t < 4; t++) b->in[t] = in_value(t), b->arg[t] = isa_addr[t], b->active[t] = (c->exec >> t) & 1;
        run(emu, c->name, c->family, WP_U32, c->wave, 4, b, c->want);
    }
}

static void test_patterns(wp_backend *emu, bench *b) {
    int want[MAX_N];
    for (size_t i = 0; i < WP_ARRAY_LEN(pattern_cases); i++) {
        const pattern_case *c = &pattern_cases[i];
        for (int t = 0; t < c->n; t++) {
            b->in[t] = in_value(t);
            b->arg[t] = c->addr(t % c->wave, c->wave);
            b->active[t] = c->active ? c->active(t) : 1;
            want[t] = c->want(t, c->wave, c->n);
        }
        run(emu, c->name, c->family, WP_I32, c->wave, c->n, b, want);
    }
}

/* Bits move unchanged: an f32 NaN with a payload, a negative i32. */
static void test_bits(wp_backend *emu, bench *b) {
    int want[4] = {1, 2, 3, 0};
    uint64_t vals[4] = {0x7fc00001u, 0xffffffffu, 0x80000000u, 0x3f800000u};
    for (int t = 0; t < 4; t++) b->in[t] = vals[t], b->arg[t] = ((t + 1) % 4) * 4, b->active[t] = 1;
    run(emu, "f32 bits move unchanged", "ds_bpermute", WP_F32, 32, 4, b, want);
    /* The slot's bits above the type are not moved (what a 32-bit register holds). */
    b->in[1] = 0xabcd00000000002aull;
    run(emu, "bits above 32 are dropped", "ds_bpermute", WP_I32, 32, 4, b, want);
    CHECK(b->out[0] == 0x2a);
}

static void test_rows(void) {
    T_CASE("rows");
    static const char *const names[] = {"ds_permute", "ds_bpermute"};
    for (size_t i = 0; i < WP_ARRAY_LEN(names); i++) {
        const wp_family *f = wp_family_find(names[i]);
        CHECK(f != NULL);
        if (!f) continue;
        CHECKF(f->backends == WP_BACKEND_EMU && !f->template_file && !f->kernel && f->emulate, "%s", f->name);
        CHECKF(f->widths == (WP_W_32 | WP_W_64) && (f->flags & WP_F_WAVE) && (f->flags & WP_F_NO_MASK), "%s", f->name);
        CHECKF(f->arg && !strcmp(f->arg, "addr") && f->arg_min == INT32_MIN && f->arg_max == INT32_MAX, "%s", f->name);
        CHECKF(f->types == (WP_TBIT(WP_I32) | WP_TBIT(WP_U32) | WP_TBIT(WP_F32)), "%s: 32-bit types", f->name);
        /* what the spec accepts: widths 32 and 64, nothing else; no member mask */
        static const struct {
            const char *json;
            const char *code; /* NULL: valid */
        } specs[] = {
            {"{\"width\":64}", NULL},
            {"{\"width\":32,\"type\":\"f32\"}", NULL},
            {"{}", NULL},
            {"{\"width\":16}", "bad_width"},
            {"{\"width\":128}", "bad_width"},
            {"{\"mask\":\"0x0000ffff\"}", "bad_mask"},
            {"{\"type\":\"f64\"}", "type_not_allowed"},
        };
        for (size_t k = 0; k < WP_ARRAY_LEN(specs); k++) {
            cJSON *j = cJSON_Parse(specs[k].json);
            cJSON_AddStringToObject(j, "family", names[i]);
            wp_spec s;
            wp_err err = {0};
            int rc = wp_spec_from_json(j, "sm_90", &s, &err);
            if (specs[k].code)
                CHECKF(rc != 0 && !strcmp(err.code, specs[k].code), "%s %s: %s", names[i], specs[k].json,
                       err.code ? err.code : "accepted");
            else
                CHECKF(rc == 0, "%s %s: %s", names[i], specs[k].json, err.msg);
            if (rc == 0) wp_spec_free(&s);
            cJSON_Delete(j);
        }
    }
    /* Width 64 stays refused for the CUDA families. */
    cJSON *j = cJSON_Parse("{\"family\":\"shfl\",\"width\":64}");
    wp_spec s;
    wp_err err = {0};
    CHECK(wp_spec_from_json(j, "sm_90", &s, &err) != 0 && !strcmp(err.code, "bad_width"));
    cJSON_Delete(j);
}

int main(void) {
    wp_backend *emu = wp_backend_emu_open();
    bench *b = calloc(1, sizeof *b);
    CHECK(emu && b);
    if (emu && b) {
        test_rows();
        test_isa(emu, b);
        test_patterns(emu, b);
        test_bits(emu, b);
    }
    free(b);
    wp_backend_close(emu);
    return t_done("permute");
}
