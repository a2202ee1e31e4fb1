/* backend.h — what a backend does: load a module from a cubin, run a warp-primitive launch, report
 * device facts. Two implementations: backend_cuda.c (Driver API through dlopen) and backend_emu.c
 * (the CPU emulator, kernels/). Callers hold a wp_backend and never look inside. */
#ifndef WP_BACKEND_H
#define WP_BACKEND_H

#include "compile/jit.h"
#include "kernels/family.h"
#include "kernels/spec.h"
#include "util/common.h"

typedef struct wp_backend wp_backend;

typedef struct {
    const char *backend; /* "cuda" or "emu" */
    char name[128];      /* device name, or "CPU emulator" */
    int sm;              /* e.g. 90; 0 for emu */
    int sms;             /* multiprocessors (cores for emu) */
    uint64_t mem_total, mem_free;
    int driver_version;         /* cuDriverGetVersion, 0 for emu */
    uint64_t zero_copy_runs;    /* cuda: runs whose kernel worked on host memory, copying nothing (--zero-copy) */
    uint64_t resident_runs;     /* cuda: warp jobs a resident kernel answered (--resident-us) */
    uint64_t resident_launches; /* cuda: resident kernels launched */
} wp_device_info;

typedef struct {
    double upload_us, kernel_us, download_us; /* kernel_us from events on cuda, wall on emu */
    /* an untimed run (cuda; asked by wp_launch_io.untimed, or for a warp run by this flag set on the way
     * in): the three above were not measured (0) */
    bool untimed;
    double device_us; /* cuda: the host's clock from the start of the device call (the image into staging
                       * included) to the end of its wait */
    double queue_us;  /* a batched run's time in the batcher outside the device's run: its entry, its wait
                       * in the batch queue, the batch's bookkeeping (for a timed run also the host's side
                       * of the launch, outside its timed steps) (the batcher's) */
    /* Set on the way in, for a warp job on cuda (or a reduce image's, wp_resident_image): called once, on the
     * thread that runs the job (or its batch: a runner's for a handed job), while the device works on it
     * (after its post or launch, before the wait), then cleared. For work the caller would do after the
     * run anyway and that needs nothing of it (the job's emulated run, the answer's parts the run does
     * not decide). A run that does not call it (emu, a failure first) leaves it to the caller, which
     * tells by its own record, not by this field (a run may overwrite the struct). */
    void (*meanwhile)(void *ctx);
    void *meanwhile_ctx;
} wp_run_timing;

/* t->meanwhile called and cleared, when set (t may be NULL): by the code that waits for the device, once
 * the job is on its way and before the wait (backend/meanwhile.c). Threads: the run's. */
void wp_run_meanwhile(wp_run_timing *t);

/* CUDA: NULL with *err (and a reason in err->msg) when libcuda or a device is missing. */
wp_backend *wp_backend_cuda_open(int device_ordinal, wp_err *err); /* with WP_CUDA_STREAMS_DEFAULT streams */
/* The same with a pool of `streams` streams (1..64): that many jobs run on the device at once. */
wp_backend *wp_backend_cuda_open_streams(int device_ordinal, int streams, wp_err *err);
int wp_backend_cuda_streams(const wp_backend *b); /* the pool's size; 0 for another backend */
/* --gpu-wait: how a job waits for the device, spin (the driver's wait: lowest latency) or yield (poll,
 * giving the CPU to other threads between polls). Before the first job; other backends ignore it. */
void wp_backend_cuda_set_wait(wp_backend *b, bool yield);
/* --zero-copy: whether an untimed small job (an image of at most 64 KiB) runs zero-copy:
 * its kernel reads and writes the image where the host wrote it, in the stream's page-locked staging
 * mapped into the device, with no upload and no download (two driver calls and two copies fewer). On
 * by default; off: always copied. Before the first job; other backends ignore it. */
void wp_backend_cuda_set_zero_copy(wp_backend *b, bool on);
/* --resident-us: how long a resident kernel waits for its next job (0: none). A small untimed
 * /v1/warp job of one warp, or a small reduce of one block (device_reduce, argmin, argmax), run alone,
 * leaves its kernel on the device, taking the next jobs of that kernel from mapped host memory
 * (cuda_resident.c); on by default. Before the first job;
 * other backends ignore it. */
#define WP_RESIDENT_DEFAULT_US 500
#define WP_RESIDENT_MAX_US 1000000
void wp_backend_cuda_set_resident(wp_backend *b, int idle_us);
/* Whether job may go to b's resident kernel now: b a GPU with residents on (and not turned off), job
 * one warp of 32 active lanes (server/backend/resident_box.h). Any thread: a hint. */
bool wp_backend_cuda_resident_fits(wp_backend *b, const wp_warp_job *job);
/* A batch image of one job of one block (server/engine/batch_reduce.c) for a batched data kernel that
 * serves as a resident (kernels/wp_abi.h, WP_DATA_RESIDENT): the resident's device buffer is its base. */
typedef struct {
    unsigned block, smem;         /* the launch's block and dynamic shared memory */
    size_t image_len;             /* bytes relayed from the image's start */
    size_t total;                 /* device bytes the job uses from the base: the image, then its scratch */
    size_t first_at;              /* the block starts' offset (the table is at 0) */
    unsigned jobs;                /* table entries */
    size_t answer_at, answer_len; /* the region relayed back, into image + answer_at */
    void *image;                  /* host: at least image_len and answer_at + answer_len bytes */
    void (*fill)(void *ctx, uint64_t base, void *image); /* writes the image for a base, first */
    void *fill_ctx;
    wp_run_timing *hook; /* may be NULL: its meanwhile, the caller's own work once the job is posted (called
                          * and cleared even when the resident then does not take the job) */
} wp_resident_image;
/* Whether im may go to b's resident now (as wp_backend_cuda_resident_fits): residents on, the image
 * and its answer within the mailbox, total within the resident's buffer. Any thread: a hint. */
bool wp_backend_cuda_resident_image_fits(wp_backend *b, const wp_resident_image *im);
/* Runs im, untimed, through the resident of fn (a resident build, wp_spec.resident): 0 done (the
 * answer in im->image, *device_us the round trip), 1 not taken (run it as usual), -1 failed (err). */
int wp_backend_cuda_run_resident_image(wp_backend *b, void *fn, const wp_resident_image *im, double *device_us,
                                       wp_err *err);
int wp_backend_streams(const wp_backend *b); /* jobs it runs at once: the pool's size; 1 on emu */
int wp_backend_ordinal(const wp_backend *b); /* its device number (cuda: the driver's) */
/* Its place among the devices served (--devices 2,3: 0 and 1): the "device" number requests, buffers,
 * /v1/info and /metrics use. Set once by main.c before serving; the ordinal until then. */
int wp_backend_index(const wp_backend *b);
void wp_backend_set_index(wp_backend *b, int index);
/* Jobs running on b (placement's load): a job enters before its device work and leaves after. */
void wp_backend_job_enter(wp_backend *b);
void wp_backend_job_leave(wp_backend *b);
int wp_backend_running(const wp_backend *b);
/* Whether an op could take a stream of b now without waiting (always on emu): nothing, a buffer copy
 * included, holds every one of them, and nobody waits for one. A hint: the answer may be stale at once.
 * Any thread. */
bool wp_backend_lane_free(wp_backend *b);
wp_backend *wp_backend_emu_open(void); /* device 0 */
/* The emulator presenting device `ordinal` (--emu-devices). Test hook, for CI only: when the
 * environment has WARPD_EMU_FAIL_DEVICE=<ordinal>, that device is lost from the start (usable is
 * false with a reason), as a GPU is after a sticky error the driver cannot clear. */
wp_backend *wp_backend_emu_open_device(int ordinal);
/* How many CUDA devices the driver sees; -1 with err when there is no driver. */
int wp_backend_cuda_count(wp_err *err);
/* The compute capability of a device (e.g. 90) with no context, stream or memory: for callers that
 * only compile for it (--prewarm --exit). 0, or -1 with err (503 cuda_unavailable) as _open. */
int wp_backend_cuda_sm(int device_ordinal, int *sm, wp_err *err);
void wp_backend_close(wp_backend *b);

const char *wp_backend_name(const wp_backend *b);         /* "cuda" / "emu" */
void wp_backend_info(wp_backend *b, wp_device_info *out); /* asks the driver for free memory */
/* The facts that never change, without a driver call: for hot paths (a request's device name, sm). */
const wp_device_info *wp_backend_facts(const wp_backend *b);
/* True when the backend runs on the CPU (emu): its jobs never wait for a device. */
bool wp_backend_on_host(const wp_backend *b);
/* False once the backend can run nothing more (cuda after a sticky error); why says so. */
bool wp_backend_usable(wp_backend *b, char *why, size_t n);

/* Cache hooks (see wp_kernel_function): emu loads nothing (fn = NULL is fine). */
int wp_backend_load(void *b, const wp_artifact *a, void **fn, wp_err *err);
void wp_backend_unload(void *b, void *fn);

/* Runs one warp primitive launch: emu calls spec->family->emulate; cuda launches fn with a
 * wp_warp_params block. t (may be NULL) gets the timing; on cuda, t->untimed set on the way in asks
 * for no timing events (device_us only). res arrays are caller-allocated (n*elems / n). On cuda, res->why is not
 * written (definedness comes from the emulator). A CUDA error fails with 500 "cuda_error" and the
 * backend recovers (recreates its context) for the next job. */
int wp_backend_run_warp(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                        wp_run_timing *t, wp_err *err);

#endif
