/* reduce.h — the engine that runs the data-parallel families (kernels/data.h: reductions, scans,
 * argmin/argmax, segmented reduce, stencil, generate) over buffers (buffer.h) on a backend: spec ->
 * cache (key includes strategy and block size) -> plan -> one launch on cuda, or the CPU reference on
 * emu -> value or result buffer, the strategy that ran and what each step cost. /v1/reduce and
 * /v1/scan (api_reduce.c), the GPU tests and the benchmarks all drive it.
 * Owns: wp_reduce_engine (per-backend pools of device scratch: grid partials, tickets, tile status). */
#ifndef WP_REDUCE_H
#define WP_REDUCE_H

#include "backend/buffer.h"
#include "compile/cache.h"
#include "kernels/data.h"
#include "kernels/spec.h"
#include "util/common.h"

struct wp_app;
typedef struct wp_reduce_engine wp_reduce_engine;

wp_reduce_engine *wp_reduce_engine_open(void);
void wp_reduce_engine_close(wp_reduce_engine *e); /* frees the pooled scratch: call before closing backends */

/* One job. spec: a validated data-family spec (wp_spec_from_json, or filled in with strategy
 * WP_STRAT_AUTO and checked by wp_spec_validate). The engine does not take ownership of anything. */
typedef struct {
    const wp_spec *spec;
    const wp_buf *in; /* n elements of spec->type; NULL for generate */
    /* a map over y (spec->data.map_y): the second input, n elements of spec->type on the same backend,
     * not sharded (nor then is in); NULL otherwise */
    const wp_buf *in2;
    uint64_t n;
    const wp_buf *offsets; /* segmented_reduce: groups + 1 uint64 offsets, non-decreasing, last <= n */
    uint64_t groups;
    bool has_init; /* scans: start from init (raw bits of spec->type) */
    uint64_t init;
    bool has_weights; /* stencil: 2*radius+1 weights (default: all 1/(2r+1)); histogram: its binning
                         (wp_hist_weights, kernels/hist.h), groups = bins, offsets = its edges
                         (bins + 1 doubles) */
    double weights[2 * WP_STENCIL_MAX_RADIUS + 1];
    int gen_kind; /* generate: WP_GEN_*, seed, constant (raw bits of spec->type) */
    uint64_t seed, constant;
    uint64_t gen_first;     /* generate: the sequence index of the first element (a shard's start; else 0) */
    wp_buf *out;            /* EACH/GROUPS families: where results go (NULL: the engine allocates one) */
    bool compile_on_emu;    /* also compile the kernel (NVRTC, cache) when running on emu */
    bool memory_only;       /* take the kernel from the memory cache only (never compile or read the disk):
                               wp_reduce_run returns 1, having done nothing, when it is not there */
    int repeat;             /* benchmarks (cuda): launches back to back, timed together; kernel_us is per
                               launch; 0 or 1 = once (atomic: the value is then meaningless) */
    bool graph;             /* benchmarks (cuda): the repeats captured as one CUDA graph and replayed */
    uint64_t overlap_below; /* benchmarks: programmatic dependent launch (WP_LAUNCH_OVERLAP) only for
                               inputs under this many bytes (1: never); 0: always, the default */
    bool untimed;           /* cuda, a one-value family: no timing events (they cost 12-29 us a call on an
                               H100 host); res.untimed, kernel_us 0, device_us the round trip */
} wp_reduce_job;

typedef struct {
    /* WP_DATA_VALUE and WP_DATA_ARG */
    bool has_value;   /* false: empty data and an operator with no identity, or argmin of nothing */
    uint64_t value;   /* raw bits of spec->type (rounded once from the accumulator) */
    wp_type acc_type; /* the accumulator type, and its bits */
    uint64_t acc_value;
    int64_t index; /* argmin/argmax: the element's index; -1 when there is none */
    /* a statistic (spec->data.stat, kernels/stats.h): the accumulator of every element read (zeros for
     * none), which wp_stat_finish turns into the answer; has_value is then always true */
    unsigned char stat_acc[WP_STAT_ACC_BYTES];
    /* WP_DATA_EACH and WP_DATA_GROUPS: the results (job->out, or the engine's: the caller frees it) */
    wp_buf *out;
    bool out_owned;     /* out was allocated by the engine */
    uint64_t out_count; /* elements of spec->type */
    uint64_t count;     /* elements read */
    int strategy;       /* what ran (WP_STRAT_*) */
    bool deterministic; /* false only for atomic on floats or expressions */
    unsigned grid, block;
    char key_text[640];
    char hash[65];
    wp_source source; /* where the kernel came from; compiled is false when nothing was compiled */
    bool compiled;
    double key_us, cache_us, compile_ms, load_us, kernel_us;
    bool untimed;     /* job.untimed was honoured: kernel_us is 0 and device_us the launch's round trip */
    double device_us; /* untimed: from the launch to its result on the host's clock */
} wp_reduce_result;

/* Runs a job whose buffers are not sharded on b, one device (shard.h's wp_reduce_run is the entry for
 * any job: it runs sharded ones over their devices and hands the rest here). Contract as there. */
int wp_reduce_run_local(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res,
                        wp_err *err);
/* The checks every job passes before it runs (family, input on b, sizes): 0, or -1 with a 400 in err. */
int wp_reduce_check(wp_backend *b, const wp_reduce_job *job, wp_err *err);
/* Frees res->out when the engine allocated it. */
void wp_reduce_result_free(wp_reduce_result *res);

#endif
