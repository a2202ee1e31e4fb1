/* backend_cuda.c — the GPU backend: the CUDA Driver API reached through dlopen("libcuda.so.1"), never
 * linked. The only dlsym is cuGetProcAddress_v2; every other entry point is resolved through it into
 * one table per backend (STYLE §6). Holds one device, its primary context, one stream, two timing
 * events and a scratch buffer reused by every warp launch. One mutex serializes operations, and each
 * operation makes the context current first, since callers come from any worker thread.
 *
 * Recovery: a sticky error (illegal address, launch failure, ...) poisons the context. The job fails
 * with 500 "cuda_error" and the context is replaced (see cuda_reset), the generation counter going
 * up. A loaded function remembers the generation it was loaded in and keeps its own copy of the
 * cubin, so a function the cache still holds is reloaded lazily on its next run. Where the driver
 * refuses a new context in-process (seen on H100, driver 580), the backend is lost and every later
 * operation fails with 503 "cuda_unavailable".
 * Owns: cuda_backend, cuda_fn. */
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"

/* The PFN_*_vNNNN typedefs below are, for each symbol, the newest variant at or below this version,
 * so this is the version we ask cuGetProcAddress for (asking for a newer one could hand back a
 * variant with another signature, e.g. cuCtxSynchronize gained a context argument in 13.0). */
#define WP_CU_API_VERSION 13000
_Static_assert(CUDA_VERSION >= WP_CU_API_VERSION, "warpd's driver table needs CUDA 13.0 headers or newer");

#define WP_CU_LIB "libcuda.so.1"
#define WP_SCRATCH_ALIGN 256
#define WP_POISON 0xbadc0ffee0ddf00dull /* out[] pre-fill: a slot the kernel never wrote keeps it */

typedef struct wp_cu {
    PFN_cuGetErrorName_v6000 get_error_name;
    PFN_cuGetErrorString_v6000 get_error_string;
    PFN_cuInit_v2000 init;
    PFN_cuDeviceGetCount_v2000 device_get_count;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDeviceGetName_v2000 device_get_name;
    PFN_cuDeviceGetAttribute_v2000 device_get_attribute;
    PFN_cuDeviceTotalMem_v3020 device_total_mem;
    PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release;
    PFN_cuDevicePrimaryCtxReset_v11000 primary_ctx_reset;
    PFN_cuCtxCreate_v12050 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxSetCurrent_v4000 ctx_set_current;
    PFN_cuCtxSynchronize_v13000 ctx_synchronize;
    PFN_cuMemGetInfo_v3020 mem_get_info;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemHostAlloc_v2020 mem_host_alloc;
    PFN_cuMemFreeHost_v2000 mem_free_host;
    PFN_cuMemcpyHtoDAsync_v3020 memcpy_htod_async;
    PFN_cuMemcpyDtoHAsync_v3020 memcpy_dtoh_async;
    PFN_cuMemcpyDtoDAsync_v3020 memcpy_dtod_async;
    PFN_cuMemsetD8Async_v3020 memset_d8_async;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuStreamSynchronize_v2000 stream_synchronize;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuEventRecord_v2000 event_record;
    PFN_cuEventSynchronize_v2000 event_synchronize;
    PFN_cuEventElapsedTime_v12080 event_elapsed_time;
    PFN_cuModuleLoadData_v2000 module_load_data;
    PFN_cuModuleUnload_v2000 module_unload;
    PFN_cuModuleGetFunction_v2000 module_get_function;
    PFN_cuLaunchKernel_v4000 launch_kernel;
    PFN_cuLaunchKernelEx_v11060 launch_kernel_ex;
    PFN_cuStreamBeginCapture_v10010 stream_begin_capture;
    PFN_cuStreamEndCapture_v10000 stream_end_capture;
    PFN_cuGraphInstantiateWithFlags_v11040 graph_instantiate;
    PFN_cuGraphLaunch_v10000 graph_launch;
    PFN_cuGraphExecDestroy_v10000 graph_exec_destroy;
    PFN_cuGraphDestroy_v10000 graph_destroy;
} wp_cu;

static const struct {
    const char *name; /* base name, as cuGetProcAddress wants it */
    size_t slot;      /* offsetof(wp_cu, ...) */
} cu_syms[] = {
    {"cuGetErrorName", offsetof(wp_cu, get_error_name)},
    {"cuGetErrorString", offsetof(wp_cu, get_error_string)},
    {"cuInit", offsetof(wp_cu, init)},
    {"cuDeviceGetCount", offsetof(wp_cu, device_get_count)},
    {"cuDeviceGet", offsetof(wp_cu, device_get)},
    {"cuDeviceGetName", offsetof(wp_cu, device_get_name)},
    {"cuDeviceGetAttribute", offsetof(wp_cu, device_get_attribute)},
    {"cuDeviceTotalMem", offsetof(wp_cu, device_total_mem)},
    {"cuDevicePrimaryCtxRetain", offsetof(wp_cu, primary_ctx_retain)},
    {"cuDevicePrimaryCtxRelease", offsetof(wp_cu, primary_ctx_release)},
    {"cuDevicePrimaryCtxReset", offsetof(wp_cu, primary_ctx_reset)},
    {"cuCtxCreate", offsetof(wp_cu, ctx_create)},
    {"cuCtxDestroy", offsetof(wp_cu, ctx_destroy)},
    {"cuCtxSetCurrent", offsetof(wp_cu, ctx_set_current)},
    {"cuCtxSynchronize", offsetof(wp_cu, ctx_synchronize)},
    {"cuMemGetInfo", offsetof(wp_cu, mem_get_info)},
    {"cuMemAlloc", offsetof(wp_cu, mem_alloc)},
    {"cuMemFree", offsetof(wp_cu, mem_free)},
    {"cuMemHostAlloc", offsetof(wp_cu, mem_host_alloc)},
    {"cuMemFreeHost", offsetof(wp_cu, mem_free_host)},
    {"cuMemcpyHtoDAsync", offsetof(wp_cu, memcpy_htod_async)},
    {"cuMemcpyDtoHAsync", offsetof(wp_cu, memcpy_dtoh_async)},
    {"cuMemcpyDtoDAsync", offsetof(wp_cu, memcpy_dtod_async)},
    {"cuMemsetD8Async", offsetof(wp_cu, memset_d8_async)},
    {"cuStreamCreate", offsetof(wp_cu, stream_create)},
    {"cuStreamDestroy", offsetof(wp_cu, stream_destroy)},
    {"cuStreamSynchronize", offsetof(wp_cu, stream_synchronize)},
    {"cuEventCreate", offsetof(wp_cu, event_create)},
    {"cuEventDestroy", offsetof(wp_cu, event_destroy)},
    {"cuEventRecord", offsetof(wp_cu, event_record)},
    {"cuEventSynchronize", offsetof(wp_cu, event_synchronize)},
    {"cuEventElapsedTime", offsetof(wp_cu, event_elapsed_time)},
    {"cuModuleLoadData", offsetof(wp_cu, module_load_data)},
    {"cuModuleUnload", offsetof(wp_cu, module_unload)},
    {"cuModuleGetFunction", offsetof(wp_cu, module_get_function)},
    {"cuLaunchKernel", offsetof(wp_cu, launch_kernel)},
    {"cuLaunchKernelEx", offsetof(wp_cu, launch_kernel_ex)},
    {"cuStreamBeginCapture", offsetof(wp_cu, stream_begin_capture)},
    {"cuStreamEndCapture", offsetof(wp_cu, stream_end_capture)},
    {"cuGraphInstantiateWithFlags", offsetof(wp_cu, graph_instantiate)},
    {"cuGraphLaunch", offsetof(wp_cu, graph_launch)},
    {"cuGraphExecDestroy", offsetof(wp_cu, graph_exec_destroy)},
    {"cuGraphDestroy", offsetof(wp_cu, graph_destroy)},
};

#define WP_UPLOAD_SLOTS_MAX 8
#define WP_UPLOAD_IDLE_MAX 2 /* upload rings kept for the next upload (page-locking memory is slow) */

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

typedef struct {
    wp_backend base;
    void *lib;
    wp_cu cu;
    pthread_mutex_t lock;
    CUdevice dev;
    CUcontext ctx; /* the retained primary context (or, after a reset, our own); NULL once lost */
    bool ctx_own;  /* ctx came from cuCtxCreate: destroy it rather than release the primary */
    char lost_reason[200];
    CUstream stream;
    CUevent ev_start, ev_stop;
    CUevent ev_upload, ev_download; /* bracket a warp run's copies, so one wait times all three steps */
    CUdeviceptr scratch;
    size_t scratch_cap;
    unsigned char *staging; /* host image of the scratch layout */
    size_t staging_cap;
    unsigned generation; /* bumped by every context reset */
    cuda_ring *idle_rings;
    int n_idle_rings;
    wp_device_info info;
} cuda_backend;

/* A loaded kernel. Keeps its own cubin so it can be reloaded after a context reset. */
typedef struct {
    CUmodule module;
    CUfunction function;
    unsigned generation;
    unsigned char *cubin;
    size_t cubin_len;
    char *lowered;
} cuda_fn;

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
static const char *cu_error_text(const cuda_backend *b, CUresult r, char *buf, size_t n) {
    const char *name = NULL, *str = NULL;
    if (b->cu.get_error_name && b->cu.get_error_name(r, &name) != CUDA_SUCCESS) name = NULL;
    if (b->cu.get_error_string && b->cu.get_error_string(r, &str) != CUDA_SUCCESS) str = NULL;
    if (name)
        snprintf(buf, n, "%s (%s)", name, str ? str : "no description");
    else
        snprintf(buf, n, "CUresult %d", (int)r);
    return buf;
}

static int cu_fail(const cuda_backend *b, wp_err *err, const char *call, CUresult r) {
    char text[160];
    return WP_FAIL(err, 500, "cuda_error", "", "%s failed: %s", call, cu_error_text(b, r, text, sizeof text));
}

/* Errors after which the context is unusable until reset. */
static bool cu_is_sticky(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
        return true;
    default:
        return false;
    }
}

/* Stream and events in the current context. */
static CUresult cuda_make_stream(cuda_backend *b, const char **call) {
    CUresult r;
    *call = "cuStreamCreate";
    if ((r = b->cu.stream_create(&b->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) return r;
    *call = "cuEventCreate";
    if ((r = b->cu.event_create(&b->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) return r;
    if ((r = b->cu.event_create(&b->ev_upload, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) return r;
    if ((r = b->cu.event_create(&b->ev_download, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) return r;
    return b->cu.event_create(&b->ev_stop, CU_EVENT_DEFAULT);
}

/* Frees what lives in the context (stream, events, scratch); the context itself stays. */
static void cuda_drop_context_objects(cuda_backend *b) {
    if (b->ev_start) b->cu.event_destroy(b->ev_start);
    if (b->ev_stop) b->cu.event_destroy(b->ev_stop);
    if (b->ev_upload) b->cu.event_destroy(b->ev_upload);
    if (b->ev_download) b->cu.event_destroy(b->ev_download);
    if (b->stream) b->cu.stream_destroy(b->stream);
    if (b->scratch) b->cu.mem_free(b->scratch);
    b->ev_start = b->ev_stop = b->ev_upload = b->ev_download = NULL;
    b->stream = NULL;
    b->scratch = 0;
    b->scratch_cap = 0;
}

/* The context to work in, current, with a stream and events, checked by a synchronize (a context
 * that inherited a sticky error fails it). Lock held. On failure *call names the step. */
static CUresult cuda_context_ready(cuda_backend *b, const char **call) {
    CUresult r;
    *call = "cuCtxSetCurrent";
    if ((r = b->cu.ctx_set_current(b->ctx)) != CUDA_SUCCESS) return r;
    *call = "cuCtxSynchronize";
    if ((r = b->cu.ctx_synchronize(b->ctx)) != CUDA_SUCCESS) return r;
    return cuda_make_stream(b, call);
}

/* Gives up the context in b->ctx (primary: release; own: destroy). */
static void cuda_context_drop(cuda_backend *b) {
    if (!b->ctx) return;
    cuda_drop_context_objects(b);
    if (b->ctx_own)
        b->cu.ctx_destroy(b->ctx);
    else
        b->cu.primary_ctx_release(b->dev);
    b->ctx = NULL;
    b->ctx_own = false;
}

/* After a sticky error: throw the poisoned context away and work in a fresh one — the primary
 * context after cuDevicePrimaryCtxReset, else a context of our own (cuCtxCreate). The CUDA docs say a
 * sticky error may need a new process; then the backend is lost and every later operation fails with
 * 503 (the daemon can fall back to emu). Modules die with the context; cuda_fn notices through the
 * generation. Caller holds the lock. Returns 0 when the backend is usable again; *how says which way. */
static int cuda_reset(cuda_backend *b, const char **how, char *why, size_t wn) {
    /* Handles of the poisoned context are forgotten, not destroyed: the reset frees them. */
    b->ev_start = b->ev_stop = b->ev_upload = b->ev_download = NULL;
    b->stream = NULL;
    b->scratch = 0;
    b->scratch_cap = 0;
    b->generation++;
    b->cu.ctx_set_current(NULL);
    if (b->ctx_own) {
        b->cu.ctx_destroy(b->ctx);
    } else {
        b->cu.primary_ctx_reset(b->dev);
        b->cu.primary_ctx_release(b->dev);
    }
    b->ctx = NULL;
    b->ctx_own = false;

    char text[160];
    const char *call = "cuDevicePrimaryCtxRetain";
    CUresult r = b->cu.primary_ctx_retain(&b->ctx, b->dev);
    if (r == CUDA_SUCCESS && (r = cuda_context_ready(b, &call)) == CUDA_SUCCESS) {
        *how = "fresh primary context";
        return 0;
    }
    if (r != CUDA_SUCCESS && b->ctx) cuda_context_drop(b);
    b->ctx = NULL;
    int len = snprintf(why, wn, "primary context: %s: %s", call, cu_error_text(b, r, text, sizeof text));

    call = "cuCtxCreate";
    r = b->cu.ctx_create(&b->ctx, NULL, 0, b->dev);
    if (r == CUDA_SUCCESS) {
        b->ctx_own = true;
        if ((r = cuda_context_ready(b, &call)) == CUDA_SUCCESS) {
            *how = "new context";
            return 0;
        }
        cuda_context_drop(b);
    }
    b->ctx = NULL;
    if (len > 0 && (size_t)len < wn)
        snprintf(why + len, wn - (size_t)len, "; new context: %s: %s", call, cu_error_text(b, r, text, sizeof text));
    b->cu.ctx_set_current(NULL);
    return -1;
}

/* Start of every operation: lock held, context current. Fails when the device was lost. */
static int cuda_enter(cuda_backend *b, wp_err *err) {
    if (!b->ctx)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "the CUDA device is lost until warpd restarts (%s)",
                       b->lost_reason);
    CUresult r = b->cu.ctx_set_current(b->ctx);
    if (r != CUDA_SUCCESS) return cu_fail(b, err, "cuCtxSetCurrent", r);
    return 0;
}

/* A call failed with r: fail the job, and reset the context if the error is sticky (the failing call
 * may report a sticky error itself, or an earlier asynchronous one shows up in cuCtxSynchronize). */
static int cuda_fail_op(cuda_backend *b, wp_err *err, const char *call, CUresult r) {
    wp_err local;
    if (!err) err = &local;
    cu_fail(b, err, call, r);
    CUresult sync = b->cu.ctx_synchronize(b->ctx);
    if (cu_is_sticky(r) || sync != CUDA_SUCCESS) {
        const char *how = "";
        size_t len = strlen(err->msg);
        if (cuda_reset(b, &how, b->lost_reason, sizeof b->lost_reason) == 0)
            snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context was reset (%s)", how);
        else
            snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context could not be recreated: %s",
                     b->lost_reason);
    }
    return -1;
}

static void cuda_ring_destroy(cuda_backend *b, cuda_ring *r);

static void cuda_close(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    if (b->ctx && b->cu.ctx_set_current(b->ctx) == CUDA_SUCCESS) b->cu.ctx_synchronize(b->ctx);
    while (b->idle_rings) {
        cuda_ring *r = b->idle_rings;
        b->idle_rings = r->next;
        cuda_ring_destroy(b, r);
    }
    cuda_context_drop(b);
    pthread_mutex_destroy(&b->lock);
    free(b->staging);
    if (b->lib) dlclose(b->lib);
    free(b);
}

static void cuda_info(wp_backend *base, wp_device_info *out) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    size_t free_bytes = 0, total_bytes = 0;
    if (cuda_enter(b, NULL) == 0 && b->cu.mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS)
        b->info.mem_free = free_bytes;
    *out = b->info;
    pthread_mutex_unlock(&b->lock);
}

/* Loads fn's cubin into the current context. Lock held. */
static int cuda_fn_load(cuda_backend *b, cuda_fn *fn, wp_err *err) {
    CUmodule module = NULL;
    CUfunction function = NULL;
    CUresult r = b->cu.module_load_data(&module, fn->cubin);
    if (r != CUDA_SUCCESS) return cuda_fail_op(b, err, "cuModuleLoadData", r);
    r = b->cu.module_get_function(&function, module, fn->lowered);
    if (r != CUDA_SUCCESS) {
        cu_fail(b, err, "cuModuleGetFunction", r);
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " for %.80s", fn->lowered);
        b->cu.module_unload(module);
        return -1;
    }
    fn->module = module;
    fn->function = function;
    fn->generation = b->generation;
    return 0;
}

static int cuda_load(wp_backend *base, const wp_artifact *a, void **out, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    *out = NULL;
    if (!a->cubin || !a->cubin_len || !a->lowered)
        return WP_FAIL(err, 500, "cuda_error", "", "the artifact has no cubin or kernel name to load");
    cuda_fn *fn = calloc(1, sizeof *fn);
    if (fn) fn->cubin = malloc(a->cubin_len);
    if (fn) fn->lowered = strdup(a->lowered);
    if (!fn || !fn->cubin || !fn->lowered) {
        if (fn) {
            free(fn->cubin);
            free(fn->lowered);
        }
        free(fn);
        return WP_FAIL(err, 500, "out_of_memory", "", "out of memory loading a kernel");
    }
    memcpy(fn->cubin, a->cubin, a->cubin_len);
    fn->cubin_len = a->cubin_len;
    pthread_mutex_lock(&b->lock);
    int rc = cuda_enter(b, err);
    if (rc == 0) rc = cuda_fn_load(b, fn, err);
    pthread_mutex_unlock(&b->lock);
    if (rc) {
        free(fn->cubin);
        free(fn->lowered);
        free(fn);
        return -1;
    }
    *out = fn;
    return 0;
}

static void cuda_unload(wp_backend *base, void *p) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_fn *fn = p;
    if (!fn) return;
    pthread_mutex_lock(&b->lock);
    /* A module of an older generation died with its context. */
    if (fn->module && fn->generation == b->generation && cuda_enter(b, NULL) == 0) b->cu.module_unload(fn->module);
    pthread_mutex_unlock(&b->lock);
    free(fn->cubin);
    free(fn->lowered);
    free(fn);
}

static size_t align_up(size_t x) { return (x + WP_SCRATCH_ALIGN - 1) & ~(size_t)(WP_SCRATCH_ALIGN - 1); }

/* Device (and staging) layout: out | src | in | arg | active. One upload of everything (out and src
 * pre-filled), one download of out | src. */
typedef struct {
    size_t out, src, in, arg, active, download, total;
} warp_layout;

static warp_layout warp_layout_for(int n, int elems) {
    warp_layout l;
    size_t values = (size_t)n * (size_t)elems * sizeof(uint64_t);
    l.out = 0;
    l.src = align_up(l.out + values);
    l.download = l.src + (size_t)n * sizeof(int32_t);
    l.in = align_up(l.download);
    l.arg = align_up(l.in + values);
    l.active = align_up(l.arg + (size_t)n * sizeof(int32_t));
    l.total = align_up(l.active + (size_t)n);
    return l;
}

/* Lock held. Grows the device scratch and the host staging buffer to at least `need` bytes. */
static int cuda_reserve(cuda_backend *b, size_t need, wp_err *err) {
    if (need > b->staging_cap) {
        unsigned char *s = realloc(b->staging, need);
        if (!s) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for a %zu-byte staging buffer", need);
        b->staging = s;
        b->staging_cap = need;
    }
    if (need > b->scratch_cap) {
        if (b->scratch) b->cu.mem_free(b->scratch);
        b->scratch = 0;
        b->scratch_cap = 0;
        CUresult r = b->cu.mem_alloc(&b->scratch, need);
        if (r != CUDA_SUCCESS) return cuda_fail_op(b, err, "cuMemAlloc", r);
        b->scratch_cap = need;
    }
    return 0;
}

static int cuda_run_warp_locked(cuda_backend *b, cuda_fn *fn, const wp_warp_job *job, wp_warp_result *res,
                                wp_run_timing *t, wp_err *err) {
    const int n = job->n, elems = job->elems;
    warp_layout l = warp_layout_for(n, elems);
    if (cuda_enter(b, err) || cuda_reserve(b, l.total, err)) return -1;
    if (fn->generation != b->generation && cuda_fn_load(b, fn, err)) return -1;

    /* Host image: poisoned out, src -1, then inputs (absent arrays read as zeros / all active). */
    unsigned char *h = b->staging;
    const size_t values = (size_t)n * (size_t)elems;
    for (size_t i = 0; i < values; i++) ((uint64_t *)(h + l.out))[i] = WP_POISON;
    memset(h + l.src, 0xff, (size_t)n * sizeof(int32_t));
    if (job->in)
        memcpy(h + l.in, job->in, values * sizeof(uint64_t));
    else
        memset(h + l.in, 0, values * sizeof(uint64_t));
    if (job->arg)
        memcpy(h + l.arg, job->arg, (size_t)n * sizeof(int32_t));
    else
        memset(h + l.arg, 0, (size_t)n * sizeof(int32_t));
    if (job->active)
        memcpy(h + l.active, job->active, (size_t)n);
    else
        memset(h + l.active, 1, (size_t)n);

    wp_warp_params p = {
        .in = b->scratch + l.in,
        .out = b->scratch + l.out,
        .src = b->scratch + l.src,
        .arg = b->scratch + l.arg,
        .active = b->scratch + l.active,
        .pred_a = job->pred_a,
        .pred_b = job->pred_b,
        .n = n,
        .elems = elems,
        .pred_kind = job->pred_kind,
        .first = job->first,
        .second = job->second,
    };
    void *params[] = {&p};
    const unsigned threads = (unsigned)((n + 31) / 32 * 32);
    CUresult r;
#define CU_TRY(call, name)                                                                                             \
    do {                                                                                                               \
        if ((r = (call)) != CUDA_SUCCESS) return cuda_fail_op(b, err, (name), r);                                      \
    } while (0)

    /* Upload, kernel and download are queued back to back and waited for once; events between them
     * time each step on the device. */
    CU_TRY(b->cu.event_record(b->ev_upload, b->stream), "cuEventRecord");
    CU_TRY(b->cu.memcpy_htod_async(b->scratch, h, l.total, b->stream), "cuMemcpyHtoDAsync");
    CU_TRY(b->cu.event_record(b->ev_start, b->stream), "cuEventRecord");
    CU_TRY(b->cu.launch_kernel(fn->function, 1, 1, 1, threads, 1, 1, 0, b->stream, params, NULL), "cuLaunchKernel");
    CU_TRY(b->cu.event_record(b->ev_stop, b->stream), "cuEventRecord");
    CU_TRY(b->cu.memcpy_dtoh_async(h, b->scratch, l.download, b->stream), "cuMemcpyDtoHAsync");
    CU_TRY(b->cu.event_record(b->ev_download, b->stream), "cuEventRecord");
    CU_TRY(b->cu.event_synchronize(b->ev_download), "the warp run (cuEventSynchronize)");
    float upload_ms = 0, kernel_ms = 0, download_ms = 0;
    CU_TRY(b->cu.event_elapsed_time(&upload_ms, b->ev_upload, b->ev_start), "cuEventElapsedTime");
    CU_TRY(b->cu.event_elapsed_time(&kernel_ms, b->ev_start, b->ev_stop), "cuEventElapsedTime");
    CU_TRY(b->cu.event_elapsed_time(&download_ms, b->ev_stop, b->ev_download), "cuEventElapsedTime");
    const double upload_us = (double)upload_ms * 1000.0, download_us = (double)download_ms * 1000.0;
#undef CU_TRY

    memcpy(res->out, h + l.out, values * sizeof(uint64_t));
    memcpy(res->src, h + l.src, (size_t)n * sizeof(int32_t));
    if (t) {
        t->upload_us = upload_us;
        t->kernel_us = (double)kernel_ms * 1000.0;
        t->download_us = download_us;
    }
    return 0;
}

static int cuda_run_warp(wp_backend *base, void *fnp, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                         wp_run_timing *t, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_fn *fn = fnp;
    if (!fn) return WP_FAIL(err, 500, "cuda_error", "", "no loaded kernel for the cuda backend");
    if (job->n < 1 || job->n > WP_MAX_LANES)
        return WP_FAIL(err, 400, "bad_n", "n", "n %d is outside 1..%d", job->n, WP_MAX_LANES);
    if (job->elems < 1 || job->elems > WP_MAX_ELEMS)
        return WP_FAIL(err, 400, "bad_elems", "elems", "elems %d is outside 1..%d", job->elems, WP_MAX_ELEMS);
    if (s && s->family && s->family->min_sm > b->info.sm)
        return WP_FAIL(err, 400, "unsupported_on_device", "family", "family %s needs sm_%d; the device is sm_%d",
                       s->family->name, s->family->min_sm, b->info.sm);
    pthread_mutex_lock(&b->lock);
    int rc = cuda_run_warp_locked(b, fn, job, res, t, err);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static bool cuda_usable(wp_backend *base, char *why, size_t n) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    bool ok = b->ctx != NULL;
    if (!ok && n) snprintf(why, n, "%s", b->lost_reason);
    pthread_mutex_unlock(&b->lock);
    return ok;
}

/* ---- buffers and launches (buffer.h): device memory from cuMemAlloc, copies on the backend's
 * stream, waited for before returning. backend.c has checked ranges; a buffer of an older context
 * generation is gone (410), and its memory died with that context. ---- */

static int cuda_buf_enter(cuda_backend *b, const wp_buf *buf, wp_err *err) {
    if (cuda_enter(b, err)) return -1;
    if (buf->generation != b->generation)
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    return 0;
}

static int cuda_buf_alloc(wp_backend *base, wp_buf *buf, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    int rc = cuda_enter(b, err);
    if (rc == 0) {
        CUdeviceptr p = 0;
        CUresult r = b->cu.mem_alloc(&p, buf->size);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            rc = WP_FAIL(err, 507, "out_of_memory", "", "the GPU has no room for %zu bytes", buf->size);
        else if (r != CUDA_SUCCESS)
            rc = cuda_fail_op(b, err, "cuMemAlloc", r);
        buf->addr = p;
        buf->generation = b->generation;
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static void cuda_buf_free(wp_backend *base, wp_buf *buf) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    if (buf->addr && cuda_buf_enter(b, buf, NULL) == 0) b->cu.mem_free(buf->addr);
    pthread_mutex_unlock(&b->lock);
}

/* One stream operation, then a wait for it. */
#define CUDA_BUF_OP(b, buf, err, name, call)                                                                           \
    do {                                                                                                               \
        pthread_mutex_lock(&(b)->lock);                                                                                \
        int rc_ = cuda_buf_enter((b), (buf), (err));                                                                   \
        CUresult r_ = CUDA_SUCCESS;                                                                                    \
        if (rc_ == 0 && (r_ = (call)) == CUDA_SUCCESS) r_ = (b)->cu.stream_synchronize((b)->stream);                   \
        if (rc_ == 0 && r_ != CUDA_SUCCESS) rc_ = cuda_fail_op((b), (err), (name), r_);                                \
        pthread_mutex_unlock(&(b)->lock);                                                                              \
        return rc_;                                                                                                    \
    } while (0)

static int cuda_buf_write(wp_backend *base, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    CUDA_BUF_OP(b, buf, err, "cuMemcpyHtoDAsync", b->cu.memcpy_htod_async(buf->addr + offset, src, len, b->stream));
}

static int cuda_buf_read(wp_backend *base, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    CUDA_BUF_OP(b, buf, err, "cuMemcpyDtoHAsync", b->cu.memcpy_dtoh_async(dst, buf->addr + offset, len, b->stream));
}

static int cuda_buf_memset(wp_backend *base, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    CUDA_BUF_OP(b, buf, err, "cuMemsetD8Async",
                b->cu.memset_d8_async(buf->addr + offset, (unsigned char)byte, len, b->stream));
}

static int cuda_buf_copy(wp_backend *base, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset,
                         size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    if (src->generation != dst->generation)
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    CUDA_BUF_OP(b, dst, err, "cuMemcpyDtoDAsync",
                b->cu.memcpy_dtod_async(dst->addr + dst_offset, src->addr + src_offset, len, b->stream));
}
#undef CUDA_BUF_OP

/* Whether a launch goes as a programmatic dependent: the kernel allows it (WP_LAUNCH_OVERLAP) and the
 * device has it (sm_90+). */
static bool cuda_overlaps(const cuda_backend *b, const wp_launch *l) {
    return (l->flags & WP_LAUNCH_OVERLAP) && b->info.sm >= 90;
}

/* One launch on the stream: cuLaunchKernelEx with programmatic stream serialization when it overlaps
 * (cuda_overlaps), else plain cuLaunchKernel. */
static CUresult cuda_launch_one(cuda_backend *b, const cuda_fn *fn, const wp_launch *l) {
#define DIM(x) ((x) ? (x) : 1u)
    if (cuda_overlaps(b, l)) {
        CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = DIM(l->grid[0]),
                              .gridDimY = DIM(l->grid[1]),
                              .gridDimZ = DIM(l->grid[2]),
                              .blockDimX = DIM(l->block[0]),
                              .blockDimY = DIM(l->block[1]),
                              .blockDimZ = DIM(l->block[2]),
                              .sharedMemBytes = l->smem_bytes,
                              .hStream = b->stream,
                              .attrs = &attr,
                              .numAttrs = 1};
        return b->cu.launch_kernel_ex(&cfg, fn->function, l->params, NULL);
    }
    return b->cu.launch_kernel(fn->function, DIM(l->grid[0]), DIM(l->grid[1]), DIM(l->grid[2]), DIM(l->block[0]),
                               DIM(l->block[1]), DIM(l->block[2]), l->smem_bytes, b->stream, l->params, NULL);
#undef DIM
}

/* WP_LAUNCH_GRAPH: the n launches captured from the stream into one graph (programmatic edges kept),
 * replayed once to warm up; *exec gets the instantiated graph. The capture is always ended. */
static int cuda_capture(cuda_backend *b, void *const *fns, const wp_launch *ls, int n, CUgraphExec *exec, wp_err *err) {
    CUresult r = b->cu.stream_begin_capture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) return cuda_fail_op(b, err, "cuStreamBeginCapture", r);
    CUresult lr = CUDA_SUCCESS;
    for (int i = 0; i < n && lr == CUDA_SUCCESS; i++) lr = cuda_launch_one(b, fns[i], &ls[i]);
    CUgraph graph = NULL;
    r = b->cu.stream_end_capture(b->stream, &graph);
    if (lr != CUDA_SUCCESS || r != CUDA_SUCCESS) {
        if (graph) b->cu.graph_destroy(graph);
        return cuda_fail_op(b, err, lr != CUDA_SUCCESS ? "a launch under stream capture" : "cuStreamEndCapture",
                            lr != CUDA_SUCCESS ? lr : r);
    }
    r = b->cu.graph_instantiate(exec, graph, 0);
    b->cu.graph_destroy(graph);
    if (r != CUDA_SUCCESS) return cuda_fail_op(b, err, "cuGraphInstantiate", r);
    if ((r = b->cu.graph_launch(*exec, b->stream)) != CUDA_SUCCESS) {
        b->cu.graph_exec_destroy(*exec);
        return cuda_fail_op(b, err, "cuGraphLaunch", r);
    }
    return 0;
}

static int cuda_launch_locked(cuda_backend *b, void *const *fns, const wp_launch *ls, int n, double *kernel_us,
                              wp_err *err) {
    if (cuda_enter(b, err)) return -1;
    for (int i = 0; i < n; i++) {
        cuda_fn *fn = fns[i];
        if (!fn) return WP_FAIL(err, 500, "cuda_error", "", "no loaded kernel for launch %d", i);
        if (fn->generation != b->generation && cuda_fn_load(b, fn, err)) return -1;
    }
    CUgraphExec exec = NULL;
    if ((ls[0].flags & WP_LAUNCH_GRAPH) && cuda_capture(b, fns, ls, n, &exec, err)) return -1;
    CUresult r;
    if ((r = b->cu.event_record(b->ev_start, b->stream)) != CUDA_SUCCESS) {
        if (exec) b->cu.graph_exec_destroy(exec);
        return cuda_fail_op(b, err, "cuEventRecord", r);
    }
    if (exec) {
        r = b->cu.graph_launch(exec, b->stream);
        b->cu.graph_exec_destroy(exec); /* freed once the replay is done */
        if (r != CUDA_SUCCESS) return cuda_fail_op(b, err, "cuGraphLaunch", r);
    }
    for (int i = 0; !exec && i < n; i++)
        if ((r = cuda_launch_one(b, fns[i], &ls[i])) != CUDA_SUCCESS)
            return cuda_fail_op(b, err, cuda_overlaps(b, &ls[i]) ? "cuLaunchKernelEx" : "cuLaunchKernel", r);
    if ((r = b->cu.event_record(b->ev_stop, b->stream)) != CUDA_SUCCESS)
        return cuda_fail_op(b, err, "cuEventRecord", r);
    if ((r = b->cu.event_synchronize(b->ev_stop)) != CUDA_SUCCESS)
        return cuda_fail_op(b, err, "the kernel (cuEventSynchronize)", r);
    float ms = 0;
    if ((r = b->cu.event_elapsed_time(&ms, b->ev_start, b->ev_stop)) != CUDA_SUCCESS)
        return cuda_fail_op(b, err, "cuEventElapsedTime", r);
    if (kernel_us) *kernel_us = (double)ms * 1000.0;
    return 0;
}

static int cuda_launch(wp_backend *base, void *const *fns, const wp_launch *ls, int n, double *kernel_us, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    int rc = cuda_launch_locked(b, fns, ls, n, kernel_us, err);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static unsigned cuda_generation(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->lock);
    unsigned g = b->generation;
    pthread_mutex_unlock(&b->lock);
    return g;
}

/* ---- upload rings (wp_buf_stream): host -> device copies from page-locked slots on a stream of
 * their own, so a request body's next chunks are received while the last ones cross the bus. ---- */

/* Frees a ring's driver objects (none when its context is gone: they died with it). Lock held or
 * the backend closing. */
static void cuda_ring_destroy(cuda_backend *b, cuda_ring *r) {
    if (r->generation == b->generation && b->ctx && b->cu.ctx_set_current(b->ctx) == CUDA_SUCCESS) {
        if (r->stream) b->cu.stream_synchronize(r->stream);
        for (int i = 0; i < r->slots; i++) {
            if (r->done[i]) b->cu.event_destroy(r->done[i]);
            if (r->host[i]) b->cu.mem_free_host(r->host[i]);
        }
        if (r->stream) b->cu.stream_destroy(r->stream);
    }
    free(r);
}

static void *cuda_upload_open(wp_backend *base, size_t slot_bytes, int slots, void **host, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    if (slots < 1 || slots > WP_UPLOAD_SLOTS_MAX) {
        WP_FAIL(err, 500, "internal", "", "an upload ring has 1..%d slots", WP_UPLOAD_SLOTS_MAX);
        return NULL;
    }
    cuda_ring *r = NULL, *stale = NULL;
    pthread_mutex_lock(&b->lock);
    for (cuda_ring **pp = &b->idle_rings; *pp;) { /* an idle one of this shape, dropping dead ones */
        cuda_ring *x = *pp;
        if (x->generation != b->generation || (!r && x->slots == slots && x->slot_bytes == slot_bytes)) {
            *pp = x->next;
            b->n_idle_rings--;
            if (x->generation != b->generation) {
                x->next = stale;
                stale = x;
            } else {
                r = x;
            }
            continue;
        }
        pp = &x->next;
    }
    while (stale) {
        cuda_ring *x = stale;
        stale = x->next;
        cuda_ring_destroy(b, x);
    }
    CUresult cr = CUDA_SUCCESS;
    const char *call = "";
    bool made = false;
    if (!r && cuda_enter(b, err) == 0) {
        if (!(r = calloc(1, sizeof *r))) WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
        made = r != NULL;
    }
    if (made) {
        r->generation = b->generation;
        r->slots = slots;
        r->slot_bytes = slot_bytes;
        call = "cuStreamCreate";
        cr = b->cu.stream_create(&r->stream, CU_STREAM_NON_BLOCKING);
        for (int i = 0; i < slots && cr == CUDA_SUCCESS; i++) {
            call = "cuEventCreate";
            if ((cr = b->cu.event_create(&r->done[i], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) break;
            call = "cuMemHostAlloc";
            cr = b->cu.mem_host_alloc(&r->host[i], slot_bytes, 0);
            if (cr != CUDA_SUCCESS) r->host[i] = NULL;
        }
        if (cr != CUDA_SUCCESS) {
            cu_fail(b, err, call, cr); /* not sticky: no page-locked memory, say; the caller stages instead */
            cuda_ring_destroy(b, r);
            r = NULL;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (r)
        for (int i = 0; i < slots; i++) host[i] = r->host[i];
    return r;
}

static int cuda_ring_enter(cuda_backend *b, const cuda_ring *r, wp_err *err) {
    if (cuda_enter(b, err)) return -1;
    if (r->generation != b->generation)
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the upload was lost when the CUDA context was reset");
    return 0;
}

static int cuda_upload_send(wp_backend *base, void *ringp, int slot, wp_buf *buf, size_t offset, size_t len,
                            wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    pthread_mutex_lock(&b->lock);
    int rc = cuda_ring_enter(b, r, err);
    if (rc == 0 && buf->generation != b->generation)
        rc = WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    CUresult cr = CUDA_SUCCESS;
    const char *call = "cuMemcpyHtoDAsync (upload)";
    if (rc == 0 && (cr = b->cu.memcpy_htod_async(buf->addr + offset, r->host[slot], len, r->stream)) == CUDA_SUCCESS) {
        call = "cuEventRecord (upload)";
        cr = b->cu.event_record(r->done[slot], r->stream);
    }
    if (rc == 0 && cr != CUDA_SUCCESS) rc = cuda_fail_op(b, err, call, cr);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static int cuda_upload_wait(wp_backend *base, void *ringp, int slot, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    pthread_mutex_lock(&b->lock);
    int rc = cuda_ring_enter(b, r, err);
    CUresult cr;
    if (rc == 0 && (cr = b->cu.event_synchronize(r->done[slot])) != CUDA_SUCCESS)
        rc = cuda_fail_op(b, err, "cuEventSynchronize (upload)", cr);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static void cuda_upload_close(wp_backend *base, void *ringp) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    pthread_mutex_lock(&b->lock);
    bool keep = r->generation == b->generation && b->ctx && b->n_idle_rings < WP_UPLOAD_IDLE_MAX &&
                b->cu.ctx_set_current(b->ctx) == CUDA_SUCCESS && b->cu.stream_synchronize(r->stream) == CUDA_SUCCESS;
    if (keep) {
        r->next = b->idle_rings;
        b->idle_rings = r;
        b->n_idle_rings++;
    } else {
        cuda_ring_destroy(b, r);
    }
    pthread_mutex_unlock(&b->lock);
}

static const wp_backend_ops cuda_ops = {
    .name = "cuda",
    .close = cuda_close,
    .info = cuda_info,
    .usable = cuda_usable,
    .load = cuda_load,
    .unload = cuda_unload,
    .run_warp = cuda_run_warp,
    .buf_alloc = cuda_buf_alloc,
    .buf_free = cuda_buf_free,
    .buf_write = cuda_buf_write,
    .buf_read = cuda_buf_read,
    .buf_memset = cuda_buf_memset,
    .buf_copy = cuda_buf_copy,
    .launch = cuda_launch,
    .generation = cuda_generation,
    .upload_open = cuda_upload_open,
    .upload_send = cuda_upload_send,
    .upload_wait = cuda_upload_wait,
    .upload_close = cuda_upload_close,
};

/* Open-time failure: the daemon falls back to emu. What was acquired so far is released through cuda_close. */
#define OPEN_FAIL(err, ...) WP_FAIL((err), 503, "cuda_unavailable", "", __VA_ARGS__)

static int cuda_resolve(cuda_backend *b, wp_err *err) {
    dlerror();
    b->lib = dlopen(WP_CU_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!b->lib) {
        const char *why = dlerror();
        return OPEN_FAIL(err, "%s could not be loaded (%s): no NVIDIA driver on this machine", WP_CU_LIB,
                         why ? why : "unknown reason");
    }
    PFN_cuGetProcAddress_v12000 get_proc = NULL;
    *(void **)&get_proc = dlsym(b->lib, "cuGetProcAddress_v2");
    if (!get_proc)
        return OPEN_FAIL(err, "%s has no symbol %s (driver older than CUDA 12.0)", WP_CU_LIB, "cuGetProcAddress_v2");

    /* The driver's CUDA version first (cuDriverGetVersion exists since 2.2), so an old driver gets a
     * clear message rather than a symbol lookup refused with CUDA_ERROR_INVALID_VALUE. */
    PFN_cuDriverGetVersion_v2020 driver_get_version = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r =
        get_proc("cuDriverGetVersion", (void **)&driver_get_version, 2020, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || !driver_get_version)
        return OPEN_FAIL(err, "%s: cuGetProcAddress found no %s", WP_CU_LIB, "cuDriverGetVersion");
    int version = 0;
    if (driver_get_version(&version) != CUDA_SUCCESS)
        return OPEN_FAIL(err, "%s: %s failed", WP_CU_LIB, "cuDriverGetVersion");
    b->info.driver_version = version;
    if (version < WP_CU_API_VERSION) {
        char have[32], need[32];
        snprintf(have, sizeof have, "%d.%d", version / 1000, version % 1000 / 10);
        snprintf(need, sizeof need, "%d.%d", WP_CU_API_VERSION / 1000, WP_CU_API_VERSION % 1000 / 10);
        return OPEN_FAIL(err, "the NVIDIA driver supports CUDA %s; warpd needs a driver for CUDA %s or newer", have,
                         need);
    }

    for (size_t i = 0; i < WP_ARRAY_LEN(cu_syms); i++) {
        void **slot = (void **)((char *)&b->cu + cu_syms[i].slot);
        status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        r = get_proc(cu_syms[i].name, slot, WP_CU_API_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
        if (r != CUDA_SUCCESS || !*slot || status != CU_GET_PROC_ADDRESS_SUCCESS) {
            *slot = NULL;
            return OPEN_FAIL(err, "%s (driver %d.%d) has no %s for CUDA %d.%d (cuGetProcAddress)", WP_CU_LIB,
                             version / 1000, version % 1000 / 10, cu_syms[i].name, WP_CU_API_VERSION / 1000,
                             WP_CU_API_VERSION % 1000 / 10);
        }
    }
    return 0;
}

static int cuda_start(cuda_backend *b, int ordinal, wp_err *err) {
    char text[160];
    CUresult r = b->cu.init(0);
    if (r != CUDA_SUCCESS)
        return OPEN_FAIL(err, "cuInit failed: %s%s", cu_error_text(b, r, text, sizeof text),
                         r == CUDA_ERROR_NO_DEVICE ? "" : " (driver loaded, but no usable GPU)");
    int count = 0;
    r = b->cu.device_get_count(&count);
    if (r != CUDA_SUCCESS) return OPEN_FAIL(err, "cuDeviceGetCount failed: %s", cu_error_text(b, r, text, sizeof text));
    if (ordinal < 0 || ordinal >= count)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "no CUDA device %d: the driver sees %d device(s)", ordinal,
                       count);
    const char *call = "cuDeviceGet";
    if ((r = b->cu.device_get(&b->dev, ordinal)) != CUDA_SUCCESS) goto fail;
    int major = 0, minor = 0, sms = 0;
    size_t total = 0, free_bytes = 0;
    call = "cuDeviceGetName";
    if ((r = b->cu.device_get_name(b->info.name, (int)sizeof b->info.name, b->dev)) != CUDA_SUCCESS) goto fail;
    call = "cuDeviceGetAttribute";
    if ((r = b->cu.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, b->dev)) ||
        (r = b->cu.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, b->dev)) ||
        (r = b->cu.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, b->dev)))
        goto fail;
    call = "cuDeviceTotalMem";
    if ((r = b->cu.device_total_mem(&total, b->dev)) != CUDA_SUCCESS) goto fail;
    call = "cuDevicePrimaryCtxRetain";
    if ((r = b->cu.primary_ctx_retain(&b->ctx, b->dev)) != CUDA_SUCCESS) {
        b->ctx = NULL;
        goto fail;
    }
    call = "cuCtxSetCurrent";
    if ((r = b->cu.ctx_set_current(b->ctx)) != CUDA_SUCCESS) goto fail;
    if ((r = cuda_make_stream(b, &call)) != CUDA_SUCCESS) goto fail;
    call = "cuMemGetInfo";
    if ((r = b->cu.mem_get_info(&free_bytes, &total)) != CUDA_SUCCESS) goto fail;
    b->info.backend = "cuda";
    b->info.sm = major * 10 + minor;
    b->info.sms = sms;
    b->info.mem_total = total;
    b->info.mem_free = free_bytes;
    b->generation = 1;
    return 0;
fail:
    return WP_FAIL(err, 503, "cuda_unavailable", "", "device %d: %s failed: %s", ordinal, call,
                   cu_error_text(b, r, text, sizeof text));
}

/* cuInit and the device's attributes only: no context, which is most of cuda_start's time. */
static int cuda_query_sm(cuda_backend *b, int ordinal, int *sm, wp_err *err) {
    char text[160];
    int count = 0, major = 0, minor = 0;
    const char *call = "cuInit";
    CUresult r = b->cu.init(0);
    if (r == CUDA_SUCCESS) {
        call = "cuDeviceGetCount";
        r = b->cu.device_get_count(&count);
    }
    if (r == CUDA_SUCCESS && (ordinal < 0 || ordinal >= count))
        return WP_FAIL(err, 503, "cuda_unavailable", "", "no CUDA device %d: the driver sees %d device(s)", ordinal,
                       count);
    if (r == CUDA_SUCCESS) {
        call = "cuDeviceGet";
        r = b->cu.device_get(&b->dev, ordinal);
    }
    if (r == CUDA_SUCCESS) {
        call = "cuDeviceGetAttribute";
        r = b->cu.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, b->dev);
    }
    if (r == CUDA_SUCCESS) r = b->cu.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, b->dev);
    if (r != CUDA_SUCCESS)
        return OPEN_FAIL(err, "device %d: %s failed: %s", ordinal, call, cu_error_text(b, r, text, sizeof text));
    *sm = major * 10 + minor;
    return 0;
}

int wp_backend_cuda_sm(int device_ordinal, int *sm, wp_err *err) {
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b || pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the cuda backend");
    }
    b->base.ops = &cuda_ops;
    int rc = cuda_resolve(b, err) ? -1 : cuda_query_sm(b, device_ordinal, sm, err);
    cuda_close(&b->base);
    return rc;
}

wp_backend *wp_backend_cuda_open(int device_ordinal, wp_err *err) {
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the cuda backend");
        return NULL;
    }
    b->base.ops = &cuda_ops;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        WP_FAIL(err, 500, "internal", "", "pthread_mutex_init failed");
        return NULL;
    }
    if (cuda_resolve(b, err) || cuda_start(b, device_ordinal, err)) {
        cuda_close(&b->base);
        return NULL;
    }
    b->base.facts = b->info;
    return &b->base;
}
