/* cuda_buffers.c — the cuda backend's device memory (buffer.h): buffers, copies on a lane, and upload
 * rings (wp_buf_stream). Small device buffers (up to 1 MiB) are kept in per-size pools when freed:
 * cuMemFree waits for the whole device, which would serialize every small job behind the others.
 * Owns: what the pools hold, upload rings. */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

#define WP_UPLOAD_IDLE_MAX 2 /* upload rings kept for the next upload (page-locking is slow) */
#define WP_MEMPOOL_MIN 256
#define WP_MEMPOOL_KEEP 64               /* freed buffers kept per size class */
#define WP_MEMPOOL_BYTES_MAX (64u << 20) /* and at most this much memory in all classes */

/* ---- buffers (buffer.h): device memory from cuMemAlloc (small ones pooled), copies on a lane,
 * waited for before returning. backend.c has checked ranges; a buffer of an older context
 * generation is gone (410), and its memory died with that context. ---- */

/* The pool class of a buffer of size bytes, or -1 for one too large to pool. */
static int pool_class(size_t size) {
    for (int c = 0; c < WP_MEMPOOL_CLASSES; c++)
        if (size <= (size_t)WP_MEMPOOL_MIN << c) return c;
    return -1;
}

static size_t pool_bytes(const cuda_backend *b) {
    size_t total = 0;
    for (int c = 0; c < WP_MEMPOOL_CLASSES; c++) total += (size_t)b->pool[c].n * ((size_t)WP_MEMPOOL_MIN << c);
    return total;
}

int cuda_buf_alloc(wp_backend *base, wp_buf *buf, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    int c = pool_class(buf->size);
    if (c >= 0) {
        pthread_mutex_lock(&b->mu);
        bool got = b->ctx && b->pool[c].n > 0;
        if (got) {
            int i = --b->pool[c].n;
            buf->addr = b->pool[c].ptr[i];
            buf->generation = b->pool[c].gen[i];
        }
        pthread_mutex_unlock(&b->mu);
        if (got) return 0;
    }
    cuda_op op;
    if (cuda_op_begin(b, false, &op, err)) return -1;
    CUdeviceptr p = 0;
    CUresult r = b->cu.mem_alloc(&p, c >= 0 ? (size_t)WP_MEMPOOL_MIN << c : buf->size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        cuda_op_end(&op);
        return WP_FAIL(err, 507, "out_of_memory", "", "the GPU has no room for %zu bytes", buf->size);
    }
    if (r != CUDA_SUCCESS) return cuda_op_fail(&op, err, "cuMemAlloc", r);
    buf->addr = p;
    buf->generation = op.gen;
    cuda_op_end(&op);
    return 0;
}

void cuda_buf_free(wp_backend *base, wp_buf *buf) {
    cuda_backend *b = (cuda_backend *)base;
    if (!buf->addr) return;
    int c = pool_class(buf->size);
    if (c >= 0) {
        pthread_mutex_lock(&b->mu);
        bool keep = buf->generation == b->generation && b->ctx && b->pool[c].n < WP_MEMPOOL_KEEP &&
                    pool_bytes(b) + ((size_t)WP_MEMPOOL_MIN << c) <= WP_MEMPOOL_BYTES_MAX;
        if (keep && !b->pool[c].ptr) {
            b->pool[c].ptr = calloc(WP_MEMPOOL_KEEP, sizeof *b->pool[c].ptr);
            b->pool[c].gen = calloc(WP_MEMPOOL_KEEP, sizeof *b->pool[c].gen);
            keep = b->pool[c].ptr && b->pool[c].gen;
        }
        if (keep) {
            int i = b->pool[c].n++;
            b->pool[c].ptr[i] = buf->addr;
            b->pool[c].gen[i] = buf->generation;
        }
        pthread_mutex_unlock(&b->mu);
        if (keep) return;
    }
    cuda_op op;
    if (cuda_op_begin(b, false, &op, NULL) == 0) {
        if (buf->generation == op.gen) b->cu.mem_free(buf->addr);
        cuda_op_end(&op);
    }
}

/* Enters with a lane and checks the buffer still lives in this context. */
static int buf_begin(cuda_backend *b, const wp_buf *buf, const wp_buf *other, cuda_op *op, wp_err *err) {
    if (cuda_op_begin(b, true, op, err)) return -1;
    if (buf->generation != op->gen || (other && other->generation != op->gen)) {
        cuda_op_end(op);
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    }
    return 0;
}

/* Waits for the lane's queued work and ends the op (or fails it with the call that failed). */
static int buf_finish(cuda_op *op, CUresult r, const char *call, wp_err *err) {
    if (r == CUDA_SUCCESS) r = cuda_lane_wait(op->b, op->lane, &call);
    if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, call, r);
    cuda_op_end(op);
    return 0;
}

int cuda_buf_write(wp_backend *base, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, buf, NULL, &op, err)) return -1;
    const char *call = "cuMemcpyHtoDAsync";
    CUresult r = CUDA_SUCCESS;
    if (len <= WP_STAGE_MAX && (r = cuda_lane_reserve(b, op.lane, 0, len, &call)) == CUDA_SUCCESS) {
        memcpy(op.lane->host, src, len); /* page-locked: the copy is truly asynchronous */
        call = "cuMemcpyHtoDAsync";
        r = b->cu.memcpy_htod_async(buf->addr + offset, op.lane->host, len, op.lane->stream);
    } else if (len > WP_STAGE_MAX) {
        r = b->cu.memcpy_htod_async(buf->addr + offset, src, len, op.lane->stream);
    }
    return buf_finish(&op, r, call, err);
}

int cuda_buf_read(wp_backend *base, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, buf, NULL, &op, err)) return -1;
    const char *call = "cuMemcpyDtoHAsync";
    CUresult r = CUDA_SUCCESS;
    bool staged = len <= WP_STAGE_MAX;
    if (staged && (r = cuda_lane_reserve(b, op.lane, 0, len, &call)) == CUDA_SUCCESS) {
        call = "cuMemcpyDtoHAsync";
        r = b->cu.memcpy_dtoh_async(op.lane->host, buf->addr + offset, len, op.lane->stream);
    } else if (!staged) {
        r = b->cu.memcpy_dtoh_async(dst, buf->addr + offset, len, op.lane->stream);
    }
    if (r == CUDA_SUCCESS) r = cuda_lane_wait(b, op.lane, &call);
    if (r != CUDA_SUCCESS) return cuda_op_fail(&op, err, call, r);
    if (staged) memcpy(dst, op.lane->host, len);
    cuda_op_end(&op);
    return 0;
}

int cuda_buf_memset(wp_backend *base, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, buf, NULL, &op, err)) return -1;
    CUresult r = b->cu.memset_d8_async(buf->addr + offset, (unsigned char)byte, len, op.lane->stream);
    return buf_finish(&op, r, "cuMemsetD8Async", err);
}

int cuda_buf_copy(wp_backend *base, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len,
                  wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, dst, src, &op, err)) return -1;
    CUresult r = b->cu.memcpy_dtod_async(dst->addr + dst_offset, src->addr + src_offset, len, op.lane->stream);
    return buf_finish(&op, r, "cuMemcpyDtoDAsync", err);
}

/* ---- upload rings (wp_buf_stream): host -> device copies from page-locked slots on a stream of
 * their own, so a request body's next chunks are received while the last ones cross the bus. Each
 * call passes the gate; the waits hold no lock. ---- */

/* An idle ring of this shape, or NULL. mu held. */
static cuda_ring *ring_take_idle(cuda_backend *b, int slots, size_t slot_bytes) {
    for (cuda_ring **pp = &b->idle_rings; *pp; pp = &(*pp)->next) {
        cuda_ring *x = *pp;
        if (x->generation == b->generation && x->slots == slots && x->slot_bytes == slot_bytes) {
            *pp = x->next;
            b->n_idle_rings--;
            return x;
        }
    }
    return NULL;
}

static cuda_ring *ring_make(cuda_op *op, size_t slot_bytes, int slots, wp_err *err) {
    cuda_backend *b = op->b;
    cuda_ring *r = calloc(1, sizeof *r);
    if (!r) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
        return NULL;
    }
    r->generation = op->gen;
    r->slots = slots;
    r->slot_bytes = slot_bytes;
    const char *call = "cuStreamCreate";
    CUresult cr = b->cu.stream_create(&r->stream, CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < slots && cr == CUDA_SUCCESS; i++) {
        call = "cuEventCreate";
        if ((cr = b->cu.event_create(&r->done[i], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) break;
        call = "cuMemHostAlloc";
        cr = b->cu.mem_host_alloc(&r->host[i], slot_bytes, 0);
        if (cr != CUDA_SUCCESS) r->host[i] = NULL;
    }
    if (cr != CUDA_SUCCESS) {
        wp_cu_fail(&b->cu, err, call, cr); /* not sticky: no page-locked memory, say; the caller stages instead */
        cuda_ring_destroy(b, r, op->gen);
        return NULL;
    }
    return r;
}

void *cuda_upload_open(wp_backend *base, size_t slot_bytes, int slots, void **host, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    if (slots < 1 || slots > WP_UPLOAD_SLOTS_MAX) {
        WP_FAIL(err, 500, "internal", "", "an upload ring has 1..%d slots", WP_UPLOAD_SLOTS_MAX);
        return NULL;
    }
    pthread_mutex_lock(&b->mu);
    cuda_ring *r = ring_take_idle(b, slots, slot_bytes);
    pthread_mutex_unlock(&b->mu);
    cuda_op op;
    if (!r && cuda_op_begin(b, false, &op, err) == 0) {
        r = ring_make(&op, slot_bytes, slots, err);
        cuda_op_end(&op);
    }
    if (r)
        for (int i = 0; i < slots; i++) host[i] = r->host[i];
    return r;
}

static int ring_begin(cuda_backend *b, const cuda_ring *r, cuda_op *op, wp_err *err) {
    if (cuda_op_begin(b, false, op, err)) return -1;
    if (r->generation != op->gen) {
        cuda_op_end(op);
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the upload was lost when the CUDA context was reset");
    }
    return 0;
}

int cuda_upload_send(wp_backend *base, void *ringp, int slot, wp_buf *buf, size_t offset, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    cuda_op op;
    if (ring_begin(b, r, &op, err)) return -1;
    if (buf->generation != op.gen) {
        cuda_op_end(&op);
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    }
    const char *call = "cuMemcpyHtoDAsync (upload)";
    CUresult cr = b->cu.memcpy_htod_async(buf->addr + offset, r->host[slot], len, r->stream);
    if (cr == CUDA_SUCCESS) {
        call = "cuEventRecord (upload)";
        cr = b->cu.event_record(r->done[slot], r->stream);
    }
    if (cr != CUDA_SUCCESS) return cuda_op_fail(&op, err, call, cr);
    cuda_op_end(&op);
    return 0;
}

int cuda_upload_wait(wp_backend *base, void *ringp, int slot, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    cuda_op op;
    if (ring_begin(b, r, &op, err)) return -1;
    CUresult cr = b->cu.event_synchronize(r->done[slot]);
    if (cr != CUDA_SUCCESS) return cuda_op_fail(&op, err, "cuEventSynchronize (upload)", cr);
    cuda_op_end(&op);
    return 0;
}

void cuda_upload_close(wp_backend *base, void *ringp) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    cuda_op op;
    if (cuda_op_begin(b, false, &op, NULL)) { /* the device is lost: its objects with it */
        free(r);
        return;
    }
    bool keep = r->generation == op.gen && b->cu.stream_synchronize(r->stream) == CUDA_SUCCESS;
    if (keep) {
        pthread_mutex_lock(&b->mu);
        keep = b->n_idle_rings < WP_UPLOAD_IDLE_MAX;
        if (keep) {
            r->next = b->idle_rings;
            b->idle_rings = r;
            b->n_idle_rings++;
        }
        pthread_mutex_unlock(&b->mu);
    }
    if (!keep) cuda_ring_destroy(b, r, op.gen);
    cuda_op_end(&op);
}
