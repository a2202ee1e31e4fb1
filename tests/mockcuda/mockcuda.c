/* mockcuda.c — a stand-in CUDA driver (libcuda.so.1) for machines without a GPU, so CI can drive the
 * cuda backend's host paths (plumbing, never results). Built as $(BUILD)/mockcuda/libcuda.so.1 and
 * found through LD_LIBRARY_PATH (tests/api/mockcuda.sh). Exports only what warpd dlsym()s:
 * cuGetProcAddress_v2, which hands back the functions below by name, and cuDriverGetVersion.
 *
 * One device, "Mock GPU", sm_90, 132 SMs, 8 GiB. Device memory is host memory (CUdeviceptr = the
 * pointer); every copy and memset happens at once; streams, events, modules, functions and graphs are
 * opaque numbered handles; launches and graph replays do nothing (so results are garbage: expected);
 * events time nothing (elapsed 0.001 ms). A warp kernel (one whose name says it takes wp_warp_params)
 * launched as a resident is played by a thread (mock_resident.c), and its stream's events wait for it.
 *
 * MOCKCUDA_FAIL_AFTER=N: the N-th launch (cuLaunchKernel, cuLaunchKernelEx or cuGraphLaunch; 1-based)
 * fails with CUDA_ERROR_ILLEGAL_ADDRESS, and so does every later call but the teardown ones until the
 * context is reset or destroyed (a sticky error, as a lost device). Once per process.
 * MOCKCUDA_LAUNCH_DELAY_US=N: every launch takes N µs (a slow kernel: a job still runs when its client goes);
 * =@PATH: N is read from the file PATH at each launch (absent or empty: no delay), so a test slows only
 * the launches it means to.
 *
 * Host registration (cuMemHostRegister) is recorded: registering a range twice, unregistering one never
 * registered, and registrations left at exit are misuse. CUDA IPC: a handle is 64 bytes, "MOCKIPC1",
 * the allocation's bytes (u64), the f32 bit pattern that fills it (u32) and the device it claims to live
 * on (u32), little-endian; cuIpcOpenMemHandle makes such an allocation (one per open: each open is a new
 * mapping), cuIpcCloseMemHandle frees it; any other handle is refused; mappings left open at exit are
 * misuse. cuPointerGetAttribute(DEVICE_ORDINAL) answers the claimed device for those, 0 for the rest.
 *
 * Misuse it can see goes to stderr as a line starting "mockcuda: " (the test fails on it). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_resident.h"

#define MOCK_EXPORT __attribute__((visibility("default")))
#define MOCK_VERSION 13000
#define MOCK_TOTAL_MEM ((size_t)8 << 30)

static atomic_uintptr_t next_handle = 0x1000;
static atomic_size_t used_mem;
static atomic_long launches;
static atomic_bool sticky;  /* a sticky error is pending */
static atomic_bool tripped; /* MOCKCUDA_FAIL_AFTER fired already */
static int primary_ctx_dummy, created_ctx_dummy;

static void *new_handle(void) { return (void *)atomic_fetch_add(&next_handle, 16); }

#define STICKY_CHECK()                                                                                                 \
    do {                                                                                                               \
        if (atomic_load(&sticky)) return CUDA_ERROR_ILLEGAL_ADDRESS;                                                   \
    } while (0)

static CUresult count_launch(void) {
    STICKY_CHECK();
    const char *delay = getenv("MOCKCUDA_LAUNCH_DELAY_US"); /* a slow kernel: the launch takes this long */
    char text[32] = "";
    if (delay && delay[0] == '@') { /* the delay from a file, read now */
        FILE *f = fopen(delay + 1, "r");
        if (f && !fgets(text, sizeof text, f)) text[0] = 0;
        if (f) fclose(f);
        delay = text;
    }
    if (delay && *delay) {
        const long us = atol(delay);
        struct timespec ts = {us / 1000000, us % 1000000 * 1000};
        while (nanosleep(&ts, &ts) != 0) { /* EINTR: the rest */
        }
    }
    long n = atomic_fetch_add(&launches, 1) + 1;
    const char *env = getenv("MOCKCUDA_FAIL_AFTER");
    if (env && *env && n >= atol(env) && !atomic_exchange(&tripped, true)) {
        atomic_store(&sticky, true);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    return CUDA_SUCCESS;
}

/* ---- errors ---- */
static const struct {
    CUresult r;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult mock_get_error_name(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) return *s = errors[i].name, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult mock_get_error_string(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) return *s = errors[i].text, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- device ---- */
static CUresult mock_init(unsigned int flags) { return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
static CUresult mock_device_get_count(int *count) { return *count = 1, CUDA_SUCCESS; }
static CUresult mock_device_get(CUdevice *dev, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    return *dev = 0, CUDA_SUCCESS;
}
static CUresult mock_device_get_name(char *name, int len, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", "Mock GPU");
    return CUDA_SUCCESS;
}
static CUresult mock_device_get_attribute(int *v, CUdevice_attribute attr, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        *v = 2048;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        *v = 49152;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *v = 232448;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        *v = 233472;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        *v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        *v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        *v = 1024;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        *v = 64;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        *v = 2147483647;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        *v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        *v = 65535;
        break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        *v = 1980000;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        *v = 2619000;
        break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        *v = 5120;
        break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        *v = 52428800;
        break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        *v = 2;
        break;
    default:
        *v = 0;
        break;
    }
    return CUDA_SUCCESS;
}
static CUresult mock_device_total_mem(size_t *bytes, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    return *bytes = MOCK_TOTAL_MEM, CUDA_SUCCESS;
}

/* ---- memory ---- */
static CUresult mock_mem_get_info(size_t *free_bytes, size_t *total) {
    size_t used = atomic_load(&used_mem);
    *total = MOCK_TOTAL_MEM;
    *free_bytes = used < MOCK_TOTAL_MEM ? MOCK_TOTAL_MEM - used : 0;
    return CUDA_SUCCESS;
}
/* Device and page-locked allocations: a header in front links each into one list, so cuMemFree can
 * refuse a pointer it never handed out (CUDA_ERROR_INVALID_VALUE, as the driver does) and a context
 * reset or destroy frees them all, as the driver does (warpd forgets them then; reachable from the
 * list until that, so never reported as host leaks). */
typedef struct blk {
    struct blk *prev, *next;
    size_t size;
    int host; /* 0: device memory; 1: page-locked host memory; 2: the same, mapped (CU_MEMHOSTALLOC_DEVICEMAP) */
    char pad[4];
} blk;
_Static_assert(sizeof(blk) % 16 == 0, "keeps the memory after the header 16-byte aligned");
static blk live = {.prev = &live, .next = &live};
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void *blk_alloc(size_t bytes, int host) {
    blk *b = calloc(1, sizeof(blk) + bytes);
    if (!b) return NULL;
    b->size = bytes;
    b->host = host;
    pthread_mutex_lock(&live_lock);
    b->prev = live.prev, b->next = &live;
    live.prev->next = b, live.prev = b;
    if (!host) used_mem += bytes;
    pthread_mutex_unlock(&live_lock);
    return b + 1;
}
static CUresult blk_free(void *p, int host) {
    if (!p) return CUDA_SUCCESS;
    pthread_mutex_lock(&live_lock);
    blk *b = live.next;
    while (b != &live && (b + 1 != p || !b->host != !host)) b = b->next; /* host: 1 or 2 (mapped) alike */
    if (b == &live) {
        pthread_mutex_unlock(&live_lock);
        fprintf(stderr, "mockcuda: %s of a pointer it did not hand out (or freed by a context reset): %p\n",
                host ? "cuMemFreeHost" : "cuMemFree", p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    b->prev->next = b->next, b->next->prev = b->prev;
    if (!host) used_mem -= b->size;
    pthread_mutex_unlock(&live_lock);
    free(b);
    return CUDA_SUCCESS;
}
static void blk_free_all(void) {
    pthread_mutex_lock(&live_lock);
    for (blk *b = live.next, *n; b != &live; b = n) n = b->next, free(b);
    live.prev = live.next = &live;
    used_mem = 0;
    pthread_mutex_unlock(&live_lock);
}

static CUresult mock_mem_alloc(CUdeviceptr *p, size_t bytes) {
    STICKY_CHECK();
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (bytes > MOCK_TOTAL_MEM - atomic_load(&used_mem)) return CUDA_ERROR_OUT_OF_MEMORY;
    void *m = blk_alloc(bytes, 0);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}
static CUresult mock_mem_free(CUdeviceptr p) { return blk_free((void *)(uintptr_t)p, 0); }
static CUresult mock_mem_host_alloc(void **p, size_t bytes, unsigned int flags) {
    STICKY_CHECK();
    *p = blk_alloc(bytes ? bytes : 1, flags & CU_MEMHOSTALLOC_DEVICEMAP ? 2 : 1);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult mock_mem_free_host(void *p) { return blk_free(p, 1); }
/* The device's address of page-locked memory: the pointer itself (one address space), for memory
 * allocated with CU_MEMHOSTALLOC_DEVICEMAP only (else the misuse is reported: a real driver without
 * unified addressing would refuse it). */
static CUresult mock_mem_host_get_device_pointer(CUdeviceptr *d, void *p, unsigned int flags) {
    STICKY_CHECK();
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&live_lock);
    blk *b = live.next;
    while (b != &live && !((char *)(b + 1) <= (char *)p && (char *)p < (char *)(b + 1) + b->size && b->host))
        b = b->next;
    int host = b == &live ? 0 : b->host;
    pthread_mutex_unlock(&live_lock);
    if (host != 2) {
        fprintf(stderr,
                "mockcuda: cuMemHostGetDevicePointer of memory not allocated with CU_MEMHOSTALLOC_DEVICEMAP: %p\n", p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
static CUresult mock_memcpy_htod_async(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    (void)s;
    STICKY_CHECK();
    if (n) memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}
static CUresult mock_memcpy_dtoh_async(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    (void)s;
    STICKY_CHECK();
    if (n) memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
static CUresult mock_memcpy_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    (void)s;
    STICKY_CHECK();
    if (n) memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
static CUresult mock_memset_d8_async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
    (void)s;
    STICKY_CHECK();
    if (n) memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

/* ---- host registration and IPC ---- */
#define MOCK_REG_MAX 256
static struct {
    void *p;
    size_t n;
} regs[MOCK_REG_MAX];
static struct {
    CUdeviceptr p;
    int device;
} ipcs[MOCK_REG_MAX];
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult mock_mem_host_register(void *p, size_t n, unsigned int flags) {
    (void)flags;
    STICKY_CHECK();
    if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MOCK_REG_MAX; i++)
        if (regs[i].p && (char *)p < (char *)regs[i].p + regs[i].n && (char *)regs[i].p < (char *)p + n) {
            r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
            fprintf(stderr, "mockcuda: cuMemHostRegister of memory registered already: %p\n", p);
            break;
        }
    for (int i = 0; i < MOCK_REG_MAX && r == CUDA_ERROR_OUT_OF_MEMORY; i++)
        if (!regs[i].p) regs[i].p = p, regs[i].n = n, r = CUDA_SUCCESS;
    pthread_mutex_unlock(&reg_lock);
    return r;
}
static CUresult mock_mem_host_unregister(void *p) {
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MOCK_REG_MAX; i++)
        if (regs[i].p == p) regs[i].p = NULL, r = CUDA_SUCCESS;
    pthread_mutex_unlock(&reg_lock);
    if (r != CUDA_SUCCESS) fprintf(stderr, "mockcuda: cuMemHostUnregister of memory never registered: %p\n", p);
    return r;
}
static uint64_t le_bytes(const char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | (unsigned char)p[i];
    return v;
}
static CUresult mock_ipc_open(CUdeviceptr *d, CUipcMemHandle h, unsigned int flags) {
    (void)flags;
    STICKY_CHECK();
    if (memcmp(h.reserved, "MOCKIPC1", 8)) return CUDA_ERROR_INVALID_VALUE;
    size_t n = (size_t)le_bytes(h.reserved + 8, 8);
    uint32_t fill = (uint32_t)le_bytes(h.reserved + 16, 4);
    if (n == 0 || n > ((size_t)1 << 30) || n % 4) return CUDA_ERROR_INVALID_VALUE;
    if (mock_mem_alloc(d, n) != CUDA_SUCCESS) return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n / 4; i++) memcpy((char *)(uintptr_t)*d + 4 * i, &fill, 4);
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MOCK_REG_MAX; i++)
        if (!ipcs[i].p) {
            ipcs[i].p = *d, ipcs[i].device = (int)le_bytes(h.reserved + 20, 4);
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    return CUDA_SUCCESS;
}
static CUresult mock_ipc_close(CUdeviceptr d) {
    bool found = false;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MOCK_REG_MAX; i++)
        if (ipcs[i].p == d) ipcs[i].p = 0, found = true;
    pthread_mutex_unlock(&reg_lock);
    if (!found) {
        fprintf(stderr, "mockcuda: cuIpcCloseMemHandle of an address no open handle gave: %p\n", (void *)(uintptr_t)d);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return mock_mem_free(d);
}
static CUresult mock_mem_get_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr d) {
    pthread_mutex_lock(&live_lock);
    blk *b = live.next;
    while (b != &live && !((char *)(b + 1) <= (char *)d && (char *)d < (char *)(b + 1) + b->size)) b = b->next;
    bool found = b != &live;
    if (found) {
        if (base) *base = (CUdeviceptr)(uintptr_t)(b + 1);
        if (size) *size = b->size;
    }
    pthread_mutex_unlock(&live_lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult mock_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr d) {
    if (attr != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return CUDA_ERROR_NOT_SUPPORTED;
    int device = 0;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < MOCK_REG_MAX; i++)
        if (ipcs[i].p == d) device = ipcs[i].device;
    pthread_mutex_unlock(&reg_lock);
    *(int *)data = device;
    return CUDA_SUCCESS;
}
/* What a daemon leaves behind at exit is misuse: it must unregister and close what it took. */
__attribute__((destructor)) static void mock_leaks(void) {
    for (int i = 0; i < MOCK_REG_MAX; i++) {
        if (regs[i].p) fprintf(stderr, "mockcuda: host memory still registered at exit: %p\n", regs[i].p);
        if (ipcs[i].p) fprintf(stderr, "mockcuda: IPC mapping still open at exit: %p\n", (void *)(uintptr_t)ipcs[i].p);
    }
}

/* ---- contexts ---- */
static CUresult mock_primary_ctx_retain(CUcontext *ctx, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)(void *)&primary_ctx_dummy;
    return CUDA_SUCCESS;
}
static CUresult mock_primary_ctx_release(CUdevice dev) { return dev ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS; }
static CUresult mock_primary_ctx_reset(CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    mock_resident_kill_all(); /* the context's kernels die with it, before its memory goes */
    blk_free_all();
    atomic_store(&sticky, false);
    return CUDA_SUCCESS;
}
static CUresult mock_ctx_create(CUcontext *ctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev) {
    (void)params, (void)flags;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)(void *)&created_ctx_dummy;
    return CUDA_SUCCESS;
}
static CUresult mock_ctx_destroy(CUcontext ctx) {
    (void)ctx;
    mock_resident_kill_all();
    blk_free_all();
    atomic_store(&sticky, false);
    return CUDA_SUCCESS;
}
static CUresult mock_ctx_set_current(CUcontext ctx) {
    (void)ctx;
    return CUDA_SUCCESS;
}
static CUresult mock_ctx_synchronize(CUcontext ctx) {
    (void)ctx;
    STICKY_CHECK();
    mock_resident_pending(0, 0, true);
    return CUDA_SUCCESS;
}

/* ---- streams and events ---- */
static CUresult mock_stream_create(CUstream *s, unsigned int flags) {
    (void)flags;
    STICKY_CHECK();
    *s = (CUstream)new_handle();
    return CUDA_SUCCESS;
}
static CUresult mock_stream_destroy(CUstream s) {
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (mock_resident_pending(0, (uintptr_t)s, false))
        fprintf(stderr, "mockcuda: a stream destroyed under a resident\n");
    return CUDA_SUCCESS;
}
static CUresult mock_stream_synchronize(CUstream s) {
    STICKY_CHECK();
    mock_resident_pending(0, (uintptr_t)s, true);
    return CUDA_SUCCESS;
}
/* An event made with CU_EVENT_DISABLE_TIMING carries the low bit of its handle: timing it fails, as the
 * driver's does (CUDA_ERROR_INVALID_HANDLE), so an untimed path that reads a time is caught here. */
static CUresult mock_event_create(CUevent *e, unsigned int flags) {
    STICKY_CHECK();
    *e = (CUevent)((uintptr_t)new_handle() | ((flags & CU_EVENT_DISABLE_TIMING) ? 1u : 0u));
    return CUDA_SUCCESS;
}
static CUresult mock_event_destroy(CUevent e) { return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
static CUresult mock_event_record(CUevent e, CUstream s) {
    STICKY_CHECK();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    mock_resident_event((uintptr_t)e, (uintptr_t)s);
    return CUDA_SUCCESS;
}
/* cuEventSynchronize and cuEventQuery: launches finish at once here, so every event is done but one
 * recorded after a resident that has not left */
static CUresult mock_event_sync(CUevent e) {
    STICKY_CHECK();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    mock_resident_pending((uintptr_t)e, 0, true);
    return CUDA_SUCCESS;
}
static CUresult mock_event_query(CUevent e) {
    STICKY_CHECK();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    return mock_resident_pending((uintptr_t)e, 0, false) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
static CUresult mock_event_elapsed_time(float *ms, CUevent a, CUevent b) {
    STICKY_CHECK();
    if (!a || !b || ((uintptr_t)a & 1u) || ((uintptr_t)b & 1u)) return CUDA_ERROR_INVALID_HANDLE;
    *ms = 0.001f;
    return CUDA_SUCCESS;
}

/* ---- modules and launches ---- */
static CUresult mock_module_load_data(CUmodule *m, const void *image) {
    STICKY_CHECK();
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    *m = (CUmodule)new_handle();
    return CUDA_SUCCESS;
}
static CUresult mock_module_unload(CUmodule m) { return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
static CUresult mock_module_get_function(CUfunction *f, CUmodule m, const char *name) {
    STICKY_CHECK();
    if (!m || !name || !*name) return CUDA_ERROR_INVALID_VALUE;
    /* a warp kernel's handle carries bit 3, a batched data kernel's bit 2 (handles are 16 apart): their
     * launches may be residents */
    const bool data_batch = strstr(name, "wp_data_params") && strstr(name, "_batch");
    *f = (CUfunction)((uintptr_t)new_handle() | (strstr(name, "wp_warp_params") ? 8u : 0u) | (data_batch ? 4u : 0u));
    return CUDA_SUCCESS;
}
static CUresult mock_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
    (void)extra, (void)shared;
    if (!f || !gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    const CUresult r = count_launch();
    if (r == CUDA_SUCCESS && ((uintptr_t)f & 12u) && params && params[0])
        mock_resident_launch((uintptr_t)s, params[0], ((uintptr_t)f & 4u) != 0);
    return r;
}
static CUresult mock_launch_kernel_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
    if (!cfg) return CUDA_ERROR_INVALID_VALUE;
    return mock_launch_kernel(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY,
                              cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params, extra);
}

/* ---- graphs: capture records nothing, a replay does nothing ---- */
static CUresult mock_stream_begin_capture(CUstream s, CUstreamCaptureMode mode) {
    (void)s, (void)mode;
    STICKY_CHECK();
    return CUDA_SUCCESS;
}
static CUresult mock_stream_end_capture(CUstream s, CUgraph *g) {
    (void)s;
    STICKY_CHECK();
    *g = (CUgraph)new_handle();
    return CUDA_SUCCESS;
}
static CUresult mock_graph_instantiate(CUgraphExec *exec, CUgraph g, unsigned long long flags) {
    (void)flags;
    STICKY_CHECK();
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    *exec = (CUgraphExec)new_handle();
    return CUDA_SUCCESS;
}
static CUresult mock_graph_launch(CUgraphExec exec, CUstream s) {
    (void)s;
    if (!exec) return CUDA_ERROR_INVALID_HANDLE;
    return count_launch();
}
static CUresult mock_graph_exec_destroy(CUgraphExec exec) { return exec ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
static CUresult mock_graph_destroy(CUgraph g) { return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

/* ---- the two exported entry points ---- */
MOCK_EXPORT CUresult cuDriverGetVersion(int *version) {
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = MOCK_VERSION;
    return CUDA_SUCCESS;
}

/* SYM(name, PFN type, function): the assignment to a typed pointer checks the signature. */
#define SYM(sym, pfn, fn)                                                                                              \
    if (!strcmp(symbol, sym)) {                                                                                        \
        pfn p = fn;                                                                                                    \
        *out = (void *)p;                                                                                              \
        goto found;                                                                                                    \
    }

MOCK_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **out, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *status) {
    (void)flags;
    if (!symbol || !out) return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    if (version > MOCK_VERSION) {
        if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    SYM("cuDriverGetVersion", PFN_cuDriverGetVersion_v2020, cuDriverGetVersion);
    SYM("cuGetProcAddress", PFN_cuGetProcAddress_v12000, cuGetProcAddress_v2);
    SYM("cuGetErrorName", PFN_cuGetErrorName_v6000, mock_get_error_name);
    SYM("cuGetErrorString", PFN_cuGetErrorString_v6000, mock_get_error_string);
    SYM("cuInit", PFN_cuInit_v2000, mock_init);
    SYM("cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, mock_device_get_count);
    SYM("cuDeviceGet", PFN_cuDeviceGet_v2000, mock_device_get);
    SYM("cuDeviceGetName", PFN_cuDeviceGetName_v2000, mock_device_get_name);
    SYM("cuDeviceGetAttribute", PFN_cuDeviceGetAttribute_v2000, mock_device_get_attribute);
    SYM("cuDeviceTotalMem", PFN_cuDeviceTotalMem_v3020, mock_device_total_mem);
    SYM("cuDevicePrimaryCtxRetain", PFN_cuDevicePrimaryCtxRetain_v7000, mock_primary_ctx_retain);
    SYM("cuDevicePrimaryCtxRelease", PFN_cuDevicePrimaryCtxRelease_v11000, mock_primary_ctx_release);
    SYM("cuDevicePrimaryCtxReset", PFN_cuDevicePrimaryCtxReset_v11000, mock_primary_ctx_reset);
    SYM("cuCtxCreate", PFN_cuCtxCreate_v12050, mock_ctx_create);
    SYM("cuCtxDestroy", PFN_cuCtxDestroy_v4000, mock_ctx_destroy);
    SYM("cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, mock_ctx_set_current);
    SYM("cuCtxSynchronize", PFN_cuCtxSynchronize_v13000, mock_ctx_synchronize);
    SYM("cuMemGetInfo", PFN_cuMemGetInfo_v3020, mock_mem_get_info);
    SYM("cuMemAlloc", PFN_cuMemAlloc_v3020, mock_mem_alloc);
    SYM("cuMemFree", PFN_cuMemFree_v3020, mock_mem_free);
    SYM("cuMemHostAlloc", PFN_cuMemHostAlloc_v2020, mock_mem_host_alloc);
    SYM("cuMemFreeHost", PFN_cuMemFreeHost_v2000, mock_mem_free_host);
    SYM("cuMemHostGetDevicePointer", PFN_cuMemHostGetDevicePointer_v3020, mock_mem_host_get_device_pointer);
    SYM("cuMemHostRegister", PFN_cuMemHostRegister_v6050, mock_mem_host_register);
    SYM("cuMemHostUnregister", PFN_cuMemHostUnregister_v4000, mock_mem_host_unregister);
    SYM("cuIpcOpenMemHandle", PFN_cuIpcOpenMemHandle_v11000, mock_ipc_open);
    SYM("cuIpcCloseMemHandle", PFN_cuIpcCloseMemHandle_v4010, mock_ipc_close);
    SYM("cuMemGetAddressRange", PFN_cuMemGetAddressRange_v3020, mock_mem_get_address_range);
    SYM("cuPointerGetAttribute", PFN_cuPointerGetAttribute_v4000, mock_pointer_get_attribute);
    SYM("cuMemcpyHtoDAsync", PFN_cuMemcpyHtoDAsync_v3020, mock_memcpy_htod_async);
    SYM("cuMemcpyDtoHAsync", PFN_cuMemcpyDtoHAsync_v3020, mock_memcpy_dtoh_async);
    SYM("cuMemcpyDtoDAsync", PFN_cuMemcpyDtoDAsync_v3020, mock_memcpy_dtod_async);
    SYM("cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, mock_memset_d8_async);
    SYM("cuStreamCreate", PFN_cuStreamCreate_v2000, mock_stream_create);
    SYM("cuStreamDestroy", PFN_cuStreamDestroy_v4000, mock_stream_destroy);
    SYM("cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, mock_stream_synchronize);
    SYM("cuEventCreate", PFN_cuEventCreate_v2000, mock_event_create);
    SYM("cuEventDestroy", PFN_cuEventDestroy_v4000, mock_event_destroy);
    SYM("cuEventRecord", PFN_cuEventRecord_v2000, mock_event_record);
    SYM("cuEventSynchronize", PFN_cuEventSynchronize_v2000, mock_event_sync);
    SYM("cuEventQuery", PFN_cuEventQuery_v2000, mock_event_query);
    SYM("cuEventElapsedTime", PFN_cuEventElapsedTime_v12080, mock_event_elapsed_time);
    SYM("cuModuleLoadData", PFN_cuModuleLoadData_v2000, mock_module_load_data);
    SYM("cuModuleUnload", PFN_cuModuleUnload_v2000, mock_module_unload);
    SYM("cuModuleGetFunction", PFN_cuModuleGetFunction_v2000, mock_module_get_function);
    SYM("cuLaunchKernel", PFN_cuLaunchKernel_v4000, mock_launch_kernel);
    SYM("cuLaunchKernelEx", PFN_cuLaunchKernelEx_v11060, mock_launch_kernel_ex);
    SYM("cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010, mock_stream_begin_capture);
    SYM("cuStreamEndCapture", PFN_cuStreamEndCapture_v10000, mock_stream_end_capture);
    SYM("cuGraphInstantiateWithFlags", PFN_cuGraphInstantiateWithFlags_v11040, mock_graph_instantiate);
    SYM("cuGraphLaunch", PFN_cuGraphLaunch_v10000, mock_graph_launch);
    SYM("cuGraphExecDestroy", PFN_cuGraphExecDestroy_v10000, mock_graph_exec_destroy);
    SYM("cuGraphDestroy", PFN_cuGraphDestroy_v10000, mock_graph_destroy);
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
found:
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
