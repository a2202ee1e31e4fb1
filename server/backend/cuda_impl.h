/* cuda_impl.h — the cuda backend's parts as its own files see them (backend_cuda.c: the ops table;
 * cuda_launch.c: kernels; cuda_buffers.c: buffers and upload rings; cuda_device.c: context, gate,
 * recovery; cuda_streams.c: the stream pool). Nothing else includes it.
 *
 * Concurrency model. A device is one context and a pool of lanes; a lane is a stream with its own
 * events, device scratch and page-locked staging. An operation (a copy, a warp run, a launch) enters
 * the device's gate and takes a free lane under a short mutex (when none is free, it waits for one in
 * its user's turn: lane_gate.h), then queues its work on the lane's stream and waits for it by an event
 * with NO lock held, then gives the lane back. Many operations run at once, one per lane. The gate
 * only keeps operations out while a context reset runs: a reset (after a sticky error) waits until no
 * operation is inside, replaces the context, and bumps the generation; lanes notice the new generation
 * and remake their stream and events lazily. */
#ifndef WP_CUDA_IMPL_H
#define WP_CUDA_IMPL_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "backend_impl.h"
#include "cuda_driver.h"
#include "lane_gate.h"

#define WP_CUDA_STREAMS_DEFAULT 4
#define WP_CUDA_STREAMS_MAX WP_LANE_GATE_LANES
#define WP_UPLOAD_SLOTS_MAX 8
#define WP_ZERO_COPY_MAX (64u << 10) /* bytes of image a zero-copy run may have (cuda_zero_copy) */
#define WP_STAGE_MAX (4u << 20)      /* copies up to this size go through the lane's page-locked staging */
#define WP_MEMPOOL_CLASSES 13        /* small-buffer classes: 256 B << 0..12 (up to 1 MiB) */

/* One stream of the pool, with what a job on it needs. Held by one operation at a time. */
typedef struct cuda_lane {
    int index;
    unsigned generation; /* context its objects live in; 0: none made yet */
    CUstream stream;
    CUevent ev_upload, ev_start, ev_stop, ev_download; /* timing: a run's upload, kernel and download */
    CUevent ev_done;     /* no timing (cheaper to record and to wait for): the end of an untimed op */
    CUevent ev_sleep;    /* the same with blocking sync: its waiter sleeps (--runner-wait sleep) */
    CUdeviceptr scratch; /* a warp run's device image */
    size_t scratch_cap;
    unsigned char *host; /* page-locked staging (cuMemHostAlloc), host image of the scratch or a copy */
    size_t host_cap;
    CUdeviceptr host_dev; /* the staging's address on the device (mapped): a zero-copy run's image */
} cuda_lane;

/* An upload ring (wp_buf_stream): page-locked slots, a copy stream, an event per slot. */
typedef struct cuda_ring {
    struct cuda_ring *next; /* the idle list */
    unsigned generation;    /* the context it lives in: dead after a reset */
    CUstream stream;
    CUevent done[WP_UPLOAD_SLOTS_MAX];
    void *host[WP_UPLOAD_SLOTS_MAX];
    int slots;
    size_t slot_bytes;
} cuda_ring;

/* A resident leaves between jobs this long after its launch (at least; 4 x --resident-us when that
 * is longer). */
#define WP_RESIDENT_LIFE_US 4000

/* A data resident's device buffer: a job's image and scratch (wp_resident_image.total) fit it. */
#define WP_RESIDENT_IMAGE_BYTES ((size_t)1 << 20)

/* The device's resident kernel (cuda_resident.c), used by one job at a time (busy). */
typedef struct {
    atomic_bool busy;    /* held by the job, unload or close using it; everything below is theirs */
    unsigned generation; /* the context its objects live in; 0: none made */
    CUstream stream;     /* its own: the kernel holds it while it stays */
    CUevent ev_end;      /* recorded after its launch: its end */
    void *box;           /* the mailbox: mapped page-locked (resident_box.h) */
    CUdeviceptr box_dev; /* the mailbox's address on the device */
    CUdeviceptr image;   /* a data resident's buffer (WP_RESIDENT_IMAGE_BYTES): its jobs' images land there */
    const void *fn;      /* the kernel it runs (a cuda_fn) */
    bool alive;          /* launched and not yet seen gone */
    atomic_bool off;     /* a kernel left without a word: resident kernels are not tried again */
    unsigned seq;        /* the last job's sequence number */
    unsigned idle_us;    /* --resident-us (0: none); set before the first job */
    atomic_ullong runs;  /* jobs it answered (wp_device_info) */
    atomic_ullong launches;
} cuda_resident;

typedef struct cuda_backend {
    wp_backend base;
    void *lib;
    wp_cu cu;
    CUdevice dev;
    int ordinal;
    /* mu guards everything below it up to `info`; cv wakes the gate's waiters and a reset (a thread
     * waiting for a lane sleeps in lane_gate, woken alone when one is given back to it). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    CUcontext ctx; /* the retained primary context (or, after a reset, our own); NULL once lost */
    bool ctx_own;  /* ctx came from cuCtxCreate: destroy it rather than release the primary */
    char lost_reason[200];
    unsigned generation; /* bumped by every context reset */
    int inflight;        /* operations inside the gate */
    bool resetting;      /* a reset waits for inflight to reach 0; no one enters meanwhile */
    int waiters;         /* threads waiting on cv */
    cuda_lane *lanes;    /* n_lanes of them */
    int n_lanes;
    wp_lane_gate lane_gate;       /* the free lanes, and the threads waiting for one, in turn by user */
    bool wait_yield;              /* --gpu-wait yield (cuda_event_wait); set before the first job, read without mu */
    bool zero_copy;               /* --zero-copy (cuda_zero_copy); likewise */
    atomic_ullong zero_copy_runs; /* runs made zero-copy (wp_device_info) */
    /* The generation while ctx is usable and no reset runs, else 0: written under mu (cuda_publish),
     * read without it, so that asking whether the device is usable and in which generation costs a
     * load, not the device's lock (0 sends the reader to mu). */
    atomic_uint live_gen;
    cuda_ring *idle_rings;
    int n_idle_rings;
    struct {
        CUdeviceptr *ptr;
        unsigned *gen;
        int n;
    } pool[WP_MEMPOOL_CLASSES];    /* freed small buffers kept for the next alloc (cuMemFree waits) */
    pthread_mutex_t load_mu;       /* a function's lazy reload after a reset; the IPC mappings below */
    struct cuda_ipc_map *ipc_maps; /* handles opened (cuda_ipc.c), each shared by its buffers */
    wp_device_info info;           /* mem_free updated by info under mu */
    cuda_resident resident;
} cuda_backend;

/* An operation in progress: inside the gate, with a lane when it asked for one. */
typedef struct {
    cuda_backend *b;
    cuda_lane *lane;
    int who;      /* with a lane: its user's slot in the lane gate */
    unsigned gen; /* the generation it entered in */
} cuda_op;

/* cuda_device.c */
void cuda_publish(cuda_backend *b); /* live_gen from ctx, generation and resetting; mu held */
int cuda_device_start(cuda_backend *b, int ordinal, wp_err *err); /* context and facts */
/* cuInit, the ordinal checked against the driver's count, the device and its sm (major * 10 + minor):
 * how opening a device and wp_backend_cuda_sm both begin. 0, or -1 with err (503 cuda_unavailable). */
int cuda_device_find(const wp_cu *cu, int ordinal, CUdevice *dev, int *sm, wp_err *err);
void cuda_device_stop(cuda_backend *b); /* everything, for close */
/* Enters the gate (waiting while a reset runs): 503 "cuda_unavailable" once the device is lost.
 * With want_lane, also takes a free lane with its stream ready in this context; when none is free it
 * waits for one in its user's turn (lane_gate.h; the user is whom the calling thread works for,
 * util/on_behalf.h). The context is made current on the calling thread. */
int cuda_op_begin(cuda_backend *b, bool want_lane, cuda_op *op, wp_err *err);
void cuda_op_end(cuda_op *op);
/* Call r failed: fills err (500 "cuda_error"), ends the op, and when the error is sticky (or the
 * context no longer synchronizes) resets the context (once, whichever op saw it first). Returns -1. */
int cuda_op_fail(cuda_op *op, wp_err *err, const char *call, CUresult r);
/* Frees an upload ring: its driver objects too when they live in context generation live_gen (else
 * they died with theirs). With the context current. */
void cuda_ring_destroy(cuda_backend *b, cuda_ring *r, unsigned live_gen);

/* cuda_ipc.c: the ops for memory warpd did not allocate (buffer.h) */
int cuda_host_register(wp_backend *be, void *p, size_t len, wp_err *err);
void cuda_host_unregister(wp_backend *be, void *p);
int cuda_ipc_open(wp_backend *be, const unsigned char handle[64], uint64_t *base, size_t *bytes, void **ipc,
                  wp_err *err);
void cuda_ipc_close(wp_backend *be, void *ipc);
void cuda_ipc_close_all(cuda_backend *b); /* at close: mappings no buffer gave back */

/* cuda_launch.c: the ops of kernels (backend_impl.h's load, unload, run_warp, launch, launch_io) */
int cuda_load(wp_backend *base, const wp_artifact *a, void **out, wp_err *err);
void cuda_unload(wp_backend *base, void *p);
int cuda_run_warp(wp_backend *base, void *fnp, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                  wp_run_timing *t, wp_err *err);
int cuda_launch(wp_backend *base, void *const *fns, const wp_launch *ls, int n, double *kernel_us, wp_err *err);
int cuda_launch_io(wp_backend *base, void *const *fns, const wp_launch *ls, int n, const wp_launch_io *io,
                   wp_run_timing *t, wp_err *err);

/* cuda_buffers.c: the ops of buffers and upload rings (backend_impl.h's buf_* and upload_*) */
int cuda_buf_alloc(wp_backend *base, wp_buf *buf, wp_err *err);
void cuda_buf_free(wp_backend *base, wp_buf *buf);
int cuda_buf_write(wp_backend *base, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err);
int cuda_buf_read(wp_backend *base, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err);
int cuda_buf_memset(wp_backend *base, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err);
int cuda_buf_copy(wp_backend *base, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len,
                  wp_err *err);
void *cuda_upload_open(wp_backend *base, size_t slot_bytes, int slots, void **host, wp_err *err);
int cuda_upload_send(wp_backend *base, void *ringp, int slot, wp_buf *buf, size_t offset, size_t len, wp_err *err);
int cuda_upload_wait(wp_backend *base, void *ringp, int slot, wp_err *err);
void cuda_upload_close(wp_backend *base, void *ringp);

/* cuda_resident.c. Whether job may go to the resident kernel (on, not off, fits one warp). Only a
 * kernel built from the spec's resident variant (wp_spec.resident: -DWP_RESIDENT) may be launched as
 * one: cuda_run_warp asks for both. */
bool cuda_resident_fits(const cuda_backend *b, const wp_warp_job *job);
/* A job for the resident: a warp job (its answer into res), or a batched data kernel's image
 * (backend.h's wp_resident_image: its answer into image->image). */
typedef struct {
    const wp_warp_job *warp;
    wp_warp_result *res;
    const wp_resident_image *image;
    wp_run_timing *t; /* its meanwhile hook (a warp job's, or an image's), called once the job is posted */
} cuda_resident_job;

/* An untimed job through the resident kernel of fn (f: its function in op's context), launched when
 * it is not there: 0 done (the answer filled in), 1 not taken (another job holds the resident, or the
 * kernel left without it: run it as usual; op still open), -1 failed (err; op ended by cuda_op_fail). */
int cuda_resident_run(cuda_op *op, const void *fn, CUfunction f, const cuda_resident_job *j, wp_err *err);
/* Whether an image may go to the resident (on, not off, within the mailbox and the resident's buffer). */
bool cuda_resident_image_fits(const cuda_backend *b, const wp_resident_image *im);
/* cuda_launch.c: im through the resident of fn (wp_backend_cuda_run_resident_image). */
int cuda_run_resident_image(wp_backend *base, void *fn, const wp_resident_image *im, double *device_us, wp_err *err);
/* Before fn's module is unloaded (context current, generation gen): a resident running it leaves. */
void cuda_resident_forget(cuda_backend *b, const void *fn, unsigned gen);
/* At close, before the device stops: the resident leaves and its objects are freed (those of an older
 * context died with it). */
void cuda_resident_close(cuda_backend *b);

/* cuda_streams.c */
int cuda_lanes_make(cuda_backend *b, int n, wp_err *err); /* the pool, empty of driver objects */
void cuda_lanes_free(cuda_backend *b);                    /* at close: objects of the live context */
void cuda_lane_forget(cuda_lane *l);                      /* after a reset: its objects died with the old context */
CUresult cuda_lane_ready(cuda_backend *b, cuda_lane *l, unsigned gen, const char **call);
/* Grows the lane's device scratch and page-locked staging to at least need bytes (0: leave). */
CUresult cuda_lane_reserve(cuda_backend *b, cuda_lane *l, size_t scratch, size_t host, const char **call);
/* Whether an untimed op whose image is `bytes` long runs zero-copy on lane l (--zero-copy on, at most
 * WP_ZERO_COPY_MAX bytes, the staging mapped; it is reserved for the image here): its kernel reads and
 * writes the image in l->host through l->host_dev, over the bus, with no copy queued either way. A
 * yes is counted (zero_copy_runs). Only for kernels that use plain loads and stores on it: no
 * atomics, no other block waiting on it. */
bool cuda_zero_copy(cuda_backend *b, cuda_lane *l, size_t bytes);
/* Records ev_done on the lane's stream and waits for it: the op's queued work is done. */
CUresult cuda_lane_wait(cuda_backend *b, cuda_lane *l, const char **call);
/* A job's wait for an event on its lane: the driver's own wait (it spins, on a context made with the
 * default flags), or under --gpu-wait yield a poll that gives the CPU to any runnable thread between
 * polls, so the streams' waiting threads leave the cores to the HTTP side when it needs them. */
CUresult cuda_event_wait(cuda_backend *b, CUevent ev);
CUresult cuda_event_wait_as(cuda_backend *b, CUevent ev, bool yield); /* yield: query and sched_yield */

/* An event interval (cuEventElapsedTime's float milliseconds) in microseconds, to the nanosecond like
 * every other timing in a response: the float's last bits are noise, and a whole count of
 * thousandths prints without printf (jsonout.c). */
static inline double cuda_ms_to_us(float ms) { return nearbyint((double)ms * 1e6) / 1e3; }

#endif
