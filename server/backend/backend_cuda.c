/* backend_cuda.c — the GPU backend's ops table (backend_impl.h) for one CUDA device, and its life: open,
 * close, info. Each operation passes the device's gate and runs on a lane of its stream pool
 * (cuda_impl.h: no lock is held while the device works, so as many operations run at once as there
 * are lanes). The operations: kernel loads, warp runs and launches are cuda_launch.c's; buffers, copies
 * and upload rings cuda_buffers.c's. The driver table is cuda_driver.c, the context and its recovery
 * cuda_device.c, the lanes cuda_streams.c.
 * Owns: cuda_backend (with cuda_device.c and cuda_streams.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

static void cuda_close(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ipc_close_all(b);  /* mappings no buffer gave back, while the context lives */
    cuda_resident_close(b); /* before the context's wait for all its work */
    cuda_device_stop(b);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->load_mu);
    wp_cu_close(b->lib);
    free(b);
}

static void cuda_info(wp_backend *base, wp_device_info *out) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    size_t free_bytes = 0, total_bytes = 0;
    bool got = false;
    if (cuda_op_begin(b, false, &op, NULL) == 0) {
        got = b->cu.mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS;
        cuda_op_end(&op);
    }
    pthread_mutex_lock(&b->mu);
    if (got) b->info.mem_free = free_bytes;
    *out = b->info;
    out->zero_copy_runs = atomic_load(&b->zero_copy_runs);
    out->resident_runs = atomic_load(&b->resident.runs);
    out->resident_launches = atomic_load(&b->resident.launches);
    pthread_mutex_unlock(&b->mu);
}

static bool cuda_usable(wp_backend *base, char *why, size_t n) {
    cuda_backend *b = (cuda_backend *)base;
    if (atomic_load_explicit(&b->live_gen, memory_order_acquire)) return true;
    pthread_mutex_lock(&b->mu);
    bool ok = b->ctx != NULL;
    if (!ok && n) snprintf(why, n, "%s", b->lost_reason);
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void wp_backend_cuda_set_wait(wp_backend *base, bool yield) {
    if (base && !strcmp(base->ops->name, "cuda")) ((cuda_backend *)base)->wait_yield = yield;
}

void wp_backend_cuda_set_zero_copy(wp_backend *base, bool on) {
    if (base && !strcmp(base->ops->name, "cuda")) ((cuda_backend *)base)->zero_copy = on;
}

void wp_backend_cuda_set_resident(wp_backend *base, int idle_us) {
    if (base && !strcmp(base->ops->name, "cuda")) ((cuda_backend *)base)->resident.idle_us = (unsigned)idle_us;
}

bool wp_backend_cuda_resident_fits(wp_backend *base, const wp_warp_job *job) {
    return base && !strcmp(base->ops->name, "cuda") && cuda_resident_fits((cuda_backend *)base, job);
}

bool wp_backend_cuda_resident_image_fits(wp_backend *base, const wp_resident_image *im) {
    return base && !strcmp(base->ops->name, "cuda") && cuda_resident_image_fits((cuda_backend *)base, im);
}

int wp_backend_cuda_run_resident_image(wp_backend *base, void *fn, const wp_resident_image *im, double *device_us,
                                       wp_err *err) {
    if (!base || strcmp(base->ops->name, "cuda")) return 1;
    return cuda_run_resident_image(base, fn, im, device_us, err);
}

static bool cuda_lane_free(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->mu);
    bool free_now = b->ctx && wp_lane_gate_idle(&b->lane_gate) && !b->resetting;
    pthread_mutex_unlock(&b->mu);
    return free_now;
}

static unsigned cuda_generation(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    const unsigned live = atomic_load_explicit(&b->live_gen, memory_order_acquire);
    if (live) return live;
    pthread_mutex_lock(&b->mu);
    unsigned g = b->generation;
    pthread_mutex_unlock(&b->mu);
    return g;
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
    .launch_io = cuda_launch_io,
    .generation = cuda_generation,
    .lane_free = cuda_lane_free,
    .upload_open = cuda_upload_open,
    .upload_send = cuda_upload_send,
    .upload_wait = cuda_upload_wait,
    .upload_close = cuda_upload_close,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
};

wp_backend *wp_backend_cuda_open_streams(int device_ordinal, int streams, wp_err *err) {
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the cuda backend");
        return NULL;
    }
    b->base.ops = &cuda_ops;
    b->zero_copy = true;
    b->resident.idle_us = WP_RESIDENT_DEFAULT_US;
    if (pthread_mutex_init(&b->mu, NULL) != 0 || pthread_cond_init(&b->cv, NULL) != 0 ||
        pthread_mutex_init(&b->load_mu, NULL) != 0) {
        free(b);
        WP_FAIL(err, 500, "internal", "", "pthread_mutex_init failed");
        return NULL;
    }
    if (wp_cu_open(&b->lib, &b->cu, &b->info.driver_version, err) || cuda_device_start(b, device_ordinal, err) ||
        cuda_lanes_make(b, streams, err)) {
        cuda_close(&b->base);
        return NULL;
    }
    b->base.facts = b->info;
    b->base.ordinal = device_ordinal;
    b->base.index = -1; /* main.c places it */
    return &b->base;
}

int wp_backend_cuda_count(wp_err *err) {
    wp_cu cu;
    void *lib = NULL;
    int version = 0, count = -1;
    memset(&cu, 0, sizeof cu);
    if (wp_cu_open(&lib, &cu, &version, err) == 0) {
        CUresult r = cu.init(0);
        if (r == CUDA_SUCCESS) r = cu.device_get_count(&count);
        if (r != CUDA_SUCCESS) {
            char text[160];
            count = -1;
            WP_FAIL(err, 503, "cuda_unavailable", "", "cuInit/cuDeviceGetCount failed: %s",
                    wp_cu_error_text(&cu, r, text, sizeof text));
        }
    }
    wp_cu_close(lib);
    return count;
}

wp_backend *wp_backend_cuda_open(int device_ordinal, wp_err *err) {
    return wp_backend_cuda_open_streams(device_ordinal, WP_CUDA_STREAMS_DEFAULT, err);
}

int wp_backend_cuda_streams(const wp_backend *base) {
    if (!base || strcmp(base->ops->name, "cuda")) return 0;
    return ((const cuda_backend *)base)->n_lanes;
}

/* cuInit and the device's attributes only: no context, stream or memory, which are most of what
 * opening a device costs (--prewarm --exit compiles for the device and runs nothing). */
int wp_backend_cuda_sm(int device_ordinal, int *sm, wp_err *err) {
    void *lib = NULL;
    wp_cu cu;
    memset(&cu, 0, sizeof cu);
    int version = 0;
    if (wp_cu_open(&lib, &cu, &version, err)) {
        wp_cu_close(lib);
        return -1;
    }
    CUdevice dev = 0;
    int rc = cuda_device_find(&cu, device_ordinal, &dev, sm, err);
    wp_cu_close(lib);
    return rc;
}
