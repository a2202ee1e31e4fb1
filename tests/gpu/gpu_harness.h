/* gpu_harness.h — what the GPU test programs (tests/gpu/test_gpu_*.c) share: the engine opened on cuda and
 * on the emulator (SKIPPED without a GPU), their flags, a pool of worker threads over a list of kernels, seeded test
 * data, a host array put on a backend, and the tolerance of results whose order is not fixed. Each
 * program keeps its own cases, its own comparison and its own report. */
#ifndef WP_GPU_HARNESS_H
#define WP_GPU_HARNESS_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/app.h"

#define GPU_MAX_THREADS 16
#define GPU_DRY_RUN_SM 90            /* the architecture a --dry-run compiles for */
#define GPU_CACHE_BYTES (512u << 20) /* the kernels' memory cache */
#define GPU_DETAILS_PRINTED 16       /* mismatch lines printed in all */
#define GPU_REL_TOL 1e-2             /* gpu_close_enough: atomics on floats add in any order */

/* The flags the GPU test programs take; each program accepts those it names (GPU_ARG_...). */
enum { GPU_ARG_THREADS = 1, GPU_ARG_FAMILY = 2, GPU_ARG_QUICK = 4, GPU_ARG_DRY_RUN = 8, GPU_ARG_COUNT = 16 };
typedef struct {
    int threads;        /* --threads N (0: one per CPU) */
    const char *family; /* --family NAME (NULL: every family) */
    bool quick, dry_run, count;
} gpu_args;
/* argv's flags into *a (zeroed first), of those in `accepted`; false after printing the usage to stderr
 * (the program exits 2). */
bool gpu_args_parse(int argc, char **argv, unsigned accepted, gpu_args *a);

/* Opens app for the test `suite` (its closing line's name, e.g. "gpu_stats"): cuda device 0 (dry_run: none,
 * kernels compiled for sm_GPU_DRY_RUN_SM), the emulator, the reduce engine, NVRTC and a memory cache.
 * true: ready, "device: ..." (or "dry run: ...") printed. false: the program stops and returns *exit_code,
 * after "SKIPPED: no CUDA device" and "<suite>: 0 passed, 0 failed" (0), or "FAIL setup" and "<suite>: 0
 * passed, 1 failed" (1). */
bool gpu_app_open(wp_app *app, const char *suite, bool dry_run, int *exit_code);
void gpu_app_close(wp_app *app);
/* The SM version app's kernels are compiled for (90 for "sm_90"). */
int gpu_app_sm(const wp_app *app);

/* each(ctx, i) once for every i in [0, n), on `threads` worker threads taking the next index (threads <= 0:
 * one per CPU; at most GPU_MAX_THREADS; the calling thread works alone when none starts). */
void gpu_for_each(int threads, int n, void (*each)(void *ctx, int i), void *ctx);
/* The number of workers gpu_for_each starts for `threads`. */
int gpu_threads(int threads);

/* splitmix64: the next value of the sequence at *state. */
uint64_t gpu_rng(uint64_t *state);
/* A random element of t's bits: integers in -1000..1000 (0..2000 unsigned), floats in [-4, 4) with full
 * mantissas. */
uint64_t gpu_random_elem(uint64_t *state, wp_type t);
/* a and b (t's bits) within GPU_REL_TOL of b; NaN matches NaN, an infinity only itself. */
bool gpu_close_enough(wp_type t, uint64_t a, uint64_t b);

/* The first of count elements (t's) where emu and cuda differ: in their bits when deterministic, else by
 * more than gpu_close_enough allows; -1 when none does. */
int64_t gpu_first_difference(wp_type t, const uint8_t *emu, const uint8_t *cuda, uint64_t count, bool deterministic);
/* "  mismatch WHAT n=N: MESSAGE" on stdout, for the first GPU_DETAILS_PRINTED mismatches counted in *printed
 * (the program's counter, shared by its workers). */
void gpu_vmismatch(atomic_int *printed, const char *what, uint64_t n, const char *fmt, va_list ap);
void gpu_mismatch(atomic_int *printed, const char *what, uint64_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A buffer on b holding host's bytes (at least 16 bytes are allocated, so n = 0 has one too); NULL with
 * *err set on failure. */
wp_buf *gpu_buf_from_host(wp_backend *b, const void *host, size_t bytes, wp_err *err);

#endif
