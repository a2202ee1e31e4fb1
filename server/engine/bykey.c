/* bykey.c — the reduce_by_key engine (bykey.h): checks a job against its buffers, plans it
 * (kernels/bykey.c), gets its kernel through the cache, and runs it: launches on cuda over a tile
 * status it allocates and zeroes per job (epoch-stamped, so repeats need no zeroing between them), or
 * the CPU reference on emu over the buffers' host memory.
 * Owns: nothing past a call (the scratch it allocates is freed before it returns). */
#include "bykey.h"

#include <stdlib.h>
#include <string.h>

#include "app.h"

#define WP_BYKEY_HEAD 256 /* scratch: the runs count (8 bytes) at 0, the tile status from here */

static int bykey_check(wp_backend *b, const wp_bykey_job *job, wp_err *err) {
    const wp_spec *s = job->spec;
    if (!s || !s->family || !(s->family->flags & WP_F_KEYS))
        return WP_FAIL(err, 400, "not_a_data_family", "family", "not a reduce_by_key job");
    const size_t vsize = wp_type_size(s->type), ksize = wp_type_size(s->data.keys);
    const wp_buf *bufs[4] = {job->in, job->keys, job->out_values, job->out_keys};
    const size_t esize[4] = {vsize, ksize, vsize, ksize};
    static const char *const fields[4] = {"data", "keys", "output", "output"};
    for (int i = 0; i < 4; i++) {
        if (!bufs[i] && !job->n) continue;
        if (!bufs[i]) return WP_FAIL(err, 400, "missing_field", fields[i], "no %s buffer", fields[i]);
        if (wp_buf_shards(bufs[i]))
            return WP_FAIL(err, 400, "shard_unsupported", fields[i], "reduce_by_key runs on one device");
        if (wp_buf_backend(bufs[i]) != b)
            return WP_FAIL(err, 400, "backend_mismatch", fields[i], "the %s lives on %s, the job runs on %s", fields[i],
                           wp_backend_name(wp_buf_backend(bufs[i])), wp_backend_name(b));
        if (job->n > wp_buf_size(bufs[i]) / esize[i])
            return WP_FAIL(err, 400, "out_of_range", fields[i], "%llu elements do not fit a buffer of %zu bytes",
                           (unsigned long long)job->n, wp_buf_size(bufs[i]));
    }
    return 0;
}

/* The kernel: from the cache (compiled if need be), or on emu without compile_on_emu its key alone. */
static int bykey_kernel(struct wp_app *app, wp_backend *b, const wp_bykey_job *job, const wp_spec *s, bool emu,
                        wp_bykey_result *res, wp_ready_kernel *rk, wp_err *err) {
    if (emu && !job->compile_on_emu) {
        res->key_us = wp_app_kernel_key(app, s, res->key_text, sizeof res->key_text, res->hash);
        return 0;
    }
    if (wp_app_kernel_get(app, s, b, rk, err)) return -1;
    memcpy(res->key_text, rk->key_text, sizeof res->key_text);
    memcpy(res->hash, rk->hash, sizeof res->hash);
    res->source = rk->source;
    res->compiled = true;
    res->key_us = rk->key_us, res->cache_us = rk->cache_us, res->compile_ms = rk->compile_ms;
    res->load_us = rk->load_us;
    return 0;
}

/* The launches on cuda: a zeroed scratch (count, tile status), epochs 1..repeat, the count read back. */
static int bykey_cuda(wp_backend *b, void *fn, const wp_data_plan *plan, const wp_data_params *p, int repeat,
                      wp_bykey_result *res, wp_err *err) {
    const size_t bytes = WP_BYKEY_HEAD + plan->scratch_bytes;
    wp_buf *scratch = wp_buf_alloc(b, bytes, err);
    if (!scratch) return -1;
    int rc = wp_buf_memset(scratch, 0, 0, bytes, err);
    wp_data_params *ps = calloc((size_t)repeat, sizeof *ps);
    void **params = calloc((size_t)repeat, sizeof *params), **fns = calloc((size_t)repeat, sizeof *fns);
    wp_launch *ls = calloc((size_t)repeat, sizeof *ls);
    if (rc == 0 && (!ps || !params || !fns || !ls)) rc = WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    const uint64_t base = wp_buf_addr(scratch);
    for (int i = 0; rc == 0 && i < repeat; i++) {
        ps[i] = *p;
        ps[i].counter = base;
        ps[i].scratch = base + WP_BYKEY_HEAD;
        ps[i].epoch = (unsigned)i + 1;
        params[i] = &ps[i];
        fns[i] = fn;
        /* a programmatic dependent of the launch before it, as every data kernel (reduce.c): the next
         * launch's tiles wait in griddepcontrol.wait and read only records of their own epoch */
        ls[i] = (wp_launch){
            .grid = {plan->grid, 1, 1}, .block = {plan->block, 1, 1}, .params = &params[i], .flags = WP_LAUNCH_OVERLAP};
    }
    uint64_t runs = 0;
    if (rc == 0) rc = wp_backend_launch_read(b, fns, ls, repeat, &res->kernel_us, scratch, 0, &runs, sizeof runs, err);
    res->kernel_us /= repeat;
    res->runs = runs;
    free(ps);
    free(params);
    free(fns);
    free(ls);
    wp_buf_free(scratch);
    return rc;
}

static int bykey_run(struct wp_app *app, wp_backend *b, const wp_bykey_job *job, wp_bykey_result *res, wp_err *err) {
    if (bykey_check(b, job, err)) return -1;
    wp_spec sized;
    const wp_spec *s = wp_spec_sized(job->spec, job->n, &sized);
    const bool emu = !strcmp(wp_backend_name(b), "emu");
    wp_data_plan plan;
    s->family->plan(s, job->n, 0, &plan);
    res->grid = plan.grid;
    res->block = plan.block;
    wp_ready_kernel rk = {0};
    if (bykey_kernel(app, b, job, s, emu, res, &rk, err)) return -1;
    int rc = 0;
    if (plan.grid > 0) {
        wp_data_params p = {.n = job->n, .groups = plan.groups, .in = wp_buf_addr(job->in)};
        p.aux = wp_buf_addr(job->keys);
        p.out = wp_buf_addr(job->out_values);
        p.seed = wp_buf_addr(job->out_keys);
        if (emu) {
            p.counter = (uint64_t)(uintptr_t)&res->runs;
            const uint64_t t0 = wp_now_ns();
            s->family->data_emulate(s, &p, &plan);
            res->kernel_us = wp_us_since(t0);
        } else {
            rc = bykey_cuda(b, rk.fn, &plan, &p, job->repeat < 1 ? 1 : job->repeat, res, err);
        }
        if (rc == 0) wp_metrics_observe_kernel(app->metrics, s->family->name, wp_backend_name(b), res->kernel_us / 1e6);
    }
    wp_app_kernel_put(app, &rk);
    return rc;
}

int wp_bykey_run(struct wp_app *app, wp_backend *b, const wp_bykey_job *job, wp_bykey_result *res, wp_err *err) {
    memset(res, 0, sizeof *res);
    wp_backend_job_enter(b); /* the device's load, for placement */
    int rc = bykey_run(app, b, job, res, err);
    wp_backend_job_leave(b);
    return rc;
}
