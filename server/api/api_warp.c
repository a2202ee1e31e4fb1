/* api_warp.c — POST /v1/warp: run one warp primitive over 1..1024 lanes and report, per lane, the
 * output, where it came from and whether CUDA defines it, plus backend, cache key and timings.
 * The emulator always runs too: it is what says which lanes are defined. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_warp_impl.h"
#include "jsonval.h"
#include "kernels/lanes.h"
#include "util/json.h"
#include "util/jsonout.h"

static void input_free(warp_input *w) {
    free(w->in);
    free(w->arg);
    free(w->active);
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static int parse_generated(const cJSON *g, wp_type t, bool array_ok, warp_input *w, wp_err *err) {
    static const char *const keys[] = {"iota", "random", "seed", "elems", NULL};
    if (wp_json_only(g, "input.", keys, err)) return -1;
    const cJSON *iota = wp_json_get(g, "iota");
    const cJSON *rnd = wp_json_get(g, "random");
    if (!!iota == !!rnd)
        return WP_FAIL(err, 400, "bad_input", "input",
                       "input must be a list, {\"iota\":N} or {\"random\":N,\"seed\":S}");
    long long n, elems = 1, seed = 1;
    if (wp_json_int(iota ? iota : rnd, iota ? "input.iota" : "input.random", 1, WP_MAX_LANES, &n, err)) return -1;
    const cJSON *e = wp_json_get(g, "elems");
    if (e && wp_json_int(e, "input.elems", 1, array_ok ? WP_MAX_ELEMS : 1, &elems, err)) return -1;
    const cJSON *s = wp_json_get(g, "seed");
    if (s && wp_json_int(s, "input.seed", 0, 9007199254740991LL, &seed, err)) return -1;
    w->n = (int)n, w->elems = (int)elems;
    w->in = calloc((size_t)(n * elems), sizeof *w->in);
    if (!w->in) return WP_FAIL(err, 500, "no_memory", "input", "out of memory");
    uint64_t state = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    const bool int_iota = iota && wp_type_is_int(t); /* i itself: a lane count is far below any int's range */
    for (long long i = 0; i < n * elems; i++) {
        double v =
            iota ? (double)i
                 : (wp_type_is_int(t) ? (double)(xorshift(&state) % 100) : (double)(xorshift(&state) % 400) / 4.0);
        w->in[i] = int_iota ? (uint64_t)i : wp_value_from_double(t, v);
    }
    return 0;
}

static int parse_list(const cJSON *list, wp_type t, bool array_ok, warp_input *w, wp_err *err) {
    int n = cJSON_GetArraySize(list);
    if (n < 1 || n > WP_MAX_LANES)
        return WP_FAIL(err, 400, "bad_input", "input", "input has %d lanes; 1..%d allowed", n, WP_MAX_LANES);
    const cJSON *first = cJSON_GetArrayItem(list, 0);
    int elems = cJSON_IsArray(first) ? cJSON_GetArraySize(first) : 1;
    if (cJSON_IsArray(first) && !array_ok)
        return WP_FAIL(err, 400, "bad_input", "input[0]", "this family takes one value per lane, not arrays");
    if (elems < 1 || elems > WP_MAX_ELEMS)
        return WP_FAIL(err, 400, "bad_input", "input[0]", "a lane's array has %d elements; 1..%d allowed", elems,
                       WP_MAX_ELEMS);
    w->n = n, w->elems = elems;
    w->in = calloc((size_t)n * (size_t)elems, sizeof *w->in);
    if (!w->in) return WP_FAIL(err, 500, "no_memory", "input", "out of memory");
    int i = 0;
    for (const cJSON *lane = list->child; lane; lane = lane->next, i++) {
        char field[48];
        snprintf(field, sizeof field, "input[%d]", i);
        if (cJSON_IsArray(lane) != cJSON_IsArray(first) || (cJSON_IsArray(lane) && cJSON_GetArraySize(lane) != elems))
            return WP_FAIL(err, 400, "bad_input", field, "every lane must hold the same shape (%d element%s)", elems,
                           elems > 1 ? "s" : "");
        if (!cJSON_IsArray(lane)) {
            if (wp_json_to_bits(lane, t, field, &w->in[i], err)) return -1;
            continue;
        }
        int e = 0;
        for (const cJSON *v = lane->child; v; v = v->next, e++) {
            char f2[64];
            snprintf(f2, sizeof f2, "input[%d][%d]", i, e);
            if (wp_json_to_bits(v, t, f2, &w->in[(size_t)i * elems + e], err)) return -1;
        }
    }
    return 0;
}

static int parse_active(const cJSON *a, warp_input *w, wp_err *err) {
    w->active = malloc((size_t)w->n);
    if (!w->active) return WP_FAIL(err, 500, "no_memory", "active", "out of memory");
    memset(w->active, 1, (size_t)w->n);
    if (!a) return 0;
    if (cJSON_IsString(a)) { /* a lane mask, applied to every warp */
        uint32_t m;
        if (wp_mask_from_json(a, "active", &m, err)) return -1;
        for (int i = 0; i < w->n; i++) w->active[i] = (m >> (i % 32)) & 1;
        return 0;
    }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != w->n)
        return WP_FAIL(err, 400, "bad_active", "active",
                       "active must be a list of %d booleans (one per lane) or a hex lane mask", w->n);
    int i = 0;
    for (const cJSON *v = a->child; v; v = v->next, i++) {
        if (cJSON_IsBool(v))
            w->active[i] = cJSON_IsTrue(v);
        else if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1))
            w->active[i] = v->valuedouble != 0;
        else {
            char field[32];
            snprintf(field, sizeof field, "active[%d]", i);
            return WP_FAIL(err, 400, "bad_active", field, "%s must be true/false", field);
        }
    }
    return 0;
}

static const struct {
    const char *name;
    int kind;
    int nconst; /* 0, 1 (value) or 2 (lo, hi) */
} preds[] = {{"nonzero", WP_PRED_NONZERO, 0}, {"gt", WP_PRED_GT, 1},          {"ge", WP_PRED_GE, 1},
             {"lt", WP_PRED_LT, 1},           {"le", WP_PRED_LE, 1},          {"eq", WP_PRED_EQ, 1},
             {"ne", WP_PRED_NE, 1},           {"between", WP_PRED_BETWEEN, 2}};

static int parse_pred(const cJSON *p, wp_type t, warp_input *w, wp_err *err) {
    w->job.pred_kind = WP_PRED_NONZERO;
    if (!p) return 0;
    if (!cJSON_IsObject(p)) return WP_FAIL(err, 400, "wrong_type", "args.pred", "args.pred must be an object");
    const cJSON *op = wp_json_get(p, "op");
    if (!cJSON_IsString(op)) return WP_FAIL(err, 400, "bad_pred", "args.pred.op", "args.pred.op must be a string");
    for (size_t i = 0; i < WP_ARRAY_LEN(preds); i++) {
        if (strcmp(op->valuestring, preds[i].name)) continue;
        static const char *const k0[] = {"op", NULL}, *const k1[] = {"op", "value", NULL},
                                 *const k2[] = {"op", "lo", "hi", NULL};
        const char *const *keys = preds[i].nconst == 0 ? k0 : preds[i].nconst == 1 ? k1 : k2;
        if (wp_json_only(p, "args.pred.", keys, err)) return -1;
        w->job.pred_kind = preds[i].kind;
        for (int c = 1; keys[c]; c++) {
            char field[32];
            snprintf(field, sizeof field, "args.pred.%s", keys[c]);
            const cJSON *v = wp_json_get(p, keys[c]);
            if (!v) return WP_FAIL(err, 400, "missing_field", field, "%s is required for %s", field, preds[i].name);
            if (wp_json_to_bits(v, t, field, c == 1 ? &w->job.pred_a : &w->job.pred_b, err)) return -1;
        }
        return 0;
    }
    return WP_FAIL(err, 400, "bad_pred", "args.pred.op",
                   "args.pred.op \"%.20s\" is not one of nonzero gt ge lt le eq ne between", op->valuestring);
}

static int parse_args(const cJSON *args, const wp_family *f, wp_type t, warp_input *w, wp_err *err) {
    const char *allowed[6];
    int na = 0;
    if (f->arg) allowed[na++] = f->arg;
    if (f->flags & WP_F_SWAP) allowed[na++] = "first", allowed[na++] = "second";
    if (f->flags & WP_F_PRED) allowed[na++] = "pred";
    allowed[na] = NULL;
    if (args && !cJSON_IsObject(args)) return WP_FAIL(err, 400, "wrong_type", "args", "args must be an object");
    if (wp_json_only(args, "args.", allowed, err)) return -1;
    w->arg = malloc((size_t)w->n * sizeof *w->arg);
    if (!w->arg) return WP_FAIL(err, 500, "no_memory", "args", "out of memory");
    for (int i = 0; i < w->n; i++) w->arg[i] = f->arg_default;
    if (f->arg) {
        char field[48] = "args."; /* the name is needed only on an error: no snprintf on every request */
        wp_copy_cut(field + 5, sizeof field - 5, f->arg);
        const cJSON *a = wp_json_get(args, f->arg);
        long long v;
        if (cJSON_IsArray(a)) {
            if (cJSON_GetArraySize(a) != w->n)
                return WP_FAIL(err, 400, "bad_arg", field, "%s has %d values; give one, or one per lane (%d)", field,
                               cJSON_GetArraySize(a), w->n);
            int i = 0;
            for (const cJSON *x = a->child; x; x = x->next, i++) {
                char f2[64];
                snprintf(f2, sizeof f2, "%s[%d]", field, i);
                if (wp_json_int(x, f2, f->arg_min, f->arg_max, &v, err)) return -1;
                w->arg[i] = (int32_t)v;
            }
        } else if (a) {
            if (wp_json_int(a, field, f->arg_min, f->arg_max, &v, err)) return -1;
            for (int i = 0; i < w->n; i++) w->arg[i] = (int32_t)v;
        }
    }
    w->job.first = 0, w->job.second = w->elems > 1 ? 1 : 0;
    if (f->flags & WP_F_SWAP) {
        long long v;
        const cJSON *a = wp_json_get(args, "first");
        if (a && wp_json_int(a, "args.first", 0, w->elems - 1, &v, err)) return -1;
        if (a) w->job.first = (int)v;
        a = wp_json_get(args, "second");
        if (a && wp_json_int(a, "args.second", 0, w->elems - 1, &v, err)) return -1;
        if (a) w->job.second = (int)v;
    }
    return (f->flags & WP_F_PRED) ? parse_pred(wp_json_get(args, "pred"), t, w, err) : 0;
}

static int parse_warp_input(const cJSON *req, const wp_spec *s, warp_input *w, wp_err *err) {
    const wp_family *f = s->family;
    bool array_ok = (f->flags & WP_F_ARRAY) != 0;
    const cJSON *in = wp_json_get(req, "input");
    int rc;
    if (!in) {
        cJSON *def = cJSON_Parse("{\"iota\":32}");
        rc = parse_generated(def, s->type, array_ok, w, err);
        cJSON_Delete(def);
    } else if (cJSON_IsArray(in))
        rc = parse_list(in, s->type, array_ok, w, err);
    else if (cJSON_IsObject(in))
        rc = parse_generated(in, s->type, array_ok, w, err);
    else
        rc = WP_FAIL(err, 400, "wrong_type", "input", "input must be a list or an object");
    if (rc) return -1;
    if (parse_active(wp_json_get(req, "active"), w, err)) return -1;
    if (parse_args(wp_json_get(req, "args"), f, s->type, w, err)) return -1;
    w->job.n = w->n, w->job.elems = w->elems, w->job.in = w->in, w->job.arg = w->arg, w->job.active = w->active;
    return 0;
}

/* The three lists in one block: out (n * elems), src (n), why (n * elems). */
static int output_alloc(warp_output *o, int n, int elems) {
    const size_t ne = (size_t)n * (size_t)elems;
    unsigned char *p = calloc(1, ne * sizeof *o->out + (size_t)n * sizeof *o->src + ne);
    if (!p) return -1;
    o->out = (uint64_t *)p;
    o->src = (int32_t *)(p + ne * sizeof *o->out);
    o->why = p + ne * sizeof *o->out + (size_t)n * sizeof *o->src;
    for (int i = 0; i < n; i++) o->src[i] = -1;
    o->r = (wp_warp_result){o->out, o->src, o->why};
    return 0;
}
static void output_free(warp_output *o) {
    free(o->out);
    o->out = NULL;
}

static void add_spec_fields(wp_jtext *o, const wp_spec *s) {
    char m[16];
    wp_jtext_qstr(o, WP_JKEY("family"), s->family->name);
    wp_jtext_qstr(o, WP_JKEY("type"), wp_type_name(s->type));
    wp_jtext_qnum(o, WP_JKEY("width"), s->width);
    const char *e = warp_put_mask(m, s->mask); /* "0x%08x" in quotes */
    wp_jtext_qkey(o, WP_JKEY("mask"));
    wp_jtext_text(o, m, (size_t)(e - m));
    if (s->family->flags & WP_F_OP) wp_jtext_qstr(o, WP_JKEY("op"), s->op.text);
}

static const char *const warp_fields[] = {"family", "type",   "width",   "mask",   "op",      "args",
                                          "input",  "active", "backend", "device", "profile", NULL};

/* Data-parallel families (reductions, scans, ...) are jobs over arrays, not 32-lane primitives. */
static int refuse_data_family(const cJSON *body, wp_err *err) {
    const cJSON *fam = wp_json_get(body, "family");
    const wp_family *f = cJSON_IsString(fam) ? wp_family_find(fam->valuestring) : NULL;
    if (f && (f->flags & WP_F_DATA))
        return WP_FAIL(err, 400, "not_a_warp_primitive", "family",
                       "family %s is a data-parallel job: run it with POST %s", f->name,
                       (f->flags & (WP_F_SCAN | WP_F_RADIUS)) ? "/v1/scan" : "/v1/reduce");
    return 0;
}

/* A warp job's runs: on cuda the emulator's (which lanes are defined) and the device's (batched);
 * elsewhere the emulator's alone, batched. */
typedef struct {
    warp_output emu, dev;
    wp_run_timing emu_t, dev_t;
    bool on_cuda; /* emu devices (--emu-devices) are all the emulator */
    int batch_size;
    /* on cuda, the emulator's run while the device works (wp_run_timing.meanwhile) */
    wp_app *app;
    const wp_spec *spec;
    const warp_input *w;
    bool emu_ran;
    int emu_rc;
    wp_err emu_err;
    /* written by the same hook after the emulator's run: the answer's parts that the device's run does
     * not decide ("defined" and "undefined_reason", then "lane_pred" to "cache", from pre_split) */
    wp_backend *be;
    const wp_ready_kernel *rk;
    wp_jtext pre;
    size_t pre_split;
} warp_runs;

/* The runs' results, allocated. */
static int warp_runs_open(wp_backend *be, const warp_input *w, bool profile, warp_runs *r, wp_err *err) {
    r->on_cuda = !wp_backend_on_host(be);
    if (output_alloc(&r->emu, w->n, w->elems) || (r->on_cuda && output_alloc(&r->dev, w->n, w->elems)))
        return WP_FAIL(err, 500, "no_memory", "", "out of memory");
    r->dev_t.untimed = !profile; /* cuda: no timing events unless profiled (wp_backend_run_warp) */
    r->batch_size = 1;
    return 0;
}

/* On cuda: the emulator's run, which says which lanes are defined (once; its rc and error kept). */
static void emu_run(void *ctx) {
    warp_runs *r = ctx;
    if (r->emu_ran) return;
    r->emu_ran = true;
    r->emu_rc = wp_backend_run_warp(r->app->emu, NULL, r->spec, &r->w->job, &r->emu.r, &r->emu_t, &r->emu_err);
}

static void put_fields(wp_jtext *o, const wp_spec *spec, const warp_input *w, wp_backend *be,
                       const wp_ready_kernel *rk);

/* The answer's parts that the device's run does not decide, into r->pre (left empty when an allocation
 * fails: the answer then writes them as usual). */
static void pre_write(warp_runs *r) {
    wp_jtext *t = &r->pre;
    wp_jtext_room(t, 1024 + 3 * warp_lanes_room(r->w)); /* never grown: a failure is remembered */
    warp_lanes_put(t, r->spec, r->w, &r->emu, &r->emu, WARP_L_DEFINED, WARP_L_SOURCE);
    r->pre_split = t->n;
    warp_lanes_put(t, r->spec, r->w, &r->emu, &r->emu, WARP_L_LANE_PRED, WARP_L_LISTS);
    put_fields(t, r->spec, r->w, r->be, r->rk);
    if (t->failed) {
        free(t->p);
        *t = (wp_jtext){0};
    }
}

/* The hook: the emulator's run, then the answer's parts it decides (the device still working). */
static void emu_run_and_write(void *ctx) {
    warp_runs *r = ctx;
    emu_run(r);
    if (r->emu_rc == 0) pre_write(r);
}

/* A job whose emulation goes while the device works has at most this many values (one warp's): its
 * emulation (~0.5 us) then fits in the device's round trip, and a batch's leader or runner, which does
 * it holding the device's stream, does a few of them, not a 1024-lane job's 150-300 us. */
#define EMU_MEANWHILE_VALUES 32

/* On cuda, before the device's run. An untimed job of one warp's values: the emulator's run set to go
 * while the device works (wp_run_timing.meanwhile); a profiled one: run now, as before, so that the
 * timed steps' host time holds none of it; a larger one: after the device's run (emu_after).
 * alone: a job that runs alone on its HTTP thread (wp_app_inline_alone), which waits for the device
 * anyway: the hook writes the answer's parts too. Not a handed job's: its runner, which does the hooks
 * of a batch's first jobs while the device runs, would answer the batch later (reqab on the H200, tiny
 * warp at 256 connections: 0.54-0.56x health with them against 0.60-0.64x without). */
static void emu_meanwhile(wp_app *app, wp_backend *be, const wp_spec *spec, const warp_input *w,
                          const wp_ready_kernel *rk, bool alone, warp_runs *r) {
    r->app = app, r->be = be, r->spec = spec, r->w = w, r->rk = rk;
    if (!r->dev_t.untimed)
        emu_run(r);
    else if ((long)w->n * w->elems <= EMU_MEANWHILE_VALUES)
        r->dev_t.meanwhile = alone ? emu_run_and_write : emu_run, r->dev_t.meanwhile_ctx = r;
}

/* After the device's run (rc): the emulator's, when the run did not call it; -1 with err when either
 * failed, the emulator's refusal first (as when it ran first). */
static int emu_after(warp_runs *r, int rc, wp_err *err) {
    r->dev_t.meanwhile = NULL;
    emu_run(r);
    if (r->emu_rc) *err = r->emu_err;
    return r->emu_rc || rc ? -1 : 0;
}

/* On the emulator: the job itself, batched. */
static int warp_run_emu(wp_app *app, wp_backend *be, const wp_spec *spec, const warp_input *w, bool may_defer,
                        bool profile, warp_runs *r, wp_err *err) {
    if (warp_runs_open(be, w, profile, r, err)) return -1;
    return wp_batch_run_warp(app, be, NULL, spec, &w->job, &r->emu.r, &r->emu_t, may_defer, &r->batch_size, err);
}

/* After the runs: counted, and the kernel's time observed. */
static void warp_ran(wp_app *app, wp_backend *be, const wp_spec *spec, const warp_runs *r) {
    atomic_fetch_add(&app->warp_runs, 1);
    const wp_run_timing *rt = r->on_cuda ? &r->dev_t : &r->emu_t; /* untimed: the round trip, an upper bound */
    wp_metrics_observe_kernel(app->metrics, spec->family->name, wp_backend_name(be),
                              (rt->untimed ? rt->device_us : rt->kernel_us) / 1e6);
}

/* The runs. On cuda the emulator's goes while the device works (emu_meanwhile), else after its run. */
static int warp_run(wp_app *app, wp_backend *be, const wp_spec *spec, const warp_input *w, const wp_ready_kernel *rk,
                    bool may_defer, bool profile, warp_runs *r, wp_err *err) {
    if (wp_backend_on_host(be)) {
        if (warp_run_emu(app, be, spec, w, may_defer, profile, r, err)) return -1;
    } else {
        if (warp_runs_open(be, w, profile, r, err)) return -1;
        emu_meanwhile(app, be, spec, w, rk, wp_app_inline_alone(app, be, may_defer), r);
        const int rc =
            wp_batch_run_warp(app, be, rk->fn, spec, &w->job, &r->dev.r, &r->dev_t, may_defer, &r->batch_size, err);
        if (emu_after(r, rc, err)) return -1;
    }
    warp_ran(app, be, spec, r);
    return 0;
}

/* After the lists, to "cache": the spec, where it ran and the kernel. */
static void put_fields(wp_jtext *o, const wp_spec *spec, const warp_input *w, wp_backend *be,
                       const wp_ready_kernel *rk) {
    add_spec_fields(o, spec);
    wp_jtext_qnum(o, WP_JKEY("lanes"), w->n);
    if (w->elems > 1) wp_jtext_qnum(o, WP_JKEY("elems"), w->elems);
    wp_jtext_qstr(o, WP_JKEY("backend"), wp_backend_name(be));
    wp_jtext_qstr(o, WP_JKEY("device"), wp_backend_facts(be)->name);
    if (rk->kernel) {
        wp_jtext_qstr(o, WP_JKEY("key"), rk->key_text);
        wp_jtext_qstr(o, WP_JKEY("hash"), rk->hash);
        wp_jtext_qstr(o, WP_JKEY("cache"), wp_source_name(rk->source));
    } else {
        wp_jtext_qstr(o, WP_JKEY("cache"), "none");
    }
}

/* A part pre_write wrote, after the lists before it (with the ',' a pair needs, as wp_jtext_qkey puts it). */
static void put_part(wp_jtext *o, const char *text, size_t n) {
    if (n && text[0] != ',') wp_jtext_add(o, ",", 1);
    wp_jtext_add(o, text, n);
}

/* The 200 answer as text (the bytes a cJSON tree of it printed): the lanes, the spec, where it ran,
 * the kernel, the batch and the timings, into resp (a 500 when out of memory). */
static void warp_answer(const wp_spec *spec, const warp_input *w, const warp_runs *r, wp_backend *be,
                        const wp_ready_kernel *rk, double parse_us, double hand_wait_us, const wp_req *req,
                        wp_resp *resp) {
    wp_jtext o;
    wp_api_text_begin(&o, req);
    wp_jtext_room(&o, 1024 + warp_lanes_room(w)); /* a failure is remembered */
    wp_jtext_open(&o, '{');
    const warp_output *val = r->on_cuda ? &r->dev : &r->emu;
    if (r->pre.n > 0) { /* the rest written while the device worked (pre_write) */
        warp_lanes_put(&o, spec, w, val, &r->emu, WARP_L_OUTPUT, WARP_L_DEFINED);
        put_part(&o, r->pre.p, r->pre_split);
        warp_lanes_put(&o, spec, w, val, &r->emu, WARP_L_SOURCE, WARP_L_LANE_PRED);
        put_part(&o, r->pre.p + r->pre_split, r->pre.n - r->pre_split);
    } else {
        warp_lanes_put(&o, spec, w, val, &r->emu, WARP_L_OUTPUT, WARP_L_LISTS);
        put_fields(&o, spec, w, be, rk);
    }
    wp_jtext_qobj(&o, WP_JKEY("batch"));
    wp_jtext_qnum(&o, WP_JKEY("size"), r->batch_size);
    wp_jtext_close(&o, '}');
    wp_jtext_qobj(&o, WP_JKEY("timing"));
    const wp_run_timing *rt = r->on_cuda ? &r->dev_t : &r->emu_t;
    const uint64_t t_body = req->t_body_ns ? req->t_body_ns : req->t_start_ns;
    wp_jtext_qnum(&o, WP_JKEY("receive_us"), (double)(t_body - req->t_start_ns) / 1e3);
    wp_jtext_qnum(&o, WP_JKEY("handoff_us"), wp_req_handoff_us(req) + hand_wait_us + rt->queue_us);
    wp_jtext_qnum(&o, WP_JKEY("parse_us"), parse_us);
    wp_jtext_qnum(&o, WP_JKEY("key_us"), rk->key_us);
    wp_jtext_qnum(&o, WP_JKEY("cache_us"), rk->cache_us);
    wp_jtext_qnum(&o, WP_JKEY("compile_ms"), rk->compile_ms);
    wp_jtext_qnum(&o, WP_JKEY("load_us"), rk->load_us);
    /* untimed (cuda without "profile"): the device's steps were not measured: null, and device_us */
    wp_jtext_qnum_or_null(&o, WP_JKEY("upload_us"), !rt->untimed, rt->upload_us);
    wp_jtext_qnum_or_null(&o, WP_JKEY("kernel_us"), !rt->untimed, rt->kernel_us);
    wp_jtext_qnum_or_null(&o, WP_JKEY("download_us"), !rt->untimed, rt->download_us);
    if (rt->device_us > 0) wp_jtext_qnum(&o, WP_JKEY("device_us"), rt->device_us);
    wp_jtext_qnum(&o, WP_JKEY("emulate_us"), r->emu_t.kernel_us);
    wp_jtext_qnum(&o, WP_JKEY("total_us"), wp_us_since(req->t_start_ns));
    wp_jtext_close(&o, '}');
    wp_jtext_close(&o, '}');
    wp_api_text_answer(&o, resp);
}

/* The same stages for the Server-Timing header (http_resp.c adds arrival, hand-off, answer, total). */
static void note_stages(wp_resp *resp, const warp_runs *r, const wp_ready_kernel *rk, double parse_us) {
    const wp_run_timing *rt = r->on_cuda ? &r->dev_t : &r->emu_t;
    if (rt->queue_us > 0) wp_resp_stage(resp, "batch", rt->queue_us);
    wp_resp_stage(resp, "parse", parse_us);
    wp_resp_stage(resp, "key", rk->key_us);
    wp_resp_stage(resp, "cache", rk->cache_us - rk->compile_ms * 1e3); /* cache_us holds the compile */
    wp_resp_stage(resp, "compile", rk->compile_ms * 1e3);
    wp_resp_stage(resp, "load", rk->load_us);
    if (rt->untimed) {
        wp_resp_stage(resp, "device", rt->device_us);
    } else {
        wp_resp_stage(resp, "upload", rt->upload_us);
        wp_resp_stage(resp, "kernel", rt->kernel_us);
        wp_resp_stage(resp, "download", rt->download_us);
    }
    wp_resp_stage(resp, "emulate", r->emu_t.kernel_us);
    resp->stages.t_done_ns = wp_now_ns();
}

/* One request's state: on the heap, so that a job handed to the batcher's runners (batch_exec.h)
 * keeps it while its connection is parked. */
typedef struct {
    const wp_req *req;
    wp_err err;
    wp_spec spec;
    warp_input w;
    warp_runs runs;
    wp_ready_kernel rk;
    cJSON *body;
    wp_backend *be;
    bool profile;
    bool in_room; /* c is its call's room (call_new), not the heap's */
    double parse_us;
    uint64_t t_hand_ns;  /* handed: when */
    double hand_wait_us; /* the hand-off's share: the runners' queue and the way back, not the run */
    wp_app *app;         /* handed: the runner counts the run in it */
    int hand_rc;         /* handed: the run's, set by the runner before it unparks */
    void *hand_room;     /* handed: the batcher's (wp_batch_hand_warp_room), in the call's room (wp_req_room) */
} warp_call;

static void call_free(wp_app *app, warp_call *c) {
    wp_app_kernel_put(app, &c->rk);
    output_free(&c->runs.emu);
    output_free(&c->runs.dev);
    free(c->runs.pre.p);
    input_free(&c->w);
    wp_spec_free(&c->spec);
    cJSON_Delete(c->body);
    if (!c->in_room) free(c);
}

/* A request's state: in its call's room when it has one (a request on an HTTP thread: no allocation of
 * its own, where a calloc of its 2.6 KiB went through glibc's shared bins on every request), with the
 * batcher's room for a hand-over after it; else on the heap. */
static warp_call *call_new(const wp_req *req) {
    typedef struct {
        warp_call c;
        max_align_t hand[]; /* wp_batch_hand_warp_room() bytes */
    } in_room;
    in_room *room = wp_req_room(req, sizeof *room + wp_batch_hand_warp_room());
    warp_call *c = room ? &room->c : calloc(1, sizeof *c);
    if (!c) return NULL;
    if (room) {
        memset(c, 0, sizeof *c);
        c->in_room = true;
        c->hand_room = room->hand;
    }
    c->req = req;
    return c;
}

/* The answer of a run (rc 0), an error (-1) or a deferral (1). */
static void call_reply(warp_call *c, wp_resp *resp, int rc) {
    if (rc > 0) {
        resp->defer = true;
    } else if (rc < 0) {
        wp_resp_error(resp, &c->err);
    } else {
        if (c->t_hand_ns) wp_resp_stage(resp, "runner", c->hand_wait_us);
        note_stages(resp, &c->runs, &c->rk, c->parse_us);
        warp_answer(&c->spec, &c->w, &c->runs, c->be, &c->rk, c->parse_us, c->hand_wait_us, c->req, resp);
        wp_resp_note_kernel(resp, wp_backend_name(c->be), c->rk.kernel ? wp_source_name(c->rk.source) : "none",
                            c->spec.family->name, c->rk.kernel ? c->rk.hash : NULL);
    }
}

/* The same, then c freed. */
static void call_answer(wp_app *app, warp_call *c, wp_resp *resp, int rc) {
    call_reply(c, resp, rc);
    call_free(app, c);
}

/* ---- handed to the batcher's runners: parked until the device's run is done ---- */

/* When the call ends: on its HTTP thread (or on the runner, when the client went while it ran). */
static void hand_release(void *ctx) {
    warp_call *c = ctx;
    call_free(c->app, c);
}

/* On the HTTP thread, once the runner is done: the answer, written where it is sent (a runner would
 * write its batch's answers one after another while their connections wait). */
static void hand_finish(void *app, const wp_req *req, wp_resp *resp, void *ctx) {
    (void)app, (void)req;
    warp_call *c = ctx;
    c->hand_wait_us = wp_batch_warp_own_us(&c->runs.dev_t, wp_us_since(c->t_hand_ns));
    /* the emulator's run, when the runner did not do it while the device worked (rc > 0: to a worker) */
    if (c->hand_rc <= 0 && emu_after(&c->runs, c->hand_rc, &c->err)) c->hand_rc = -1;
    call_reply(c, resp, c->hand_rc);
}

static bool hand_park(void *ctx) {
    warp_call *c = ctx;
    if (!wp_req_park(c->req, hand_finish, c)) return false;
    wp_req_on_end(c->req, hand_release, c);
    return true;
}

/* On the runner, once the device's run is done (the emulated run with it, when it was set to go then):
 * the run counted, the connection unparked. */
static void hand_done(void *ctx, int rc, const wp_err *err) {
    warp_call *c = ctx;
    if (rc < 0) c->err = *err;
    c->hand_rc = rc;
    if (rc == 0) warp_ran(c->app, c->be, &c->spec, &c->runs);
    wp_req_unpark(c->req); /* c is the HTTP thread's from here on */
}

/* On the HTTP thread, a GPU job with its kernel in memory: the emulator's run (which lanes are
 * defined), then the device's handed to the runners. 0: handed (c is theirs until done); else the rc
 * to answer with (1: to a worker). */
static int try_hand(wp_app *app, warp_call *c) {
    if (!wp_app_hands_gpu_jobs(app)) return 1;
    c->app = app;
    int rc = wp_app_kernel_memory(app, &c->spec, c->be, &c->rk, &c->err);
    if (rc) return rc;
    if (!c->hand_room && !(c->hand_room = wp_req_room(c->req, wp_batch_hand_warp_room()))) return 1;
    if (warp_runs_open(c->be, &c->w, c->profile, &c->runs, &c->err)) return -1;
    emu_meanwhile(app, c->be, &c->spec, &c->w, &c->rk, false, &c->runs); /* a small job's: on the runner */
    c->t_hand_ns = wp_now_ns();
    const wp_batch_hand_hooks hooks = {.park = hand_park, .done = hand_done, .ctx = c};
    if (wp_batch_hand_warp(app, c->be, c->rk.fn, &c->spec, &c->w.job, &c->runs.dev.r, &c->runs.dev_t,
                           &c->runs.batch_size, &hooks, c->hand_room) == 0)
        return 0;
    c->t_hand_ns = 0;
    return 1;
}

/* The kernel and the run. On the HTTP thread (may_defer) only with a kernel already in memory: run
 * there when the device is idle (wp_app_may_run_inline), else handed to the runners, else deferred. 0: handed. */
static int warp_job(wp_app *app, warp_call *c, wp_resp *resp) {
    int rc = 0;
    if (c->spec.family->backends & WP_BACKEND_CUDA) {
        if (c->req->may_defer && !wp_app_may_run_inline(app, c->be)) {
            rc = try_hand(app, c);
            if (rc == 0) return 0;
        } else if (c->req->may_defer) {
            rc = wp_app_kernel_peek(app, &c->spec, c->be, &c->rk, &c->err);
        } else {
            rc = wp_app_kernel_get(app, &c->spec, c->be, &c->rk, &c->err) ? -1 : 0;
        }
    }
    if (rc == 0 && warp_run(app, c->be, &c->spec, &c->w, &c->rk, c->req->may_defer, c->profile, &c->runs, &c->err))
        rc = -1;
    call_answer(app, c, resp, rc);
    return 1;
}

void wp_api_warp(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    if (wp_api_defer_unparsed(app, req)) {
        resp->defer = true;
        return;
    }
    warp_call *c = call_new(req);
    if (!c) {
        wp_resp_error(resp, &(wp_err){.status = 500, .code = "no_memory", .msg = "out of memory"});
        return;
    }
    wp_err *err = &c->err;
    c->body = wp_api_parse_body(app, req, err);
    if (!c->body || wp_json_only(c->body, "", warp_fields, err) || refuse_data_family(c->body, err) ||
        wp_spec_from_json(c->body, app->arch, &c->spec, err) ||
        wp_app_backend(app, c->body, c->spec.family, &c->be, err) || parse_warp_input(c->body, &c->spec, &c->w, err) ||
        wp_json_bool(c->body, "profile", &c->profile, err)) {
        call_answer(app, c, resp, -1);
        return;
    }
    c->parse_us = wp_us_since(wp_req_t_handler(req));
    warp_job(app, c, resp);
}
