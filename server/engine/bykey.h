/* bykey.h — reduce_by_key on one device (kernels/bykey.c, templates/bykey.cu): n keys and n values
 * in, each run of equal consecutive keys reduced to one value, out the runs' keys, values and count.
 * Not a wp_reduce_run job (two inputs, two outputs and a count): /v1/reduce (api_bykey.c), the GPU
 * test and the benchmark call it. Any thread may call it; it keeps no state between calls. */
#ifndef WP_BYKEY_H
#define WP_BYKEY_H

#include "backend/buffer.h"
#include "compile/cache.h"
#include "kernels/spec.h"
#include "util/common.h"

struct wp_app;

typedef struct {
    const wp_spec *spec;     /* family reduce_by_key, validated (spec->data.keys: the keys' type) */
    const wp_buf *keys, *in; /* n keys, n values of spec->type, on the job's backend (not sharded) */
    uint64_t n;
    wp_buf *out_keys, *out_values; /* room for n runs each: the first `runs` elements are written */
    bool compile_on_emu;           /* also compile the kernel (NVRTC, cache) when running on emu */
    int repeat;                    /* benchmarks (cuda): launches back to back, kernel_us per launch; 0 = 1 */
} wp_bykey_job;

typedef struct {
    uint64_t runs;
    unsigned grid, block;
    char key_text[640];
    char hash[65];
    wp_source source; /* where the kernel came from; compiled is false when nothing was compiled */
    bool compiled;
    double key_us, cache_us, compile_ms, load_us, kernel_us;
} wp_bykey_result;

/* 0, or -1 with err (400 for a job that does not fit its buffers or backend). */
int wp_bykey_run(struct wp_app *app, wp_backend *b, const wp_bykey_job *job, wp_bykey_result *res, wp_err *err);

#endif
