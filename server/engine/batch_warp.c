/* batch_warp.c — batched /v1/warp runs (batch_exec.h). Jobs of one kernel whose run-time scalars
 * (elements per lane, predicate, swap indexes) agree are queued together. A batch of one runs as
 * wp_backend_run_warp; on emu every job is emulated in turn. On cuda the requests' lanes are laid side
 * by side, each request on whole warps of its own (its last warp's spare lanes inactive, which a
 * kernel treats as it treats lanes past n: they return at once), and run as one grid of the same
 * kernel (templates/wp_common.cuh wp_thread indexes the grid): one upload of every input, one launch,
 * one download. Warps do not see each other, so each request's lanes get what they get alone.
 * Owns: the batched warp layout and its host image (per batch). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "backend/warp_grid.h"
#include "batch.h"
#include "batch_exec.h"
#include "bgbuild.h"

typedef struct {
    wp_app *app;
    wp_backend *be;
    void *fn;
    const wp_spec *spec;
    const wp_warp_job *job;
    wp_warp_result *res;
    wp_run_timing *t;
    wp_batch_mem *mem;
    bool handed;     /* run by the batcher's runners (wp_batch_hand_warp): they wait as --runner-wait says */
    int runner_wait; /* handed: --runner-wait */
    int rc;
    wp_err err;
} warp_item;

static int whole_warps(int n) { return (n + 31) / 32 * 32; }

/* The host image of a batch: each job on whole warps of its own, from its first lane (warp_grid.h). */
static void image_fill(unsigned char *h, const wp_warp_layout *l, warp_item *const *items, int n) {
    for (int i = 0, lane = 0; i < n; i++) {
        const int lanes = whole_warps(items[i]->job->n);
        wp_warp_image_put(h, l, items[i]->job, lane, lanes);
        lane += lanes;
    }
}

/* The image and the launch's parameters, for where the image lands (wp_launch_io.fill). */
typedef struct {
    warp_item *const *items;
    int n, lanes;
    const wp_warp_layout *l;
    wp_warp_params *p;
} grid_image;

static void grid_image_fill(void *ctx, uint64_t base, void *image) {
    grid_image *g = ctx;
    image_fill(image, g->l, g->items, g->n);
    *g->p = wp_warp_params_at(base, g->l, g->items[0]->job, g->lanes);
}

/* While the device runs the grid: the meanwhile hooks (wp_run_timing) of its first few jobs, each once; a
 * later job's caller does that work itself (a hook holds the stream while it runs, and the batch's
 * answers wait for all of them). */
#define GRID_MEANWHILE_JOBS 8
static void grid_meanwhile(void *ctx) {
    const grid_image *g = ctx;
    for (int i = 0; i < g->n && i < GRID_MEANWHILE_JOBS; i++) wp_run_meanwhile(g->items[i]->t);
}

/* One upload, one launch, one download for every job (or none: zero-copy, wp_launch_io.fill); their
 * results copied out of the downloaded out | src. */
static int run_grid(warp_item *const *items, int n, wp_err *err) {
    const warp_item *lead = items[0];
    const int elems = lead->job->elems;
    int lanes = 0;
    for (int i = 0; i < n; i++) lanes += whole_warps(items[i]->job->n);
    wp_warp_layout l = wp_warp_layout_for(lanes, elems);
    unsigned char *h = malloc(l.download);
    if (!h) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for a batch of %d warp jobs", n);
    wp_buf *buf = wp_batch_mem_take(lead->mem, lead->be, l.total, err);
    int rc = buf ? 0 : -1;
    wp_run_timing t = {0};
    if (rc == 0) {
        wp_warp_params p = {0};
        grid_image g = {.items = items, .n = n, .lanes = lanes, .l = &l, .p = &p};
        void *params[] = {&p};
        const unsigned block = lanes < WP_MAX_LANES ? (unsigned)lanes : WP_MAX_LANES;
        wp_launch launch = {.grid = {(unsigned)((lanes + WP_MAX_LANES - 1) / WP_MAX_LANES), 1, 1},
                            .block = {block, 1, 1},
                            .params = params};
        void *fns[] = {lead->fn};
        /* the upload of every input, the launch and the download of out | src: one wait (warp kernels
         * only load and store: zero-copy when untimed) */
        wp_launch_io io = {.buf = buf,
                           .write_len = l.total,
                           .read_len = l.download,
                           .dst = h,
                           .untimed = true,
                           .fill = grid_image_fill,
                           .fill_ctx = &g,
                           .image_len = l.total,
                           .zero_copy_ok = true,
                           .wait = lead->handed ? lead->runner_wait : WP_WAIT_DEFAULT,
                           .meanwhile = grid_meanwhile,
                           .meanwhile_ctx = &g};
        for (int i = 0; i < n; i++) /* timed when any job wants it (wp_run_timing.untimed unset) */
            if (items[i]->t && !items[i]->t->untimed) io.untimed = false;
        rc = wp_backend_launch_io(lead->be, fns, &launch, 1, &io, &t, err);
    }
    if (buf) wp_batch_mem_put(lead->mem, buf, rc == 0);
    for (int i = 0, lane = 0; rc == 0 && i < n; lane += whole_warps(items[i]->job->n), i++) {
        const warp_item *it = items[i];
        memcpy(it->res->out, h + l.out + (size_t)lane * elems * 8, (size_t)it->job->n * elems * 8);
        memcpy(it->res->src, h + l.src + (size_t)lane * 4, (size_t)it->job->n * 4);
        if (it->t) *it->t = t;
    }
    free(h);
    return rc;
}

static bool is_emu(const wp_backend *b) { return !strcmp(wp_backend_name(b), "emu"); }

/* A job alone. On a GPU, untimed, of one whole warp and not handed to the runners (its caller waits on the
 * HTTP thread: the device was idle): through the device's resident kernel, with the spec's resident
 * build (wp_spec.resident) when that is in memory; when it is not, the background builder is asked
 * for it (a kernel seen alone a few times is worth its compile) and the job runs as before. The
 * lookup's time is the device's (device_us: how the job got to run there). */
static int run_alone(warp_item *it) {
    if (it->app && !it->handed && it->t && it->t->untimed && wp_backend_cuda_resident_fits(it->be, it->job)) {
        const uint64_t t0 = wp_now_ns();
        wp_spec rs = *it->spec; /* shallow: shares the operator */
        rs.resident = true;
        wp_ready_kernel rk;
        wp_err kerr = {0};
        const int rc = wp_app_kernel_memory(it->app, &rs, it->be, &rk, &kerr);
        if (rc > 0) wp_bgbuild_want(it->app->bgbuild, &rs, it->be, 1);
        const double lookup_us = wp_us_since(t0);
        const int r = rc == 0 ? wp_backend_run_warp(it->be, rk.fn, &rs, it->job, it->res, it->t, &it->err)
                              : wp_backend_run_warp(it->be, it->fn, it->spec, it->job, it->res, it->t, &it->err);
        if (rc == 0) wp_app_kernel_put(it->app, &rk);
        if (r == 0) it->t->device_us += lookup_us;
        return r;
    }
    return wp_backend_run_warp(it->be, it->fn, it->spec, it->job, it->res, it->t, &it->err);
}

/* The batcher's run: a batch of one, or emu, job by job; else one grid. */
static void warp_batch(wp_batch_job *const *jobs, int n) {
    warp_item *items[WP_BATCH_MAX_LIMIT] = {0};
    for (int i = 0; i < n; i++) items[i] = jobs[i]->payload;
    if (n == 1 || is_emu(items[0]->be)) {
        for (int i = 0; i < n; i++) items[i]->rc = run_alone(items[i]);
        return;
    }
    wp_err err = {0};
    for (int i = 0; i < n; i++) wp_backend_job_enter(items[0]->be); /* the device's load, for placement */
    int rc = run_grid(items, n, &err);
    for (int i = 0; i < n; i++) wp_backend_job_leave(items[0]->be);
    for (int i = 0; i < n; i++) {
        items[i]->rc = rc;
        if (rc) items[i]->err = err;
    }
}

/* Whether the job runs alone: no batcher; the emulator (a batch there is its jobs one after the
 * other: batched, they would only wait for each other); a job the backend refuses (it says why); a
 * family the device cannot run. */
static bool alone(wp_app *app, wp_backend *be, void *fn, const wp_spec *s, const wp_warp_job *job) {
    return !app->batcher || !app->batch_mem || is_emu(be) || job->n < 1 || job->n > WP_MAX_LANES || job->elems < 1 ||
           job->elems > WP_MAX_ELEMS || !fn || s->family->min_sm > wp_backend_facts(be)->sm;
}

/* The queue's key: the kernel and the run-time scalars. HTTP-thread jobs (no_wait) queue apart from
 * workers': one never waits out a worker leader's window. -1 when the spec has no key text. */
static int warp_key(char *out, size_t cap, const wp_spec *s, const wp_warp_job *job, bool no_wait) {
    char spec_key[WP_SPEC_KEY_MAX];
    if (wp_spec_key_text(s, spec_key, sizeof spec_key) < 0) return -1;
    snprintf(out, cap, "warp|%s|e%d|p%d:%llx:%llx|s%d:%d|h%d", spec_key, job->elems, job->pred_kind,
             (unsigned long long)job->pred_a, (unsigned long long)job->pred_b, job->first, job->second, no_wait);
    return 0;
}

double wp_batch_warp_own_us(const wp_run_timing *t, double elapsed_us) {
    const double own = elapsed_us - (t->untimed ? t->device_us : t->upload_us + t->kernel_us + t->download_us);
    return own > 0 ? wp_us_round_ns(own) : 0;
}

int wp_batch_run_warp(wp_app *app, wp_backend *be, void *fn, const wp_spec *s, const wp_warp_job *job,
                      wp_warp_result *res, wp_run_timing *t, bool no_wait, int *size, wp_err *err) {
    *size = 1;
    if (alone(app, be, fn, s, job)) return wp_backend_run_warp(be, fn, s, job, res, t, err);
    warp_item it = {.app = app, .be = be, .fn = fn, .spec = s, .job = job, .res = res, .t = t, .mem = app->batch_mem};
    wp_batch_job bj = {.owner = be, .run = warp_batch, .payload = &it, .no_wait = no_wait, .t_entry_ns = wp_now_ns()};
    if (wp_app_inline_alone(app, be, no_wait)) {
        *size = wp_batcher_run_alone(app->batcher, &bj); /* no key, no queue */
    } else {
        if (warp_key(bj.key, sizeof bj.key, s, job, no_wait)) return wp_backend_run_warp(be, fn, s, job, res, t, err);
        *size = wp_batcher_submit(app->batcher, &bj);
    }
    t->queue_us = wp_batch_warp_own_us(t, wp_us_since(bj.t_queued_ns)); /* the entry, the queue, the bookkeeping */
    if (it.rc) *err = it.err;
    return it.rc;
}

/* ---- handed to the runners ---- */

typedef struct {
    warp_item it;
    wp_batch_job bj;
    int *size;
    wp_batch_hand_hooks hooks;
} handed_item;

static handed_item *handed_of(wp_batch_job *bj) {
    return (handed_item *)(void *)((char *)bj - offsetof(handed_item, bj));
}

/* On the runner, before the job is batched: its key. */
static bool handed_prepare(wp_batch_job *bj) {
    handed_item *h = handed_of(bj);
    if (warp_key(bj->key, sizeof bj->key, h->it.spec, h->it.job, true))
        snprintf(bj->key, sizeof bj->key, "alone|%p", (void *)bj); /* no key text: a batch of its own */
    return true;
}

static void handed_done(wp_batch_job *bj) {
    handed_item *h = handed_of(bj);
    *h->size = bj->size;
    const int rc = h->it.rc;
    const wp_err err = h->it.err;
    const wp_batch_hand_hooks hooks = h->hooks;
    hooks.done(hooks.ctx, rc, &err); /* h is the caller's room: given back on its thread */
}

size_t wp_batch_hand_warp_room(void) { return sizeof(handed_item); }

int wp_batch_hand_warp(wp_app *app, wp_backend *be, void *fn, const wp_spec *s, const wp_warp_job *job,
                       wp_warp_result *res, wp_run_timing *t, int *size, const wp_batch_hand_hooks *hooks, void *room) {
    if (alone(app, be, fn, s, job) || wp_batcher_runners(app->batcher) < 1) return 1;
    handed_item *h = room;
    if (!hooks->park(hooks->ctx)) return 1;
    *h = (handed_item){.it = {.be = be,
                              .fn = fn,
                              .spec = s,
                              .job = job,
                              .res = res,
                              .t = t,
                              .mem = app->batch_mem,
                              .handed = true,
                              .runner_wait = app->runner_wait},
                       .size = size,
                       .hooks = *hooks};
    h->bj = (wp_batch_job){
        .owner = be, .run = warp_batch, .payload = &h->it, .on_done = handed_done, .prepare = handed_prepare};
    *size = 1;
    if (wp_batcher_hand(app->batcher, &h->bj) != 0) { /* no runner took it (stopping) */
        h->it.rc = -1;
        WP_FAIL(&h->it.err, 503, "busy", "", "the batcher took no more jobs; retry shortly");
        handed_done(&h->bj);
    }
    return 0;
}
