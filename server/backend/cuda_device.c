/* cuda_device.c — one CUDA device of the cuda backend: its facts, its context, the gate every
 * operation passes (cuda_op_begin / cuda_op_end) and recovery from a sticky error.
 *
 * Recovery: a sticky error (illegal address, launch failure, ...) poisons the context. The job fails
 * with 500 "cuda_error" and the context is replaced (cuda_reset), the generation counter going up.
 * The reset waits until no operation is inside the gate (they fail fast on a poisoned context) and
 * lets none in meanwhile; whichever failing op gets there first resets, the others see the new
 * generation and leave it. Where the driver refuses a new context in-process (seen on H100, driver
 * 580), the device is lost and every later operation fails with 503 "cuda_unavailable", those
 * waiting for a lane too. Lanes are handed out by the device's lane gate (lane_gate.h), in turn by user.
 * Owns: the context, the gate state and the lanes' lifetime (cuda_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "util/on_behalf.h"

/* Context checked by a synchronize (a context that inherited a sticky error fails it), current. */
static CUresult context_ready(cuda_backend *b, const char **call) {
    CUresult r;
    *call = "cuCtxSetCurrent";
    if ((r = b->cu.ctx_set_current(b->ctx)) != CUDA_SUCCESS) return r;
    *call = "cuCtxSynchronize";
    return b->cu.ctx_synchronize(b->ctx);
}

void cuda_publish(cuda_backend *b) {
    atomic_store_explicit(&b->live_gen, b->ctx && !b->resetting ? b->generation : 0, memory_order_release);
}

/* Gives up b->ctx (primary: release; own: destroy). */
static void context_drop(cuda_backend *b) {
    if (!b->ctx) return;
    if (b->ctx_own)
        b->cu.ctx_destroy(b->ctx);
    else
        b->cu.primary_ctx_release(b->dev);
    b->ctx = NULL;
    b->ctx_own = false;
}

/* Forgets everything that lived in the poisoned context (the reset frees it): lanes, idle rings,
 * pooled small buffers. mu held, no op inside. */
static void forget_context_objects(cuda_backend *b) {
    for (int i = 0; i < b->n_lanes; i++) cuda_lane_forget(&b->lanes[i]);
    while (b->idle_rings) {
        cuda_ring *r = b->idle_rings;
        b->idle_rings = r->next;
        free(r);
    }
    b->n_idle_rings = 0;
    for (int c = 0; c < WP_MEMPOOL_CLASSES; c++) b->pool[c].n = 0;
}

/* After a sticky error: throw the poisoned context away and work in a fresh one — the primary
 * context after cuDevicePrimaryCtxReset, else a context of our own (cuCtxCreate). Returns 0 when
 * the device is usable again (*how says which way); else b->ctx stays NULL and why says why. mu
 * held, no op inside. */
static int cuda_reset(cuda_backend *b, const char **how, char *why, size_t wn) {
    forget_context_objects(b);
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
    if (r == CUDA_SUCCESS && (r = context_ready(b, &call)) == CUDA_SUCCESS) {
        *how = "fresh primary context";
        return 0;
    }
    if (r != CUDA_SUCCESS && b->ctx) context_drop(b);
    b->ctx = NULL;
    int len = snprintf(why, wn, "primary context: %s: %s", call, wp_cu_error_text(&b->cu, r, text, sizeof text));

    call = "cuCtxCreate";
    r = b->cu.ctx_create(&b->ctx, NULL, 0, b->dev);
    if (r == CUDA_SUCCESS) {
        b->ctx_own = true;
        if ((r = context_ready(b, &call)) == CUDA_SUCCESS) {
            *how = "new context";
            return 0;
        }
        context_drop(b);
    }
    b->ctx = NULL;
    if (len > 0 && (size_t)len < wn)
        snprintf(why + len, wn - (size_t)len, "; new context: %s: %s", call,
                 wp_cu_error_text(&b->cu, r, text, sizeof text));
    b->cu.ctx_set_current(NULL);
    return -1;
}

static void wait_cv(cuda_backend *b) {
    b->waiters++;
    pthread_cond_wait(&b->cv, &b->mu);
    b->waiters--;
}

/* Waits out a reset and, with want_lane, takes a lane (waiting for one in its user's turn). Returns
 * with no reset running and the lane taken, or with the device lost (b->ctx NULL, no lane). mu held. */
static void gate_enter(cuda_backend *b, bool want_lane, cuda_op *op) {
    while (b->ctx) {
        if (b->resetting)
            wait_cv(b); /* a lane already given to it waits with it: the reset waits only for ops inside */
        else if (want_lane && !op->lane)
            op->lane = wp_lane_gate_take(&b->lane_gate, &b->mu, wp_on_behalf(), &op->who);
        else
            return;
    }
    if (op->lane) wp_lane_gate_give(&b->lane_gate, op->who, op->lane); /* lost meanwhile */
    op->lane = NULL;
}

int cuda_op_begin(cuda_backend *b, bool want_lane, cuda_op *op, wp_err *err) {
    op->b = b;
    op->lane = NULL;
    op->who = -1;
    pthread_mutex_lock(&b->mu);
    gate_enter(b, want_lane, op);
    if (!b->ctx) {
        pthread_mutex_unlock(&b->mu);
        return WP_FAIL(err, 503, "cuda_unavailable", "", "CUDA device %d is lost until warpd restarts (%s)", b->ordinal,
                       b->lost_reason);
    }
    b->inflight++;
    op->gen = b->generation;
    CUcontext ctx = b->ctx; /* stays while inflight > 0 */
    pthread_mutex_unlock(&b->mu);
    const char *call = "cuCtxSetCurrent";
    CUresult r = b->cu.ctx_set_current(ctx);
    if (r == CUDA_SUCCESS && op->lane) r = cuda_lane_ready(b, op->lane, op->gen, &call);
    return r == CUDA_SUCCESS ? 0 : cuda_op_fail(op, err, call, r);
}

void cuda_op_end(cuda_op *op) {
    cuda_backend *b = op->b;
    pthread_mutex_lock(&b->mu);
    if (op->lane) {
        wp_lane_gate_give(&b->lane_gate, op->who, op->lane); /* to the next waiter in turn, if any */
        op->lane = NULL;
    }
    b->inflight--;
    if (b->waiters && (b->inflight == 0 || !b->resetting)) pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Resets the context unless another op already did since generation gen. Appends the outcome to
 * err->msg. Called with no op of this thread inside the gate. */
static void recover(cuda_backend *b, unsigned gen, wp_err *err) {
    size_t len = strlen(err->msg);
    pthread_mutex_lock(&b->mu);
    while (b->resetting) wait_cv(b);
    if (b->generation == gen && b->ctx) {
        b->resetting = true;
        cuda_publish(b);
        while (b->inflight > 0) wait_cv(b);
        const char *how = "";
        if (cuda_reset(b, &how, b->lost_reason, sizeof b->lost_reason) == 0)
            snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context was reset (%s)", how);
        else
            snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context could not be recreated: %s",
                     b->lost_reason);
        b->resetting = false;
        cuda_publish(b);
        pthread_cond_broadcast(&b->cv);
        if (!b->ctx) wp_lane_gate_wake_all(&b->lane_gate); /* lane waiters: the device is lost */
    } else if (!b->ctx) {
        snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context could not be recreated: %s",
                 b->lost_reason);
    } else {
        snprintf(err->msg + len, sizeof err->msg - len, "; the CUDA context was reset");
    }
    pthread_mutex_unlock(&b->mu);
}

int cuda_op_fail(cuda_op *op, wp_err *err, const char *call, CUresult r) {
    cuda_backend *b = op->b;
    wp_err local;
    if (!err) err = &local;
    wp_cu_fail(&b->cu, err, call, r);
    /* A sticky error may show in the failing call, or an earlier asynchronous one in a synchronize.
     * The lane's stream is drained before the lane goes back (a later op must not find work of
     * this one still queued). */
    CUresult sync = CUDA_SUCCESS;
    if (!wp_cu_is_sticky(r)) {
        sync = op->lane && op->lane->stream ? b->cu.stream_synchronize(op->lane->stream) : CUDA_SUCCESS;
        if (sync == CUDA_SUCCESS) sync = b->cu.ctx_synchronize(b->ctx); /* stable: this op is inside */
    }
    unsigned gen = op->gen;
    cuda_op_end(op);
    if (wp_cu_is_sticky(r) || sync != CUDA_SUCCESS) recover(b, gen, err);
    return -1;
}

int cuda_device_find(const wp_cu *cu, int ordinal, CUdevice *dev, int *sm, wp_err *err) {
    char text[160];
    CUresult r = cu->init(0);
    if (r != CUDA_SUCCESS)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "cuInit failed: %s%s",
                       wp_cu_error_text(cu, r, text, sizeof text),
                       r == CUDA_ERROR_NO_DEVICE ? "" : " (driver loaded, but no usable GPU)");
    int count = 0;
    r = cu->device_get_count(&count);
    if (r != CUDA_SUCCESS)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "cuDeviceGetCount failed: %s",
                       wp_cu_error_text(cu, r, text, sizeof text));
    if (ordinal < 0 || ordinal >= count)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "no CUDA device %d: the driver sees %d device(s)", ordinal,
                       count);
    int major = 0, minor = 0;
    const char *call = "cuDeviceGet";
    if ((r = cu->device_get(dev, ordinal)) == CUDA_SUCCESS) {
        call = "cuDeviceGetAttribute";
        if ((r = cu->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *dev)) == CUDA_SUCCESS)
            r = cu->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *dev);
    }
    if (r != CUDA_SUCCESS)
        return WP_FAIL(err, 503, "cuda_unavailable", "", "device %d: %s failed: %s", ordinal, call,
                       wp_cu_error_text(cu, r, text, sizeof text));
    *sm = major * 10 + minor;
    return 0;
}

int cuda_device_start(cuda_backend *b, int ordinal, wp_err *err) {
    char text[160];
    b->ordinal = ordinal;
    int sm = 0;
    if (cuda_device_find(&b->cu, ordinal, &b->dev, &sm, err)) return -1;
    CUresult r;
    int sms = 0;
    size_t total = 0, free_bytes = 0;
    const char *call = "cuDeviceGetName";
    if ((r = b->cu.device_get_name(b->info.name, (int)sizeof b->info.name, b->dev)) != CUDA_SUCCESS) goto fail;
    call = "cuDeviceGetAttribute";
    if ((r = b->cu.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, b->dev))) goto fail;
    call = "cuDeviceTotalMem";
    if ((r = b->cu.device_total_mem(&total, b->dev)) != CUDA_SUCCESS) goto fail;
    call = "cuDevicePrimaryCtxRetain";
    if ((r = b->cu.primary_ctx_retain(&b->ctx, b->dev)) != CUDA_SUCCESS) {
        b->ctx = NULL;
        goto fail;
    }
    call = "cuCtxSetCurrent";
    if ((r = b->cu.ctx_set_current(b->ctx)) != CUDA_SUCCESS) goto fail;
    call = "cuMemGetInfo";
    if ((r = b->cu.mem_get_info(&free_bytes, &total)) != CUDA_SUCCESS) goto fail;
    b->info.backend = "cuda";
    b->info.sm = sm;
    b->info.sms = sms;
    b->info.mem_total = total;
    b->info.mem_free = free_bytes;
    b->generation = 1;
    cuda_publish(b);
    return 0;
fail:
    return WP_FAIL(err, 503, "cuda_unavailable", "", "device %d: %s failed: %s", ordinal, call,
                   wp_cu_error_text(&b->cu, r, text, sizeof text));
}

void cuda_ring_destroy(cuda_backend *b, cuda_ring *r, unsigned live_gen) {
    if (r->generation == live_gen) {
        if (r->stream) b->cu.stream_synchronize(r->stream);
        for (int i = 0; i < r->slots; i++) {
            if (r->done[i]) b->cu.event_destroy(r->done[i]);
            if (r->host[i]) b->cu.mem_free_host(r->host[i]);
        }
        if (r->stream) b->cu.stream_destroy(r->stream);
    }
    free(r);
}

void cuda_device_stop(cuda_backend *b) {
    bool live = b->ctx && b->cu.ctx_set_current(b->ctx) == CUDA_SUCCESS;
    if (live) b->cu.ctx_synchronize(b->ctx);
    while (b->idle_rings) {
        cuda_ring *r = b->idle_rings;
        b->idle_rings = r->next;
        if (live)
            cuda_ring_destroy(b, r, b->generation);
        else
            free(r);
    }
    for (int c = 0; c < WP_MEMPOOL_CLASSES; c++) {
        for (int i = 0; live && i < b->pool[c].n; i++)
            if (b->pool[c].gen[i] == b->generation) b->cu.mem_free(b->pool[c].ptr[i]);
        free(b->pool[c].ptr);
        free(b->pool[c].gen);
        b->pool[c].ptr = NULL;
        b->pool[c].gen = NULL;
        b->pool[c].n = 0;
    }
    if (live) cuda_lanes_free(b);
    free(b->lanes);
    b->lanes = NULL;
    context_drop(b);
    cuda_publish(b);
}
