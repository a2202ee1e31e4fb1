/* api_warp_lanes.c — the lane lists of a POST /v1/warp answer (api_warp.c), written straight into the
 * answer's text: output, defined, undefined_reason, source_lane, pred, lane_pred and input. */
#include <string.h>

#include "api_warp_impl.h"
#include "jsonval.h"
#include "kernels/lanes.h"

static bool is_shuffle(const wp_family *f) { return f->arg != NULL; }

/* The lane lists of a warp answer, written straight into the answer's text (jsonout.h), one list after
 * another, each entry through a pointer into room taken once a list: a 32-lane answer is ~200 values,
 * which as cJSON nodes, or as a buffer and a bounds check a piece, cost most of the request's CPU. The
 * bytes are what cJSON printed for the same nodes. */
#define LANE_VALUE_ROOM (WP_JSON_VALUE_MAX + 1) /* a value's text and the comma or bracket after it */
#define LIT(s) s, sizeof s - 1

/* A list's room at most (every entry of the widest text). */
size_t warp_lanes_room(const warp_input *w) { return (size_t)w->n * ((size_t)w->elems * LANE_VALUE_ROOM + 2) + 2; }

static char *put_lit(char *d, const char *s, size_t n) {
    memcpy(d, s, n);
    return d + n;
}
/* true, false, or null (v < 0) */
static char *put_tri(char *d, int v) {
    return v < 0 ? put_lit(d, LIT("null")) : v ? put_lit(d, LIT("true")) : put_lit(d, LIT("false"));
}
/* "0x%08x" with the quotes */
char *warp_put_mask(char *d, uint32_t m) {
    static const char hex[] = "0123456789abcdef";
    d = put_lit(d, LIT("\"0x"));
    for (int i = 7; i >= 0; i--) *d++ = hex[(m >> (4 * i)) & 15];
    *d++ = '"';
    return d;
}

/* 0..99 as its digits (lane indexes, iota inputs: most of a warp answer's integers); else NULL. */
static char *put_small(char *d, uint32_t u) {
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    if (u >= 100) return NULL;
    if (u < 10) {
        *d = (char)('0' + u);
        return d + 1;
    }
    memcpy(d, pairs + 2 * u, 2);
    return d + 2;
}

/* A value as the family gives it (as_input: as the type's value, whatever the family's output is). */
static char *lane_value(char *d, const wp_spec *s, uint64_t bits, bool as_input) {
    const wp_out_kind out = as_input ? WP_OUT_VALUE : s->family->out;
    if (out == WP_OUT_BOOL) return put_tri(d, bits != 0);
    if (out == WP_OUT_MASK || out == WP_OUT_MASK_PRED) return warp_put_mask(d, (uint32_t)bits);
    char *e = s->type == WP_I32 || s->type == WP_U32 ? put_small(d, (uint32_t)bits) : NULL;
    return e ? e : d + wp_json_value_text(s->type, bits, d);
}

/* A lane's values: one value, or a list of them when the family gives several per lane. */
static char *lane_values(char *d, int elems, const uint64_t *bits, const uint8_t *why, const wp_spec *s,
                         bool as_input) {
    if (elems > 1) *d++ = '[';
    for (int e = 0; e < elems; e++) {
        if (e) *d++ = ',';
        d = !why || why[e] == WP_WHY_DEFINED ? lane_value(d, s, bits[e], as_input) : put_tri(d, -1);
    }
    if (elems > 1) *d++ = ']';
    return d;
}

/* Whether each of a lane's elems values is defined (all), any is, and the first reason one is not. */
typedef struct {
    bool all, any;
    uint8_t why;
} lane_defined;
static lane_defined lane_defined_of(const uint8_t *why, int elems) {
    lane_defined d = {.all = true, .any = false, .why = WP_WHY_DEFINED};
    for (int e = 0; e < elems; e++) {
        const bool ok = why[e] == WP_WHY_DEFINED;
        d.any |= ok;
        if (!ok && d.all) d.why = why[e], d.all = false;
    }
    return d;
}

/* What a list's entries are made of: the request, its runs, and each lane's defined summary. */
typedef struct {
    const wp_spec *s;
    const warp_input *w;
    const warp_output *val, *emu;
    const lane_defined *ld; /* w->n of them */
    int elems;              /* values an output entry holds */
    bool all_defined;       /* every lane's every value: defined and undefined_reason are runs */
} lane_ctx;

/* A lane's undefined_reason: null when defined (a reason's name is a short identifier: no escapes). */
static char *put_why(char *d, lane_defined ld) {
    if (ld.all) return put_tri(d, -1);
    const char *name = wp_why_name((wp_why)ld.why);
    *d++ = '"';
    d = put_lit(d, name, strlen(name));
    *d++ = '"';
    return d;
}

/* Lane i's source_lane: src[] counts lanes within the warp (within the wave for WP_F_WAVE families). */
static char *put_src(char *d, int i, const lane_ctx *c) {
    const int group = (c->s->family->flags & WP_F_WAVE) ? c->s->width : WP_WARP_SIZE;
    const int base = i & ~(group - 1), j = c->val->src[i];
    if (!c->ld[i].any || j == WP_SRC_NONE) return put_tri(d, -1);
    const int lane = j < 0 ? i : base + j;
    char *e = put_small(d, (uint32_t)lane); /* a negative lane is no small one */
    return e ? e : d + wp_json_fmt_i64(d, lane);
}

/* Lane i's own predicate, as the vote saw it (inactive lanes: null). */
static char *put_lane_pred(char *d, int i, const lane_ctx *c) {
    const warp_input *w = c->w;
    if (!w->active[i]) return put_tri(d, -1);
    return put_tri(
        d, wp_lanes_pred(c->s->type, w->job.pred_kind, w->in[(size_t)i * w->elems], w->job.pred_a, w->job.pred_b));
}

/* The output list (or, as_input, the input list), lane by lane, at d; returns its end. A defined 32-bit
 * integer 0..99 (most of them) goes straight to put_small; anything else through lane_values. */
static char *put_value_list(char *d, const lane_ctx *c, bool as_input) {
    const warp_input *w = c->w;
    const int elems = as_input ? w->elems : c->elems, we = w->elems;
    const uint64_t *bits = as_input ? w->in : c->val->out;
    const uint8_t *why = as_input ? NULL : c->emu->why;
    const wp_out_kind out = as_input ? WP_OUT_VALUE : c->s->family->out;
    const bool small = elems == 1 && out == WP_OUT_VALUE && (c->s->type == WP_I32 || c->s->type == WP_U32);
    for (int i = 0; i < w->n; i++) {
        if (i) *d++ = ',';
        const size_t k0 = (size_t)i * we;
        char *e = small && (!why || why[k0] == WP_WHY_DEFINED) ? put_small(d, (uint32_t)bits[k0]) : NULL;
        d = e ? e : lane_values(d, elems, &bits[k0], why ? &why[k0] : NULL, c->s, as_input);
    }
    return d;
}

/* n entries of a 5-byte word ("true" or "null") and their commas, at d, copied from a run of 32. */
static char *put_run(char *d, const char *run32, int n) {
    if (n < 1) return d;
    for (; n > 32; n -= 32) d = put_lit(d, run32, 32 * 5);
    return put_lit(d, run32, (size_t)n * 5 - 1);
}
#define RUN8(w) w "," w "," w "," w "," w "," w "," w "," w ","
#define RUN32(w) RUN8(w) RUN8(w) RUN8(w) RUN8(w)

/* List k's entries, lane by lane, at d; returns their end. A loop a list: the list's kind is decided
 * once, not once an entry. */
static char *put_entries(char *d, int k, const lane_ctx *c) {
    if (k == WARP_L_OUTPUT || k == WARP_L_INPUT) return put_value_list(d, c, k == WARP_L_INPUT);
    if (c->all_defined && (k == WARP_L_DEFINED || k == WARP_L_WHY))
        return put_run(d, k == WARP_L_DEFINED ? RUN32("true") : RUN32("null"), c->w->n);
    for (int i = 0; i < c->w->n; i++) {
        if (i) *d++ = ',';
        switch (k) {
        case WARP_L_DEFINED:
            d = put_tri(d, c->ld[i].all);
            break;
        case WARP_L_WHY:
            d = put_why(d, c->ld[i]);
            break;
        case WARP_L_SOURCE:
            d = put_src(d, i, c);
            break;
        case WARP_L_PRED:
            d = put_tri(d, !c->ld[i].all ? -1 : c->val->src[i] != 0);
            break;
        default: /* WARP_L_LANE_PRED */
            d = put_lane_pred(d, i, c);
            break;
        }
    }
    return d;
}

void warp_lanes_put(wp_jtext *o, const wp_spec *s, const warp_input *w, const warp_output *val, const warp_output *emu,
                    int from, int to) {
#define NAME(k)                                                                                                        \
    { WP_JKEY(k) }
    static const struct {
        const char *q;
        size_t n;
    } names[WARP_L_LISTS] = {NAME("output"),      NAME("defined"), NAME("undefined_reason"),
                             NAME("source_lane"), NAME("pred"),    NAME("lane_pred"),
                             NAME("input")};
#undef NAME
    const bool want[WARP_L_LISTS] = {true, true, true, is_shuffle(s->family), s->family->out == WP_OUT_MASK_PRED,
                                     (s->family->flags & WP_F_PRED) != 0,
                                     /* the input as the kernel saw it (after generation and rounding), for diagrams */
                                     !(s->family->flags & WP_F_NO_INPUT)};
    const int elems = s->family->out == WP_OUT_VALUE ? w->elems : 1;
    lane_defined ld[WP_MAX_LANES];
    bool all = true;
    const bool by_lane = from < WARP_L_LANE_PRED && to > WARP_L_DEFINED; /* defined to pred read ld */
    for (int i = 0; by_lane && i < w->n; i++) {
        ld[i] = lane_defined_of(&emu->why[(size_t)i * w->elems], elems);
        all &= ld[i].all;
    }
    const lane_ctx c = {.s = s, .w = w, .val = val, .emu = emu, .ld = ld, .elems = elems, .all_defined = all};
    const size_t room = warp_lanes_room(w);
    for (int k = from; k < to && k < WARP_L_LISTS; k++) {
        if (!want[k]) continue;
        wp_jtext_qkey(o, names[k].q, names[k].n);
        char *const d0 = wp_jtext_room(o, room), *d = d0;
        if (!d0) return; /* remembered: the answer fails */
        *d++ = '[';
        d = put_entries(d, k, &c);
        *d++ = ']';
        o->n += (size_t)(d - d0);
    }
}
