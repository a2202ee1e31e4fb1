/* batch_reduce.c — batched /v1/reduce and /v1/scan jobs (batch_exec.h). Small jobs (input at most
 * WP_BATCH_INPUT_MAX bytes) are queued by their kernel key (the spec with the block the family picks
 * for n). Every job on emu, and every job that cannot batch run alone: input uploaded,
 * wp_reduce_run, results downloaded — today's path. On cuda a batch (of one too) runs the kernel's
 * _batch entry (templates: wp_batch_job) over one device buffer laid out as
 *
 *   table (a wp_data_params per job) | block starts | tile status (zeros) | inputs | offsets | heads
 *   | outputs | scratch
 *
 * uploaded up to the heads (a head is a job's 256 bytes of counters, left at zero by the kernels, and
 * its one-value result slot, as reduce.c's scratch head), downloaded from the heads to the end of the
 * outputs: one upload, one launch, one download, waited for once (wp_backend_launch_io). Until the
 * _batch entry is in memory (built in the background, bgbuild.h) the jobs run alone. Job j owns blocks first[j] ..
 * first[j+1] - 1 and each runs the block of its job's own plan, with the job's parameters, through the code the job
 * runs alone (device_scan's tiles start at epoch 1 over zeroed status, which the kernel reads as no status): the bits
 * are the job's alone. Owns: reduce_item (a queued job) and the batch layout (per batch). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "batch.h"
#include "batch_exec.h"
#include "bgbuild.h"
#include "kernels/stats.h"
#include "util/jsonout.h"
#include "util/log.h"

#define HEAD_BYTES 256  /* reduce.c's WP_SCRATCH_HEAD: counters, then the result slot */
#define HEAD_RESULT 192 /* reduce.c's WP_SCRATCH_RESULT */
#define REGION_ALIGN 256

typedef struct {
    wp_app *app;
    wp_backend *be;
    wp_batch_reduce *j;
    wp_spec sized; /* the job's spec with its block: what the kernel key says */
    wp_data_plan plan;
    bool untimed_ok; /* the job asked for no timing events */
    bool handed;     /* run by the batcher's runners (wp_batch_hand_reduce): they wait as --runner-wait says */
    int rc;
    wp_err err;
    /* the batch layout: byte offsets of this job's regions */
    size_t in_at, offsets_at, head_at, out_at, scratch_at;
} reduce_item;

static size_t align_up(size_t x) { return (x + REGION_ALIGN - 1) & ~(size_t)(REGION_ALIGN - 1); }
static bool is_emu(const wp_backend *b) { return !strcmp(wp_backend_name(b), "emu"); }
static bool one_value(const wp_family *f) { return f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG; }

/* ---- alone: today's path ---- */

/* untimed_ok: the request asked no timing; a one-value job over data already on the device then runs
 * without timing events (a host input's upload is timed, as the docs say of every job run alone). */
static int run_alone(wp_app *app, wp_backend *be, wp_batch_reduce *j, bool untimed_ok, wp_err *err) {
    wp_reduce_job job = j->job;
    job.untimed = untimed_ok && !j->in_host && !j->in2_host && !j->offsets_host;
    const size_t esize = wp_type_size(job.spec->type), out_size = wp_data_out_size(job.spec);
    wp_buf *in = NULL, *in2 = NULL, *offsets = NULL;
    int rc = 0;
    uint64_t t0 = wp_now_ns();
    if (j->in_host) {
        in = wp_buf_alloc(be, (size_t)job.n * esize, err);
        rc = in ? wp_buf_write(in, 0, j->in_host, (size_t)job.n * esize, err) : -1;
        job.in = in;
    }
    if (rc == 0 && j->in2_host) {
        in2 = wp_buf_alloc(be, (size_t)job.n * esize, err);
        rc = in2 ? wp_buf_write(in2, 0, j->in2_host, (size_t)job.n * esize, err) : -1;
        job.in2 = in2;
    }
    if (j->in_host || j->in2_host) j->upload_us = wp_us_since(t0);
    if (rc == 0 && j->offsets_host) {
        size_t bytes = (size_t)(job.groups + 1) * sizeof(uint64_t);
        offsets = wp_buf_alloc(be, bytes, err);
        rc = offsets ? wp_buf_write(offsets, 0, j->offsets_host, bytes, err) : -1;
        job.offsets = offsets;
    }
    if (rc == 0) rc = wp_reduce_run(app, be, &job, &j->res, err);
    if (rc == 0 && j->res.untimed) j->untimed = true, j->device_us = j->res.device_us;
    if (rc == 0 && j->out_host && !job.out && j->res.out) {
        t0 = wp_now_ns();
        rc = wp_buf_read(j->res.out, 0, j->out_host, (size_t)j->res.out_count * out_size, err);
        j->download_us = wp_us_since(t0);
        if (rc) wp_reduce_result_free(&j->res);
    }
    wp_buf_free(in);
    wp_buf_free(in2);
    wp_buf_free(offsets);
    return rc;
}

/* ---- batched on cuda ---- */

typedef struct {
    size_t table, first, upload_end, heads, download_end, total;
    unsigned blocks;
} batch_layout;

/* Places every job's regions (batch_layout above). */
static batch_layout layout_for(reduce_item *const *items, int n) {
    batch_layout l = {0};
    size_t at = 0;
    l.table = at;
    at = align_up(at + (size_t)n * sizeof(wp_data_params));
    l.first = at;
    at = align_up(at + (size_t)(n + 1) * sizeof(unsigned));
    for (int i = 0; i < n; i++) /* tile status: zeros */
        if (items[i]->plan.epoch_status) {
            items[i]->scratch_at = at;
            at = align_up(at + items[i]->plan.scratch_bytes);
        }
    for (int i = 0; i < n; i++) {
        const wp_batch_reduce *j = items[i]->j;
        items[i]->in_at = at;
        if (j->in_host) at = align_up(at + (size_t)j->job.n * wp_type_size(j->job.spec->type));
    }
    for (int i = 0; i < n; i++) {
        items[i]->offsets_at = at;
        if (items[i]->j->offsets_host) at = align_up(at + (size_t)(items[i]->j->job.groups + 1) * sizeof(uint64_t));
    }
    l.heads = at;
    for (int i = 0; i < n; i++, at += HEAD_BYTES) items[i]->head_at = at;
    l.upload_end = at;
    for (int i = 0; i < n; i++) {
        items[i]->out_at = at;
        if (!one_value(items[i]->sized.family)) at = align_up(at + items[i]->plan.out_bytes);
    }
    l.download_end = at;
    for (int i = 0; i < n; i++)
        if (!items[i]->plan.epoch_status) {
            items[i]->scratch_at = at;
            at = align_up(at + items[i]->plan.scratch_bytes);
        }
    l.total = at > 0 ? at : REGION_ALIGN;
    for (int i = 0; i < n; i++) l.blocks += items[i]->plan.grid;
    return l;
}

static void default_weights(const wp_reduce_job *job, wp_type acc, int radius, double *w) {
    for (int k = 0; k <= 2 * radius; k++) { /* as reduce.c: exact in the accumulator */
        double v = job->has_weights ? job->weights[k] : 1.0 / (2 * radius + 1);
        w[k] = wp_value_to_double(acc, wp_value_from_double(acc, v));
    }
}

/* Job i's parameter block (as wp_reduce_run makes it) and its head, in the host image: base is the
 * image's device address, dev the batch buffer's (the scratch past the outputs stays there). */
static void item_params(const reduce_item *it, uint64_t base, uint64_t dev, unsigned char *h, wp_data_params *p) {
    const wp_spec *s = &it->sized;
    const wp_family *f = s->family;
    const wp_reduce_job *job = &it->j->job;
    const wp_type t = s->type, acc = wp_data_acc_type(s);
    uint64_t ident = 0;
    if (f->flags & WP_F_OP) wp_op_identity(&s->op, acc, &ident);
    *p = (wp_data_params){
        .n = job->n, .groups = it->plan.groups, .init = ident, .seed = job->seed, .kind = job->gen_kind};
    if ((f->flags & WP_F_SCAN) && job->has_init) {
        p->init = wp_data_to_acc(t, acc, job->init);
        p->has_init = 1;
    }
    if (f->flags & WP_F_RADIUS) default_weights(job, acc, s->data.radius, p->weights);
    p->in = it->j->in_host ? base + it->in_at : (job->in ? wp_buf_addr(job->in) : 0);
    p->aux = it->j->offsets_host ? base + it->offsets_at : 0;
    p->counter = base + it->head_at;
    p->out = one_value(f) ? base + it->head_at + HEAD_RESULT : base + it->out_at;
    p->scratch = (it->plan.epoch_status ? base : dev) + it->scratch_at;
    p->epoch = 1; /* device_scan: zeroed status is older than any epoch */
    memset(h + it->head_at, 0, HEAD_BYTES);
    if (one_value(f) && s->data.strategy == WP_STRAT_ATOMIC) /* blocks combine into the identity */
        wp_data_store(acc, h + it->head_at + HEAD_RESULT, 0, ident);
}

/* The host image up to the heads: parameters, block starts, zeroed status, inputs, offsets, heads. */
static void image_fill(reduce_item *const *items, int n, const batch_layout *l, uint64_t base, uint64_t dev,
                       unsigned char *h) {
    memset(h, 0, l->upload_end);
    wp_data_params *table = (wp_data_params *)(h + l->table);
    unsigned *first = (unsigned *)(h + l->first);
    unsigned blocks = 0;
    for (int i = 0; i < n; i++) {
        const reduce_item *it = items[i];
        item_params(it, base, dev, h, &table[i]);
        first[i] = blocks;
        blocks += it->plan.grid;
        const wp_reduce_job *job = &it->j->job;
        if (it->j->in_host) memcpy(h + it->in_at, it->j->in_host, (size_t)job->n * wp_type_size(job->spec->type));
        if (it->j->offsets_host)
            memcpy(h + it->offsets_at, it->j->offsets_host, (size_t)(job->groups + 1) * sizeof(uint64_t));
    }
    first[n] = blocks;
}

/* The image and the launch's parameters, for where the image lands (wp_launch_io.fill). */
typedef struct {
    reduce_item *const *items;
    int n;
    const batch_layout *l;
    uint64_t dev; /* the batch buffer's address */
    wp_data_params *p;
} grid_image;

static void grid_image_fill(void *ctx, uint64_t base, void *image) {
    grid_image *g = ctx;
    image_fill(g->items, g->n, g->l, base, g->dev, image);
    *g->p = (wp_data_params){.in = base + g->l->table, .aux = base + g->l->first, .n = (unsigned long long)g->n};
}

/* The same where the image and its scratch lie in one buffer at base (a resident's). */
static void resident_image_fill(void *ctx, uint64_t base, void *image) {
    grid_image *g = ctx;
    g->dev = base;
    grid_image_fill(ctx, base, image);
}

/* Whether the batch's kernel only loads and stores on its image (zero-copy may run it, wp_launch_io):
 * every job in one block. Blocks of one job meet through atomics and tickets in the image's heads and
 * scratch (reduce.cu), which need device memory. */
static bool plain_access(reduce_item *const *items, int n) {
    for (int i = 0; i < n; i++)
        if (items[i]->plan.grid > 1) return false;
    return true;
}

/* What a job's result says before its run: the strategy, the launch's shape and the kernel (the batch's
 * rk); its values zero. */
static void item_facts(reduce_item *it, const wp_ready_kernel *rk) {
    const wp_spec *s = &it->sized;
    wp_batch_reduce *j = it->j;
    wp_reduce_result *r = &j->res;
    memset(r, 0, sizeof *r);
    r->index = -1;
    r->acc_type = wp_data_acc_type(s);
    r->strategy = s->data.strategy;
    r->deterministic = wp_data_deterministic(s);
    r->count = j->job.n;
    r->grid = it->plan.grid;
    r->block = it->plan.block;
    memcpy(r->key_text, rk->key_text, sizeof r->key_text);
    memcpy(r->hash, rk->hash, sizeof r->hash);
    r->source = rk->source;
    r->compiled = true;
    /* the batch's lookup of its kernel, made once for every job of it after they left the queue: in no
     * other field (a handed job's hand-off leaves it out) */
    r->key_us = rk->key_us;
    r->cache_us = rk->cache_us;
    r->compile_ms = rk->compile_ms;
    r->load_us = rk->load_us;
}

/* A job's results out of the downloaded image, as wp_reduce_run gives them. */
static void item_results(reduce_item *it, const unsigned char *h, const wp_ready_kernel *rk, double kernel_us) {
    const wp_spec *s = &it->sized;
    const wp_family *f = s->family;
    wp_batch_reduce *j = it->j;
    wp_reduce_result *r = &j->res;
    const wp_type t = s->type, acc = wp_data_acc_type(s);
    item_facts(it, rk);
    r->kernel_us = kernel_us;
    uint64_t ident = 0;
    bool has_ident = (f->flags & WP_F_OP) && wp_op_identity(&s->op, acc, &ident);
    const unsigned char *result = h + it->head_at + HEAD_RESULT;
    if (s->data.stat) { /* a statistic's accumulator (zeros for no elements) */
        r->has_value = true;
        memset(r->stat_acc, 0, sizeof r->stat_acc); /* what the kernel writes, the rest zero (as the emulator's) */
        if (j->job.n > 0) memcpy(r->stat_acc, result, wp_stat_acc_bytes(wp_stat_acc(s->data.stat)));
    } else if (f->data_out == WP_DATA_VALUE) {
        r->has_value = j->job.n > 0 || has_ident;
        r->acc_value = j->job.n > 0 ? wp_data_load(acc, result, 0) : ident;
        r->value = wp_data_from_acc(t, acc, r->acc_value);
    } else if (f->data_out == WP_DATA_ARG && j->job.n > 0) {
        r->has_value = true;
        r->acc_value = wp_data_load(acc, result, 0);
        r->value = wp_data_from_acc(t, acc, r->acc_value);
        memcpy(&r->index, result + 8, sizeof r->index);
    } else if (!one_value(f)) {
        r->out_count = it->plan.out_bytes / wp_type_size(t);
        if (j->out_host && it->plan.out_bytes) memcpy(j->out_host, h + it->out_at, it->plan.out_bytes);
    }
}

/* The batched kernel. On cuda from memory only, wherever the leader runs: when it is not there yet
 * the background builder is asked for it (bgbuild.h), with the batch's size as the ask's weight (a
 * key seen alone once or twice is not worth a second compile), and this batch runs its jobs alone, so
 * a compile never holds up a batch (and every request queued behind it). On emu, with "compile", it is built
 * here (CI compiles the templates), from memory only when the leader may not wait for a compile. */
static int batch_kernel(reduce_item *lead, bool cuda, int n, wp_ready_kernel *rk, wp_err *err) {
    wp_spec bs;
    if (wp_spec_copy(&bs, &lead->sized)) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    bs.data.batched = true;
    int rc;
    if (cuda) {
        rc = wp_app_kernel_memory(lead->app, &bs, lead->be, rk, err);
        if (rc > 0) wp_bgbuild_want(lead->app->bgbuild, &bs, lead->be, n > 1 ? WP_BGBUILD_THRESHOLD : 1);
    } else {
        rc = lead->j->job.memory_only ? wp_app_kernel_peek(lead->app, &bs, lead->be, rk, err)
                                      : wp_app_kernel_get(lead->app, &bs, lead->be, rk, err);
    }
    wp_spec_free(&bs);
    return rc;
}

/* hook's meanwhile (wp_run_meanwhile: called once, then cleared), from a launch's wait */
static void run_hook(void *hook) { wp_run_meanwhile(hook); }

/* One upload, one launch, one download; hook: the job's meanwhile hook, for a batch of it alone. */
static int run_grid(reduce_item *const *items, int n, const wp_ready_kernel *rk, wp_run_timing *hook, wp_err *err) {
    reduce_item *lead = items[0];
    batch_layout l = layout_for(items, n);
    unsigned char *h = malloc(l.download_end > 0 ? l.download_end : 1);
    if (!h) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for a batch of %d jobs", n);
    wp_buf *buf = wp_batch_mem_take(lead->app->batch_mem, lead->be, l.total, err);
    int rc = buf ? 0 : -1;
    wp_run_timing t = {0};
    if (rc == 0) {
        wp_data_params p = {0};
        grid_image g = {.items = items, .n = n, .l = &l, .dev = wp_buf_addr(buf), .p = &p};
        void *params[] = {&p};
        wp_launch launch = {.grid = {l.blocks, 1, 1},
                            .block = {lead->plan.block, 1, 1},
                            .smem_bytes = lead->plan.smem,
                            .params = params};
        void *fns[] = {rk->fn};
        /* the upload, the launch (none when every job is empty) and the download: one wait, timed
         * with events when any job asks */
        wp_launch_io io = {.buf = buf,
                           .write_len = l.upload_end,
                           .read_offset = l.heads,
                           .read_len = l.download_end > l.heads ? l.download_end - l.heads : 0,
                           .dst = h + l.heads,
                           .untimed = true,
                           .fill = grid_image_fill,
                           .fill_ctx = &g,
                           .image_len = l.download_end, /* the scratch past it: in buf, on the device */
                           .zero_copy_ok = plain_access(items, n),
                           .wait = lead->handed ? lead->app->runner_wait : WP_WAIT_DEFAULT,
                           .meanwhile = run_hook,
                           .meanwhile_ctx = hook};
        for (int i = 0; i < n; i++) io.untimed &= items[i]->untimed_ok;
        rc = wp_backend_launch_io(lead->be, fns, &launch, l.blocks ? 1 : 0, &io, &t, err);
        wp_batch_mem_put(lead->app->batch_mem, buf, rc == 0);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        item_results(items[i], h, rk, t.kernel_us);
        items[i]->j->upload_us = t.upload_us;
        items[i]->j->download_us = t.download_us;
        items[i]->j->untimed = t.untimed;
        items[i]->j->device_us = t.device_us;
    }
    free(h);
    return rc;
}

/* Whether a batch of one may go to the device's resident (cuda_resident.c): a job of one block of a
 * family whose batched kernel serves as one (WP_F_RESIDENT, statistics aside), run on its HTTP thread
 * (not handed: the device was idle), untimed. */
static bool resident_ok(reduce_item *const *items, int n) {
    const reduce_item *it = items[0];
    return n == 1 && !it->handed && it->untimed_ok && (it->sized.family->flags & WP_F_RESIDENT) &&
           !it->sized.data.stat && it->plan.grid == 1 && it->plan.smem == 0;
}

/* What a resident's job answers: the bytes item_results reads (a value, or a value and its index, in the
 * head's result slot; or the outputs), not the whole head. */
static size_t answer_at(const reduce_item *it) {
    return one_value(it->sized.family) ? it->head_at + HEAD_RESULT : it->out_at;
}
static size_t answer_len(const reduce_item *it) {
    const wp_family *f = it->sized.family;
    if (f->data_out == WP_DATA_ARG) return 16;
    return one_value(f) ? wp_type_size(wp_data_acc_type(&it->sized)) : it->plan.out_bytes;
}

/* A batch of one through the device's resident of the batched kernel's resident build, when that is in
 * memory (else the background builder is asked for it, as batch_warp.c does): 0 done, 1 not taken. The
 * lookup's time is the device's (device_us). */
static int run_resident(reduce_item *const *items, const wp_ready_kernel *rk, wp_run_timing *hook, wp_err *err) {
    reduce_item *lead = items[0];
    const uint64_t t0 = wp_now_ns();
    batch_layout l = layout_for(items, 1);
    wp_data_params p = {0};
    grid_image g = {.items = items, .n = 1, .l = &l, .p = &p};
    wp_resident_image im = {.block = lead->plan.block,
                            .smem = lead->plan.smem,
                            .image_len = l.upload_end,
                            .total = l.total,
                            .first_at = l.first,
                            .jobs = 1,
                            .answer_at = answer_at(lead),
                            .answer_len = answer_len(lead),
                            .fill = resident_image_fill,
                            .fill_ctx = &g,
                            .hook = hook};
    if (!wp_backend_cuda_resident_image_fits(lead->be, &im)) return 1;
    wp_spec rs;
    if (wp_spec_copy(&rs, &lead->sized)) return 1;
    rs.data.batched = rs.resident = true;
    wp_ready_kernel res;
    wp_err kerr = {0};
    int rc = wp_app_kernel_memory(lead->app, &rs, lead->be, &res, &kerr);
    if (rc > 0) wp_bgbuild_want(lead->app->bgbuild, &rs, lead->be, 1);
    wp_spec_free(&rs);
    if (rc != 0) return 1;
    unsigned char *h = malloc(l.download_end);
    double device_us = 0;
    im.image = h;
    rc = h ? wp_backend_cuda_run_resident_image(lead->be, res.fn, &im, &device_us, err) : 1;
    wp_app_kernel_put(lead->app, &res);
    if (rc == 0) {
        item_results(lead, h, rk, 0);
        lead->j->upload_us = lead->j->download_us = 0;
        lead->j->untimed = true;
        lead->j->device_us = wp_us_since(t0);
    }
    free(h);
    return rc;
}

/* The batcher's run: on cuda a batch — of one too — is one launch of the batched kernel: one upload,
 * one launch, one download, waited for once, where a job alone waits for each of its copies and its
 * launch. On emu, or with no batched kernel in memory yet (it is being built, bgbuild.h): the jobs
 * alone, one after the other. */
static void reduce_batch(wp_batch_job *const *jobs, int n) {
    reduce_item *items[WP_BATCH_MAX_LIMIT] = {0};
    for (int i = 0; i < n; i++) items[i] = jobs[i]->payload;
    reduce_item *lead = items[0];
    const bool cuda = !is_emu(lead->be);
    wp_ready_kernel rk = {0};
    wp_err kerr = {0};
    /* On emu, with "compile", the batched kernel is built too, as cuda would: CI compiles the templates. */
    const bool tried = cuda || (n > 1 && lead->j->job.compile_on_emu);
    const int got = tried ? batch_kernel(lead, cuda, n, &rk, &kerr) : -1;
    bool defer = !cuda && tried && got != 0; /* emu: not in memory (to a worker, which may compile), or failed */
    if (cuda && got > 0 && lead->j->job.memory_only) {
        /* on an HTTP thread, alone: only if the plain kernel is in memory, asked before any upload (else
         * every job would upload its input, then defer) */
        wp_ready_kernel plain;
        wp_err perr = {0};
        int have = wp_app_kernel_memory(lead->app, &lead->sized, lead->be, &plain, &perr);
        if (have == 0) wp_app_kernel_put(lead->app, &plain);
        defer = have != 0;
        kerr = (wp_err){0};
    }
    if (defer) {
        for (int i = 0; i < n; i++) {
            items[i]->rc = got > 0 ? 1 : -1;
            items[i]->err = kerr;
        }
        return;
    }
    if (got == 0 && cuda) {
        wp_err err = {0};
        for (int i = 0; i < n; i++) wp_backend_job_enter(lead->be); /* the device's load, for placement */
        /* a batch of a job alone on its own thread: its meanwhile hook, once, through the resident's wait
         * or, where the resident did not take it, the launch's; its result's facts set for it first */
        wp_run_timing hook = {0};
        if (n == 1 && !lead->handed && lead->j->meanwhile) {
            hook = (wp_run_timing){.meanwhile = lead->j->meanwhile, .meanwhile_ctx = lead->j->meanwhile_ctx};
            item_facts(lead, &rk);
        }
        int rc = resident_ok(items, n) ? run_resident(items, &rk, &hook, &err) : 1;
        if (rc > 0) rc = run_grid(items, n, &rk, &hook, &err);
        for (int i = 0; i < n; i++) wp_backend_job_leave(lead->be);
        for (int i = 0; i < n; i++) {
            items[i]->rc = rc;
            if (rc) items[i]->err = err;
            if (rc == 0) /* /metrics: each job of the launch, as reduce.c counts one run alone (untimed: the
                          * batch's round trip, an upper bound) */
                wp_metrics_observe_kernel(
                    items[i]->app->metrics, items[i]->j->job.spec->family->name, wp_backend_name(lead->be),
                    (items[i]->j->untimed ? items[i]->j->device_us : items[i]->j->res.kernel_us) / 1e6);
        }
    } else {
        if (tried && got < 0)
            wp_log(n > 1 ? WP_LOG_WARN : WP_LOG_DEBUG, "no batched kernel (%s): %d jobs run alone", kerr.msg, n);
        for (int i = 0; i < n; i++) /* timed, as a lone small job has always been (tests/gpu/test_gpu_batch.c) */
            items[i]->rc = run_alone(items[i]->app, items[i]->be, items[i]->j, false, &items[i]->err);
    }
    wp_app_kernel_put(lead->app, &rk);
}

/* Whether the job may run in a batch: small, checked (what reduce.c would refuse runs alone, to be
 * refused there), with its input on the host or in a buffer of be (not a sharded one: that runs on
 * every device of its shards, reduce.c), its results not in a buffer. */
static bool batchable(wp_app *app, wp_backend *be, const wp_batch_reduce *j) {
    const wp_reduce_job *job = &j->job;
    const wp_spec *s = job->spec;
    const wp_family *f = s->family;
    const size_t esize = wp_type_size(s->type);
    if (!app->batcher || !app->batch_mem || wp_batcher_max(app->batcher) < 2) return false;
    /* The emulator runs a batch's jobs one after the other anyway: batched, they would only wait for
     * each other. Only "compile" batches there (the batched kernel is built, as on cuda). */
    if (is_emu(be) && !job->compile_on_emu) return false;
    if (!f || !(f->flags & WP_F_DATA) || !f->plan || (f->flags & WP_F_NO_INPUT)) return false;
    if (f->data_out == WP_DATA_COUNTS) return false; /* histogram: its edges table and zeroed counts, alone */
    if (job->out || job->repeat > 1 || job->graph || job->n * esize > WP_BATCH_INPUT_MAX) return false;
    if (job->in2 || j->in2_host || s->data.map_y) return false; /* the batch layout has one input per job */
    if (!j->in_host && !(job->in && !wp_buf_shards(job->in) && wp_buf_backend(job->in) == be &&
                         job->n <= wp_buf_size(job->in) / esize))
        return false;
    if ((f->flags & WP_F_SEGMENTS) && !j->offsets_host) return false;
    if (s->data.strategy == WP_STRAT_REDUX && !is_emu(be) && wp_backend_facts(be)->sm < 80) return false;
    uint64_t ident;
    if ((f->flags & WP_F_SCAN) && s->data.exclusive && !job->has_init &&
        !wp_op_identity(&s->op, wp_data_acc_type(s), &ident))
        return false;
    return true;
}

/* "data|<spec key>|smem<bytes>|m<0|1>|c<0|1>": what a batch's jobs share (no printf: every small job). */
static void batch_key(char *out, size_t cap, const char *spec_key, unsigned smem, bool memory_only, bool compile) {
    char num[24];
    const int nl = wp_json_fmt_u64(num, smem);
    const size_t kl = strlen(spec_key);
    if (5 + kl + 5 + (size_t)nl + 6 + 1 > cap) {
        out[0] = 0;
        return;
    }
    char *p = out;
    memcpy(p, "data|", 5), p += 5;
    memcpy(p, spec_key, kl), p += kl;
    memcpy(p, "|smem", 5), p += 5;
    memcpy(p, num, (size_t)nl), p += nl;
    memcpy(p, memory_only ? "|m1|c" : "|m0|c", 5), p += 5;
    *p++ = compile ? '1' : '0';
    *p = 0;
}

/* The job's queue entry: its spec sized for n, its plan and its batch key. -1 (err) when out of
 * memory; 1 when the spec has no key text (the job runs alone). */
static int item_make(wp_app *app, wp_backend *be, wp_batch_reduce *j, bool untimed_ok, reduce_item *it,
                     wp_batch_job *bj, wp_err *err) {
    *it = (reduce_item){.app = app, .be = be, .j = j, .untimed_ok = untimed_ok, .handed = it->handed};
    bj->owner = be;
    bj->run = reduce_batch;
    bj->payload = it;
    bj->no_wait = j->job.memory_only;
    if (wp_spec_copy(&it->sized, j->job.spec)) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    const wp_family *f = it->sized.family;
    wp_spec_size_block(&it->sized, j->job.n); /* in place: no second copy of the spec */
    f->plan(&it->sized, j->job.n, j->job.groups, &it->plan);
    char spec_key[WP_SPEC_KEY_MAX];
    if (wp_spec_key_text(&it->sized, spec_key, sizeof spec_key) < 0) return 1;
    batch_key(bj->key, sizeof bj->key, spec_key, it->plan.smem, j->job.memory_only, j->job.compile_on_emu);
    return 0;
}

double wp_batch_reduce_own_us(const wp_batch_reduce *j, double elapsed_us) {
    const wp_reduce_result *r = &j->res;
    const double run = j->untimed ? j->device_us : j->upload_us + r->kernel_us + j->download_us;
    const double own = elapsed_us - run - r->key_us - r->cache_us - r->load_us;
    return own > 0 ? wp_us_round_ns(own) : 0;
}

static void job_start(wp_batch_reduce *j) {
    j->size = 1;
    j->device_us = 0;
    j->queue_us = 0;
}

int wp_batch_run_reduce(wp_app *app, wp_backend *be, wp_batch_reduce *j, wp_err *err) {
    job_start(j);
    const bool untimed_ok = j->untimed;
    j->untimed = false; /* until a batched launch says otherwise */
    if (!batchable(app, be, j)) return run_alone(app, be, j, untimed_ok, err);
    reduce_item it = {0};
    wp_batch_job bj = {.t_entry_ns = wp_now_ns()}; /* the entry's making is the batch's stage too */
    int rc = item_make(app, be, j, untimed_ok, &it, &bj, err);
    if (rc > 0) {
        rc = run_alone(app, be, j, untimed_ok, err);
    } else if (rc == 0) {
        j->size = wp_app_inline_alone(app, be, bj.no_wait) ? wp_batcher_run_alone(app->batcher, &bj)
                                                           : wp_batcher_submit(app->batcher, &bj);
        rc = it.rc;
        if (rc < 0) *err = it.err;
        j->queue_us = wp_batch_reduce_own_us(j, wp_us_since(bj.t_queued_ns));
    }
    wp_spec_free(&it.sized); /* a failed copy left nothing to free: safe */
    return rc;
}

/* ---- handed to the runners ---- */

typedef struct {
    reduce_item it;
    wp_batch_job bj;
    wp_app *app;
    wp_backend *be;
    wp_batch_reduce *j;
    bool untimed_ok;
    wp_batch_done_fn done;
    void *ctx;
} handed_item;

static handed_item *handed_of(wp_batch_job *bj) {
    return (handed_item *)(void *)((char *)bj - offsetof(handed_item, bj));
}

/* On the runner, before the job is batched: its spec sized, its plan and its key (item_make). */
static bool handed_prepare(wp_batch_job *bj) {
    handed_item *h = handed_of(bj);
    h->it.handed = true;
    int rc = item_make(h->app, h->be, h->j, h->untimed_ok, &h->it, bj, &h->it.err);
    if (rc < 0) h->it.rc = -1;
    if (rc > 0) snprintf(bj->key, sizeof bj->key, "alone|%p", (void *)bj); /* no key text: a batch of its own */
    return rc >= 0;
}

/* On the runner, after the batch: the job's end, then the owner's done (which may free the job). */
static void handed_done(wp_batch_job *bj) {
    handed_item *h = handed_of(bj);
    wp_batch_reduce *j = h->j;
    j->size = bj->size;
    const int rc = h->it.rc;
    const wp_err err = h->it.err;
    wp_batch_done_fn done = h->done;
    void *ctx = h->ctx;
    wp_spec_free(&h->it.sized);
    done(ctx, rc, &err); /* h is the caller's room: given back on its thread */
}

size_t wp_batch_hand_reduce_room(void) { return sizeof(handed_item); }

int wp_batch_hand_reduce(wp_app *app, wp_backend *be, wp_batch_reduce *j, wp_batch_park_fn park, wp_batch_done_fn done,
                         void *ctx, void *room) {
    if (is_emu(be) || !j->job.memory_only || !batchable(app, be, j)) return 1;
    handed_item *h = room;
    if (!park(ctx)) return 1; /* as it was: the caller runs it */
    job_start(j);
    *h = (handed_item){.app = app, .be = be, .j = j, .untimed_ok = j->untimed, .done = done, .ctx = ctx};
    j->untimed = false;
    h->bj.on_done = handed_done;
    h->bj.prepare = handed_prepare;
    h->bj.owner = be;
    if (wp_batcher_hand(app->batcher, &h->bj) != 0) { /* no runner took it (stopping, no memory) */
        h->it.rc = -1;
        WP_FAIL(&h->it.err, 503, "busy", "", "the batcher took no more jobs; retry shortly");
        handed_done(&h->bj);
    }
    return 0;
}
