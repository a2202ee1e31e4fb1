/* reduce.c — the data-parallel engine (reduce.h): checks a job against its family, plans it
 * (kernels/data.c), gets its kernel through the cache, and runs it: one launch on cuda with pooled
 * scratch, or the family's CPU reference on emu over the buffers' host memory.
 *
 * Scratch (cuda): one device buffer per job in flight, taken from a small per-engine pool. Layout:
 * [counters: 33 x 4 bytes | ... | result slot at WP_SCRATCH_RESULT, 16 bytes | ... ] then, from
 * WP_SCRATCH_HEAD, the family's scratch (grid partials, gmem trees, tile status). Kernels leave the
 * counter at 0; device_scan's tile status is made stale by an epoch that goes up every launch, so a
 * pooled buffer is zeroed only when it is made (and when the epoch wraps).
 * Owns: wp_reduce_engine, its scratch buffers, and result buffers it allocates until handed over. */
#include "reduce.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "kernels/stats.h"

#define WP_SCRATCH_HEAD 256
#define WP_SCRATCH_RESULT 192 /* after the tickets: 1 + up to 32 counters (templates/reduce.cu) */
#define WP_SCRATCH_MIN (64u << 10)
#define WP_SCRATCH_POOL_MAX 8   /* idle scratch buffers kept per engine */
#define WP_EPOCH_MAX (1u << 30) /* status words hold epoch << 2 in 32 bits */

typedef struct scratch {
    struct scratch *next;
    wp_backend *backend;
    wp_buf *buf;
    size_t cap;
    unsigned generation; /* the backend's context generation when allocated */
    unsigned epoch;
    size_t status_clean;  /* bytes from WP_SCRATCH_HEAD holding only zeros or tile status records ... */
    unsigned status_kind; /* ... of this size (WP_TILE_RECORD_*; 0: only zeros) */
} scratch;

struct wp_reduce_engine {
    pthread_mutex_t lock;
    scratch *idle;
    int n_idle;
};

wp_reduce_engine *wp_reduce_engine_open(void) {
    wp_reduce_engine *e = calloc(1, sizeof *e);
    if (e && pthread_mutex_init(&e->lock, NULL) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

static void scratch_free(scratch *s) {
    if (!s) return;
    wp_buf_free(s->buf);
    free(s);
}

void wp_reduce_engine_close(wp_reduce_engine *e) {
    if (!e) return;
    for (scratch *s = e->idle, *next; s; s = next) {
        next = s->next;
        scratch_free(s);
    }
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* An idle scratch of backend b with at least `need` bytes, or a new zeroed one. */
static scratch *scratch_take(wp_reduce_engine *e, wp_backend *b, size_t need, wp_err *err) {
    unsigned generation = wp_backend_generation(b);
    scratch *found = NULL, *stale = NULL;
    pthread_mutex_lock(&e->lock);
    for (scratch **pp = &e->idle; *pp;) {
        scratch *s = *pp;
        if (s->backend == b && s->generation != generation) { /* died with an old context */
            *pp = s->next;
            s->next = stale;
            stale = s;
            e->n_idle--;
            continue;
        }
        if (!found && s->backend == b && s->cap >= need) {
            *pp = s->next;
            found = s;
            e->n_idle--;
            continue;
        }
        pp = &s->next;
    }
    pthread_mutex_unlock(&e->lock);
    for (scratch *s = stale, *next; s; s = next) {
        next = s->next;
        scratch_free(s);
    }
    if (found) return found;
    scratch *s = calloc(1, sizeof *s);
    if (!s) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
        return NULL;
    }
    s->backend = b;
    s->generation = generation;
    s->cap = need < WP_SCRATCH_MIN ? WP_SCRATCH_MIN : need;
    s->buf = wp_buf_alloc(b, s->cap, err);
    if (!s->buf || wp_buf_memset(s->buf, 0, 0, s->cap, err)) {
        scratch_free(s);
        return NULL;
    }
    s->status_clean = s->cap - WP_SCRATCH_HEAD;
    return s;
}

static void scratch_put(wp_reduce_engine *e, scratch *s) {
    pthread_mutex_lock(&e->lock);
    bool keep = e->n_idle < WP_SCRATCH_POOL_MAX;
    if (keep) {
        s->next = e->idle;
        e->idle = s;
        e->n_idle++;
    }
    pthread_mutex_unlock(&e->lock);
    if (!keep) scratch_free(s);
}

/* The next epoch of a scratch's tile status (zeroing it when the epoch wraps). */
static int scratch_epoch(scratch *s, unsigned *epoch, wp_err *err) {
    if (s->epoch + 1 >= WP_EPOCH_MAX) {
        if (wp_buf_memset(s->buf, 0, 0, s->cap, err)) return -1;
        s->epoch = 0;
        s->status_clean = s->cap - WP_SCRATCH_HEAD;
        s->status_kind = 0;
    }
    *epoch = ++s->epoch;
    return 0;
}

/* ---- checks ---- */

static bool is_emu(wp_backend *b) { return !strcmp(wp_backend_name(b), "emu"); }

int wp_reduce_check(wp_backend *b, const wp_reduce_job *job, wp_err *err) {
    const wp_spec *s = job->spec;
    const wp_family *f = s->family;
    if (!f || !(f->flags & WP_F_DATA) || !f->plan || !f->data_emulate)
        return WP_FAIL(err, 400, "not_a_data_family", "family", "family %s is not a data-parallel job",
                       f ? f->name : "(none)");
    if (f->flags & WP_F_KEYS) /* two inputs, two outputs: engine/bykey.c runs it */
        return WP_FAIL(err, 400, "not_a_data_family", "family", "family %s runs through wp_bykey_run", f->name);
    size_t esize = wp_type_size(s->type);
    if (!(f->flags & WP_F_NO_INPUT)) {
        if (!job->in && job->n) return WP_FAIL(err, 400, "missing_field", "data", "no input data");
        if (job->in && wp_buf_backend(job->in) != b)
            return WP_FAIL(err, 400, "backend_mismatch", "backend", "the input lives on %s, the job runs on %s",
                           wp_backend_name(wp_buf_backend(job->in)), wp_backend_name(b));
        if (job->in && job->n > wp_buf_size(job->in) / esize)
            return WP_FAIL(err, 400, "out_of_range", "count", "%llu elements do not fit a buffer of %zu bytes",
                           (unsigned long long)job->n, wp_buf_size(job->in));
    }
    if (s->data.map_y != (job->in2 != NULL)) /* the second input and a map that reads it come together */
        return WP_FAIL(err, 400, s->data.map_y ? "missing_field" : "unknown_field", s->data.map_y ? "map" : "data2",
                       s->data.map_y ? "the map reads y: give a second input (data2, data2_b64, buffer2 or shm2)"
                                     : "a second input is read only by a map over y");
    if (job->in2 && (wp_buf_backend(job->in2) != b || job->n > wp_buf_size(job->in2) / esize))
        return WP_FAIL(err, 400, "bad_length", "data2", "the second input needs %llu elements on %s",
                       (unsigned long long)job->n, wp_backend_name(b));
    if (job->in2 && (wp_buf_shards(job->in2) || (job->in && wp_buf_shards(job->in))))
        return WP_FAIL(err, 400, "shard_unsupported", "buffer2", "a map over two inputs takes no sharded buffer");
    if (f->flags & WP_F_SEGMENTS) {
        if (!job->offsets || wp_buf_backend(job->offsets) != b ||
            wp_buf_size(job->offsets) < (job->groups + 1) * sizeof(uint64_t))
            return WP_FAIL(err, 400, "bad_offsets", "offsets", "segmented_reduce needs groups + 1 offsets on %s",
                           wp_backend_name(b));
    }
    if ((f->flags & WP_F_BINS) && (job->groups < 1 || job->groups > WP_HIST_BINS_MAX ||
                                   (s->data.strategy == WP_STRAT_SMEM && job->groups > WP_HIST_SMEM_BINS)))
        return WP_FAIL(err, 400, "bad_bins", "bins", "bins must be 1..%u (1..%u with strategy smem)", WP_HIST_BINS_MAX,
                       WP_HIST_SMEM_BINS);
    if ((f->flags & WP_F_BINS) && (!job->offsets || wp_buf_backend(job->offsets) != b ||
                                   wp_buf_size(job->offsets) < (job->groups + 1) * sizeof(double)))
        return WP_FAIL(err, 400, "bad_offsets", "range", "a histogram needs its bins + 1 edges on %s",
                       wp_backend_name(b));
    if (s->data.strategy == WP_STRAT_REDUX && !is_emu(b)) {
        const wp_device_info di = *wp_backend_facts(b);
        if (di.sm < 80)
            return WP_FAIL(err, 409, "backend_unsupported", "strategy",
                           "strategy redux needs sm_80; the device is sm_%d", di.sm);
    }
    uint64_t ident;
    if ((f->flags & WP_F_SCAN) && s->data.exclusive && !job->has_init &&
        !wp_op_identity(&s->op, wp_data_acc_type(s), &ident))
        return WP_FAIL(err, 400, "init_required", "init",
                       "an exclusive scan with an expression needs \"init\" (an expression has no identity)");
    return 0;
}

/* ---- the run ---- */

static void default_weights(const wp_reduce_job *job, wp_type acc, int radius, double *w) {
    for (int k = 0; k <= 2 * radius; k++) {
        double v = job->has_weights ? job->weights[k] : 1.0 / (2 * radius + 1);
        w[k] = wp_value_to_double(acc, wp_value_from_double(acc, v)); /* exact in the accumulator */
    }
}

/* Runs the planned launch on cuda: scratch, the atomic start value, the launch, the result slot (its
 * first result_len bytes: what the kernel writes; a statistic's accumulator leaves the rest unwritten). */
static int run_cuda(struct wp_app *app, wp_backend *b, const wp_spec *s, void *fn, const wp_data_plan *plan,
                    wp_data_params *p, uint64_t ident, const wp_reduce_job *job, uint8_t result[WP_STAT_ACC_BYTES],
                    size_t result_len, wp_reduce_result *res, wp_err *err) {
    int repeat = job->repeat;
    const wp_family *f = s->family;
    scratch *sc = scratch_take(app->reduce, b, WP_SCRATCH_HEAD + plan->scratch_bytes, err);
    if (!sc) return -1;
    uint64_t base = wp_buf_addr(sc->buf);
    bool one_value = f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG;
    p->counter = base;
    p->scratch = base + WP_SCRATCH_HEAD;
    if (one_value) p->out = base + WP_SCRATCH_RESULT;
    int rc = scratch_epoch(sc, &p->epoch, err);
    /* Tile status is trusted by its epoch stamp: bytes another family left there (partials that may
     * look like a stamp), or records of the other size (whose values land where this layout reads
     * stamps), are zeroed first; after any other family the region is no longer clean. */
    if (rc == 0 && plan->epoch_status) {
        bool same = sc->status_kind == plan->epoch_status || sc->status_kind == 0;
        if (!same || sc->status_clean < plan->scratch_bytes) {
            rc = wp_buf_memset(sc->buf, WP_SCRATCH_HEAD, 0, plan->scratch_bytes, err);
            if (rc == 0) sc->status_clean = plan->scratch_bytes;
        }
        if (rc == 0) sc->status_kind = plan->epoch_status;
    }
    if (!plan->epoch_status && plan->scratch_bytes) sc->status_clean = 0;
    if (rc == 0 && one_value && s->data.strategy == WP_STRAT_ATOMIC) { /* blocks combine into the identity */
        uint8_t start[16] = {0};
        wp_data_store(wp_data_acc_type(s), start, 0, ident);
        rc = wp_buf_write(sc->buf, WP_SCRATCH_RESULT, start, sizeof start, err);
    }
    /* Each repeat gets its own parameter block: device_scan needs a fresh epoch per launch (so a graph,
     * whose replays would repeat the epochs, is only for families without epoch-stamped status). */
    if (repeat < 1) repeat = 1;
    const bool graph = job->graph && !plan->epoch_status;
    /* Data kernels go as programmatic dependents (WP_LAUNCH_OVERLAP; sm_90 and later): the next
     * kernel's blocks are placed while this one finishes, so back-to-back jobs lose the launch gap.
     * Measured on H100 (bench/RESULTS.md): up to 1.5x the launches per second at 2^10..2^22 elements,
     * 4 % faster at 2^24 f32, within +-0.6 % either way at 2^28..2^30 (runs disagree): every size. */
    const bool overlap = !job->overlap_below || p->n * wp_type_size(s->type) < job->overlap_below;
    wp_data_params *ps = calloc((size_t)repeat, sizeof *ps);
    void **params = calloc((size_t)repeat, sizeof *params), **fns = calloc((size_t)repeat, sizeof *fns);
    wp_launch *ls = calloc((size_t)repeat, sizeof *ls);
    if (rc == 0 && (!ps || !params || !fns || !ls)) rc = WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    for (int i = 0; rc == 0 && i < repeat; i++) {
        ps[i] = *p;
        if (i > 0) rc = scratch_epoch(sc, &ps[i].epoch, err);
        params[i] = &ps[i];
        fns[i] = fn;
        ls[i] = (wp_launch){.grid = {plan->grid, 1, 1},
                            .block = {plan->block, 1, 1},
                            .smem_bytes = plan->smem,
                            .params = &params[i],
                            .flags = (overlap ? WP_LAUNCH_OVERLAP : 0u) | (graph && i == 0 ? WP_LAUNCH_GRAPH : 0u)};
    }
    /* one value: its slot comes back in the launch's own wait (one round trip, not two); untimed (no
     * events) when the job asks */
    if (rc == 0 && one_value) {
        wp_launch_io io = {.buf = sc->buf,
                           .read_offset = WP_SCRATCH_RESULT,
                           .read_len = result_len,
                           .dst = result,
                           .untimed = job->untimed};
        wp_run_timing t;
        rc = wp_backend_launch_io(b, fns, ls, repeat, &io, &t, err);
        res->kernel_us = t.kernel_us, res->untimed = t.untimed, res->device_us = t.device_us;
    } else if (rc == 0)
        rc = wp_backend_launch(b, fns, ls, repeat, &res->kernel_us, err);
    res->kernel_us /= repeat;
    free(ps);
    free(params);
    free(fns);
    free(ls);
    if (rc == 0)
        scratch_put(app->reduce, sc);
    else
        scratch_free(sc); /* its counter may be left mid-count */
    return rc;
}

static int reduce_run(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err);

int wp_reduce_run_local(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res,
                        wp_err *err) {
    if (job->in && wp_buf_shards(job->in)) {
        memset(res, 0, sizeof *res);
        return WP_FAIL(err, 400, "shard_unsupported", "buffer", "a sharded input runs through wp_reduce_run");
    }
    if (job->out && wp_buf_shards(job->out)) {
        memset(res, 0, sizeof *res);
        return WP_FAIL(err, 400, "shard_unsupported", "output",
                       "only a job over a sharded buffer writes a sharded one");
    }
    wp_backend_job_enter(b); /* the device's load, for placement */
    int rc = reduce_run(app, b, job, res, err);
    wp_backend_job_leave(b);
    return rc;
}

/* The kernel (its key and timings into res): from the cache or compiled, on cuda and on emu with
 * compile_on_emu; else the key alone. 0, 1 when only memory may be asked and it is not there, -1. */
static int reduce_kernel(struct wp_app *app, wp_backend *b, const wp_spec *s, const wp_reduce_job *job, bool emu,
                         wp_reduce_result *res, wp_ready_kernel *rk, wp_err *err) {
    if (emu && !job->compile_on_emu) {
        res->key_us = wp_app_kernel_key(app, s, res->key_text, sizeof res->key_text, res->hash);
        return 0;
    }
    int got = job->memory_only ? wp_app_kernel_peek(app, s, b, rk, err) : wp_app_kernel_get(app, s, b, rk, err);
    if (got) return got < 0 ? -1 : 1;
    memcpy(res->key_text, rk->key_text, sizeof res->key_text);
    memcpy(res->hash, rk->hash, sizeof res->hash);
    res->source = rk->source;
    res->compiled = true;
    res->key_us = rk->key_us, res->cache_us = rk->cache_us, res->compile_ms = rk->compile_ms,
    res->load_us = rk->load_us;
    return 0;
}

/* An array result's buffer: the job's (checked) or a new one the result owns. */
static int reduce_output(wp_backend *b, const wp_reduce_job *job, const wp_data_plan *plan, const wp_spec *s,
                         wp_reduce_result *res, wp_err *err) {
    res->out_count = plan->out_bytes / wp_data_out_size(s);
    if (job->out) {
        res->out = job->out;
        if (wp_buf_size(job->out) < plan->out_bytes || wp_buf_backend(job->out) != b)
            return WP_FAIL(err, 400, "bad_output", "output", "the output buffer needs %zu bytes on %s", plan->out_bytes,
                           wp_backend_name(b));
        return 0;
    }
    if (!(res->out = wp_buf_alloc(b, plan->out_bytes, err))) return -1;
    res->out_owned = true;
    return 0;
}

/* The family's launch plan for the job; a histogram's grid on cuda cut to what the device holds at once
 * (its counts do not depend on the grid). */
static void plan_job(wp_backend *b, const wp_spec *s, const wp_reduce_job *job, bool emu, wp_data_plan *plan) {
    s->family->plan(s, job->n, job->groups, plan);
    if ((s->family->flags & WP_F_BINS) && !emu) wp_plan_fit_device(plan, wp_backend_facts(b)->sms);
}

static int reduce_run(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err) {
    memset(res, 0, sizeof *res);
    res->index = -1;
    if (wp_reduce_check(b, job, err)) return -1;
    wp_spec sized;
    const wp_spec *s = wp_spec_sized(job->spec, job->n, &sized);
    const wp_family *f = s->family;
    const wp_type t = s->type, acc = wp_data_acc_type(s);
    const bool emu = is_emu(b);
    res->acc_type = acc;
    res->strategy = s->data.strategy;
    res->deterministic = wp_data_deterministic(s);
    res->count = job->n;

    wp_data_plan plan;
    plan_job(b, s, job, emu, &plan);
    res->grid = plan.grid;
    res->block = plan.block;

    uint64_t ident = 0;
    bool has_ident = (f->flags & WP_F_OP) && wp_op_identity(&s->op, acc, &ident);
    wp_data_params p = {.n = job->n, .groups = plan.groups, .init = ident, .seed = job->seed, .kind = job->gen_kind};
    if ((f->flags & WP_F_SCAN) && job->has_init) {
        p.init = wp_data_to_acc(t, acc, job->init);
        p.has_init = 1;
    }
    if (f->flags & WP_F_NO_INPUT) p.init = job->constant; /* generate */
    if (f->flags & WP_F_RADIUS) default_weights(job, acc, s->data.radius, p.weights);
    if (f->flags & WP_F_BINS) memcpy(p.weights, job->weights, sizeof p.weights); /* the binning (hist.h) */

    wp_ready_kernel rk = {0};
    int got = reduce_kernel(app, b, s, job, emu, res, &rk, err);
    if (got) return got;

    bool one_value = f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG;
    const size_t result_len = s->data.stat ? wp_stat_acc_bytes(wp_stat_acc(s->data.stat)) : 16; /* run_cuda */
    int rc = one_value ? 0 : reduce_output(b, job, &plan, s, res, err);
    if (rc == 0 && f->data_out == WP_DATA_COUNTS) rc = wp_buf_memset(res->out, 0, 0, plan.out_bytes, err);
    uint8_t result[WP_STAT_ACC_BYTES] = {0}; /* one value, an {accumulator, index} or a statistic's accumulator */
    if (rc == 0 && plan.grid > 0) {
        p.in = job->in ? wp_buf_addr(job->in) : 0;
        p.in2 = job->in2 ? wp_buf_addr(job->in2) : 0;
        p.aux = job->offsets ? wp_buf_addr(job->offsets) : 0;
        if (f->flags & WP_F_NO_INPUT) p.aux = job->gen_first; /* generate: the first element's index */
        if (!one_value) p.out = wp_buf_addr(res->out);
        if (emu) {
            if (one_value) p.out = (uint64_t)(uintptr_t)result;
            uint64_t t0 = wp_now_ns();
            f->data_emulate(s, &p, &plan);
            res->kernel_us = wp_us_since(t0);
        } else {
            rc = run_cuda(app, b, s, rk.fn, &plan, &p, ident, job, result, result_len, res, err);
        }
        const double us = res->untimed ? res->device_us : res->kernel_us; /* an upper bound when untimed */
        if (rc == 0) wp_metrics_observe_kernel(app->metrics, f->name, wp_backend_name(b), us / 1e6);
    }
    wp_app_kernel_put(app, &rk);
    if (rc) {
        wp_reduce_result_free(res);
        return -1;
    }
    if (s->data.stat) {
        res->has_value = true;
        memcpy(res->stat_acc, result, sizeof res->stat_acc);
    } else if (f->data_out == WP_DATA_VALUE) {
        res->has_value = job->n > 0 || has_ident;
        res->acc_value = job->n > 0 ? wp_data_load(acc, result, 0) : ident;
        res->value = wp_data_from_acc(t, acc, res->acc_value);
    } else if (f->data_out == WP_DATA_ARG && job->n > 0) {
        res->has_value = true;
        res->acc_value = wp_data_load(acc, result, 0);
        res->value = wp_data_from_acc(t, acc, res->acc_value);
        memcpy(&res->index, result + 8, sizeof res->index);
    }
    return 0;
}

void wp_reduce_result_free(wp_reduce_result *res) {
    if (res->out_owned) wp_buf_free(res->out);
    res->out = NULL;
    res->out_owned = false;
}
