/* shard.c — data-parallel jobs over a sharded buffer (buffer.h: contiguous parts, one per device),
 * and the engine's entry for every data-parallel job (wp_reduce_run: others go to reduce.c).
 *   device_reduce: every part reduced at once, each on its own device; the partial results combined
 *                  on the host in part order (so the bits depend only on the data and the number of
 *                  parts; integers are exact).
 *   device_scan:   the parts' totals (device_reduce, at once), their exclusive scan on the host in
 *                  part order, then every part scanned at once starting from its carry-in (the scan's
 *                  init): correct across part boundaries. The result is sharded like the input.
 * Other families take a plain buffer (400 "shard_unsupported").
 * Owns: nothing past one call (the threads it starts are joined before it returns). */
#include "shard.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "kernels/stats.h"

typedef struct {
    struct wp_app *app;
    wp_backend *b;
    wp_reduce_job job;
    wp_reduce_result res;
    wp_err err;
    int rc;
    bool ran;
} part_run;

static void *part_main(void *p) {
    part_run *r = p;
    r->rc = wp_reduce_run_local(r->app, r->b, &r->job, &r->res, &r->err);
    return NULL;
}

/* Runs the parts marked to run, at once (one thread each); 0, 1 (a kernel not in memory: nothing
 * else either) or -1 with the first failure's error in err. */
static int run_parts(part_run *parts, int n, wp_err *err) {
    pthread_t tid[WP_BUF_SHARDS_MAX];
    bool started[WP_BUF_SHARDS_MAX] = {0};
    for (int i = 0; i < n; i++)
        if (parts[i].ran) started[i] = pthread_create(&tid[i], NULL, part_main, &parts[i]) == 0;
    for (int i = 0; i < n; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else if (parts[i].ran)
            part_main(&parts[i]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!parts[i].ran || !parts[i].rc) continue;
        if (parts[i].rc < 0 && rc >= 0) *err = parts[i].err;
        if (parts[i].rc < 0 || rc == 0) rc = parts[i].rc;
    }
    return rc;
}

static void parts_free(part_run *parts, int n) {
    for (int i = 0; i < n; i++) wp_reduce_result_free(&parts[i].res);
}

/* The elements of part i that the job reads: [*first, *first + *count). */
static void part_range(const wp_buf *in, int i, size_t esize, uint64_t n, uint64_t *first, uint64_t *count) {
    size_t off;
    wp_buf *p = wp_buf_shard(in, i, &off);
    uint64_t lo = off / esize, c = wp_buf_size(p) / esize;
    *first = lo;
    *count = n <= lo ? 0 : n - lo < c ? n - lo : c;
}

/* Fields every part shares, from the first that ran. */
static void result_from(wp_reduce_result *res, const part_run *parts, int n, uint64_t count) {
    for (int i = 0; i < n; i++) {
        if (!parts[i].ran) continue;
        const wp_reduce_result *r = &parts[i].res;
        if (!res->key_text[0]) {
            res->acc_type = r->acc_type;
            res->strategy = r->strategy;
            res->deterministic = r->deterministic;
            res->grid = r->grid;
            res->block = r->block;
            memcpy(res->key_text, r->key_text, sizeof res->key_text);
            memcpy(res->hash, r->hash, sizeof res->hash);
            res->source = r->source;
            res->compiled = r->compiled;
            res->key_us = r->key_us, res->cache_us = r->cache_us, res->compile_ms = r->compile_ms;
            res->load_us = r->load_us;
        }
        if (r->kernel_us > res->kernel_us) res->kernel_us = r->kernel_us;
    }
    res->count = count;
}

/* A statistic's accumulators, combined in part order as the kernel combines its blocks' (stats.h). */
static void stat_parts(wp_reduce_result *res, const part_run *parts, int n) {
    const int sacc = wp_stat_acc(parts[0].job.spec->data.stat);
    bool have = false;
    memset(res->stat_acc, 0, sizeof res->stat_acc);
    for (int i = 0; i < n; i++) {
        if (!parts[i].ran || !parts[i].job.n) continue; /* nothing read: an empty accumulator */
        if (have)
            wp_stat_combine(sacc, res->stat_acc, parts[i].res.stat_acc);
        else
            memcpy(res->stat_acc, parts[i].res.stat_acc, sizeof res->stat_acc);
        have = true;
    }
    res->has_value = true;
}

static int reduce_parts(struct wp_app *app, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err) {
    const wp_spec *s = job->spec;
    const int n = wp_buf_shards(job->in);
    const size_t esize = wp_type_size(s->type);
    part_run parts[WP_BUF_SHARDS_MAX];
    memset(parts, 0, sizeof parts);
    int any = -1;
    for (int i = 0; i < n; i++) {
        uint64_t first, count;
        part_range(job->in, i, esize, job->n, &first, &count);
        parts[i] = (part_run){.app = app, .b = wp_buf_backend(wp_buf_shard(job->in, i, NULL)), .job = *job};
        parts[i].job.in = wp_buf_shard(job->in, i, NULL);
        parts[i].job.n = count;
        parts[i].job.untimed = false; /* the parts' kernel_us: the slowest is the answer's */
        parts[i].ran = count > 0;
        if (count > 0 && any < 0) any = i;
    }
    if (any < 0) parts[0].ran = true; /* nothing to read: part 0 answers as for an empty input */
    int rc = run_parts(parts, n, err);
    if (rc == 0) {
        result_from(res, parts, n, job->n);
        bool have = false;
        uint64_t acc = 0;
        for (int i = 0; i < n; i++) { /* in part order: the same bits for the same number of parts */
            if (!parts[i].ran || !parts[i].res.has_value) continue;
            acc = have ? wp_op_apply(&s->op, res->acc_type, acc, parts[i].res.acc_value) : parts[i].res.acc_value;
            have = true;
        }
        res->has_value = have;
        res->acc_value = acc;
        res->value = wp_data_from_acc(s->type, res->acc_type, acc);
        if (s->data.stat) stat_parts(res, parts, n);
    }
    parts_free(parts, n);
    return rc;
}

/* The totals of the parts that scan reads (device_reduce with the scan's type and operator). */
static int scan_totals(struct wp_app *app, const wp_reduce_job *job, part_run *tot, int n, wp_spec *rs, wp_err *err) {
    if (wp_spec_copy(rs, job->spec)) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    rs->family = wp_family_find("device_reduce");
    rs->data.strategy = WP_STRAT_AUTO;
    rs->data.block_auto = true;
    rs->data.exclusive = false;
    if (!rs->family || wp_spec_validate(rs, err)) return -1;
    const size_t esize = wp_type_size(job->spec->type);
    for (int i = 0; i < n - 1; i++) { /* the last part's total carries into nothing */
        uint64_t first, count;
        part_range(job->in, i, esize, job->n, &first, &count);
        tot[i] = (part_run){.app = app, .b = wp_buf_backend(wp_buf_shard(job->in, i, NULL)), .ran = count > 0};
        tot[i].job = (wp_reduce_job){.spec = rs,
                                     .in = wp_buf_shard(job->in, i, NULL),
                                     .n = count,
                                     .memory_only = job->memory_only,
                                     .compile_on_emu = job->compile_on_emu};
    }
    return run_parts(tot, n - 1, err);
}

/* Copies a sharded result into a plain (or differently split) buffer, through the host. */
static int copy_out(const wp_buf *from, wp_buf *to, size_t bytes, wp_err *err) {
    uint8_t *tmp = malloc(bytes ? bytes : 1);
    if (!tmp) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    int rc = wp_buf_read(from, 0, tmp, bytes, err) || wp_buf_write(to, 0, tmp, bytes, err) ? -1 : 0;
    free(tmp);
    return rc;
}

static bool same_split(const wp_buf *a, const wp_buf *b) {
    if (wp_buf_shards(a) != wp_buf_shards(b)) return false;
    for (int i = 0; i < wp_buf_shards(a); i++) {
        size_t oa, ob;
        wp_buf *pa = wp_buf_shard(a, i, &oa), *pb = wp_buf_shard(b, i, &ob);
        if (oa != ob || wp_buf_size(pa) != wp_buf_size(pb) || wp_buf_backend(pa) != wp_buf_backend(pb)) return false;
    }
    return true;
}

static int scan_parts(struct wp_app *app, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err) {
    const wp_spec *s = job->spec;
    const int n = wp_buf_shards(job->in);
    const size_t esize = wp_type_size(s->type);
    const wp_type acc_t = wp_data_acc_type(s);
    part_run tot[WP_BUF_SHARDS_MAX], parts[WP_BUF_SHARDS_MAX];
    memset(tot, 0, sizeof tot);
    memset(parts, 0, sizeof parts);
    wp_spec rs = {0};
    wp_buf *out = NULL;
    bool out_owned = false;
    int rc = scan_totals(app, job, tot, n, &rs, err);
    if (rc == 0) { /* the result, split like the input: job->out when it is, else a new one */
        if (job->out && same_split(job->out, job->in)) {
            out = job->out;
        } else if ((out = wp_buf_alloc_like(job->in, esize, wp_buf_size(job->in) / esize, err))) {
            out_owned = true;
        } else {
            rc = -1;
        }
    }
    /* carry-in of each part: the exclusive scan of the totals before it, from the job's init */
    bool have = job->has_init;
    uint64_t carry = job->has_init ? wp_data_to_acc(s->type, acc_t, job->init) : 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        uint64_t first, count;
        part_range(job->in, i, esize, job->n, &first, &count);
        parts[i] = (part_run){.app = app, .b = wp_buf_backend(wp_buf_shard(job->in, i, NULL)), .job = *job};
        parts[i].job.in = wp_buf_shard(job->in, i, NULL);
        parts[i].job.out = wp_buf_shard(out, i, NULL);
        parts[i].job.n = count;
        parts[i].job.has_init = have;
        parts[i].job.init = wp_data_from_acc(s->type, acc_t, carry);
        parts[i].ran = count > 0;
        if (i < n - 1 && tot[i].ran && tot[i].res.has_value) {
            carry = have ? wp_op_apply(&s->op, acc_t, carry, tot[i].res.acc_value) : tot[i].res.acc_value;
            have = true;
        }
    }
    if (rc == 0) rc = run_parts(parts, n, err);
    if (rc == 0) {
        result_from(res, parts, n, job->n);
        res->acc_type = acc_t;
        res->out_count = job->n;
        if (job->out && out != job->out) {
            rc = copy_out(out, job->out, (size_t)job->n * esize, err);
            res->out = job->out;
        } else {
            res->out = out;
            res->out_owned = out_owned;
            out_owned = false;
        }
    }
    if (out_owned) wp_buf_free(out);
    parts_free(parts, n);
    parts_free(tot, n > 0 ? n - 1 : 0);
    wp_spec_free(&rs);
    return rc;
}

static int shard_run(struct wp_app *app, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err) {
    const wp_family *f = job->spec->family;
    if (!strcmp(f->name, "device_reduce")) return reduce_parts(app, job, res, err);
    if (!strcmp(f->name, "device_scan")) return scan_parts(app, job, res, err);
    return WP_FAIL(err, 400, "shard_unsupported", "buffer",
                   "family %s does not run over a sharded buffer (device_reduce and device_scan do)", f->name);
}

int wp_reduce_run(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err) {
    if (!job->in || !wp_buf_shards(job->in)) return wp_reduce_run_local(app, b, job, res, err);
    memset(res, 0, sizeof *res); /* every part on its own device */
    res->index = -1;
    return wp_reduce_check(b, job, err) ? -1 : shard_run(app, job, res, err);
}
