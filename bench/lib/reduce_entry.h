/* reduce_entry.h — a small C face of the reduction engine for the benchmarks: the .cu ones (bench_reduce,
 * bench_bykey, bench_hist ...), which nvcc compiles as C++ and so cannot include the daemon's C11
 * headers, and the C ones (bench_stats, bench_anywidth, bench_map), which take the engine itself from
 * wpb_app. Everything runs on the cuda backend (device 0) with an in-memory kernel cache; buffers are
 * wp_buf handles as void *. */
#ifndef WP_REDUCE_ENTRY_H
#define WP_REDUCE_ENTRY_H

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when a GPU is usable and the engine is set up; -1 without a GPU, -2 when the engine could not be
 * set up, with the reason in why. */
int wpb_open(char *why, unsigned long why_len);
void wpb_close(void);
/* "NAME (sm_XX, N SMs)" */
const char *wpb_device(void);
/* The engine wpb_open set up (engine/app.h), for a C benchmark's own jobs. */
struct wp_app *wpb_app(void);
/* wpb_open for a C benchmark: the engine, or NULL after printing why it stops ("SKIPPED: no CUDA device"
 * without a GPU: *exit_code 0; "FAIL setup: ..." otherwise: 1), everything closed again. */
struct wp_app *wpb_start(int *exit_code);

/* A device buffer of `bytes`; *dev gets its address (a CUdeviceptr the runtime API can use too). */
void *wpb_alloc(unsigned long long bytes, unsigned long long *dev);
void wpb_free(void *buf);
/* Fills n elements of type ("f32", "i32", ...) with the generate family's random values. */
int wpb_generate(void *buf, const char *type, unsigned long long n, unsigned long long seed);

/* Benchmark modes of later wpb_run calls. graph: the repeats are captured as one CUDA graph and one
 * replay is timed (reductions; scans ignore it). overlap: programmatic dependent launch between
 * back-to-back kernels (the default; the environment's WARPD_PDL=0 turns it off, WARPD_PDL=BYTES keeps
 * it for inputs under BYTES only). */
void wpb_set_graph(int on);
int wpb_overlap(void);

/* Runs family ("device_reduce", "device_scan") with op over n elements of in, `repeat` launches back to
 * back, at the family's default block (the environment's WARPD_BLOCK=N: block N instead, to compare);
 * *kernel_us gets the time per launch. Reductions put the value's raw bits in *value; scans write
 * out (n elements). Returns 0, or -1 with the message in why. */
int wpb_run(const char *family, const char *type, const char *op, void *in, unsigned long long n, void *out, int repeat,
            double *kernel_us, unsigned long long *value, char *why, unsigned long why_len);
/* The same with a block size (0: the family's default). */
int wpb_run_block(const char *family, const char *type, const char *op, int block, void *in, unsigned long long n,
                  void *out, int repeat, double *kernel_us, unsigned long long *value, char *why,
                  unsigned long why_len);

/* reduce_by_key (engine/bykey.h): values of type over keys of key_type, both n long, at a block size (0:
 * the family's default, or WARPD_BLOCK's); the runs' keys and values go to out_keys and out_values (room
 * for n each); *runs gets their count. repeat launches back to back, *kernel_us the time per launch.
 * Returns 0, or -1 with the message in why. */
int wpb_run_bykey(const char *type, const char *key_type, const char *op, int block, void *keys, void *in,
                  unsigned long long n, void *out_keys, void *out_values, int repeat, double *kernel_us,
                  unsigned long long *runs, char *why, unsigned long why_len);

/* The histogram family: bins equal bins over [lo, hi] of n elements of type at in, `repeat` launches
 * back to back (the counts, zeroed once, then add up over the repeats); strategy "smem", "atomic" or
 * NULL (by bins, as the daemon picks). counts (bins u64, may be NULL) get the counts of the last call
 * made with repeat 1. *binning gets "fast" or "search". Returns 0, or -1 with the message in why. */
int wpb_histogram(const char *type, unsigned bins, double lo, double hi, const char *strategy, void *in,
                  unsigned long long n, int repeat, double *kernel_us, unsigned long long *counts, const char **binning,
                  char *why, unsigned long why_len);

#ifdef __cplusplus
}
#endif
#endif
