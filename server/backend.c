/* backend.c — dispatch from the public backend calls to the backend's table, and the buffer streams
 * (wp_buf_stream, buffer.h) built on it. */
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"

void wp_backend_close(wp_backend *b) {
    if (b) b->ops->close(b);
}
const char *wp_backend_name(const wp_backend *b) { return b->ops->name; }
void wp_backend_info(wp_backend *b, wp_device_info *out) { b->ops->info(b, out); }
const wp_device_info *wp_backend_facts(const wp_backend *b) { return &b->facts; }
bool wp_backend_usable(wp_backend *b, char *why, size_t n) {
    if (n) why[0] = 0;
    return !b->ops->usable || b->ops->usable(b, why, n);
}
int wp_backend_load(void *b, const wp_artifact *a, void **fn, wp_err *err) {
    wp_backend *be = b;
    return be->ops->load(be, a, fn, err);
}
void wp_backend_unload(void *b, void *fn) {
    wp_backend *be = b;
    be->ops->unload(be, fn);
}
int wp_backend_run_warp(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                        wp_run_timing *t, wp_err *err) {
    return b->ops->run_warp(b, fn, s, job, res, t, err);
}

/* ---- buffers and launches (buffer.h): ranges, empty buffers and context loss are checked here,
 * once, so each backend's entries only move bytes. ---- */

#define WP_UNSUPPORTED(b, err, what)                                                                                   \
    WP_FAIL(err, 501, "unsupported_backend", "backend", "backend %s does not support %s", (b)->ops->name, what)

static unsigned backend_generation(wp_backend *b) { return b->ops->generation ? b->ops->generation(b) : 0; }
unsigned wp_backend_generation(wp_backend *b) { return backend_generation(b); }

static int buf_check(const wp_buf *buf, size_t offset, size_t len, const char *what, wp_err *err) {
    if (offset > buf->size || len > buf->size - offset)
        return WP_FAIL(err, 400, "out_of_range", "offset", "%s of %zu bytes at offset %zu is outside a buffer of %zu",
                       what, len, offset, buf->size);
    if (buf->size && buf->generation != backend_generation(buf->backend))
        return WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the %s context was reset",
                       buf->backend->ops->name);
    return 0;
}

wp_buf *wp_buf_alloc(wp_backend *b, size_t bytes, wp_err *err) {
    if (!b->ops->buf_alloc) {
        WP_UNSUPPORTED(b, err, "buffers");
        return NULL;
    }
    wp_buf *buf = calloc(1, sizeof *buf);
    if (!buf) {
        WP_FAIL(err, 507, "out_of_memory", "", "no host memory for a buffer handle");
        return NULL;
    }
    buf->backend = b;
    buf->size = bytes;
    buf->generation = backend_generation(b);
    if (bytes && b->ops->buf_alloc(b, buf, err)) {
        free(buf);
        return NULL;
    }
    return buf;
}

void wp_buf_free(wp_buf *buf) {
    if (!buf) return;
    /* A lost buffer's memory died with its context: nothing to give back. */
    if (buf->size && buf->generation == backend_generation(buf->backend))
        buf->backend->ops->buf_free(buf->backend, buf);
    free(buf);
}

int wp_buf_write(wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "write", err)) return -1;
    if (!len) return 0;
    if (!buf->backend->ops->buf_write) return WP_UNSUPPORTED(buf->backend, err, "buffer writes");
    return buf->backend->ops->buf_write(buf->backend, buf, offset, src, len, err);
}

int wp_buf_read(const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "read", err)) return -1;
    if (!len) return 0;
    if (!buf->backend->ops->buf_read) return WP_UNSUPPORTED(buf->backend, err, "buffer reads");
    return buf->backend->ops->buf_read(buf->backend, buf, offset, dst, len, err);
}

int wp_buf_memset(wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "memset", err)) return -1;
    if (!len) return 0;
    if (!buf->backend->ops->buf_memset) return WP_UNSUPPORTED(buf->backend, err, "buffer memset");
    return buf->backend->ops->buf_memset(buf->backend, buf, offset, byte, len, err);
}

int wp_buf_copy(wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len, wp_err *err) {
    if (dst->backend != src->backend)
        return WP_FAIL(err, 400, "bad_buffer", "buffer", "cannot copy between backends %s and %s",
                       src->backend->ops->name, dst->backend->ops->name);
    if (buf_check(dst, dst_offset, len, "copy", err) || buf_check(src, src_offset, len, "copy", err)) return -1;
    if (!len) return 0;
    if (dst == src && dst_offset < src_offset + len && src_offset < dst_offset + len)
        return WP_FAIL(err, 400, "out_of_range", "offset", "copy ranges overlap");
    if (!dst->backend->ops->buf_copy) return WP_UNSUPPORTED(dst->backend, err, "buffer copies");
    return dst->backend->ops->buf_copy(dst->backend, dst, dst_offset, src, src_offset, len, err);
}

size_t wp_buf_size(const wp_buf *buf) { return buf->size; }
wp_backend *wp_buf_backend(const wp_buf *buf) { return buf->backend; }
uint64_t wp_buf_addr(const wp_buf *buf) { return buf->addr; }
void *wp_buf_host(wp_buf *buf) { return buf->backend->ops->host_buffers ? (void *)(uintptr_t)buf->addr : NULL; }
const void *wp_buf_host_const(const wp_buf *buf) { return wp_buf_host((wp_buf *)buf); }

int wp_backend_launch(wp_backend *b, void *const *fn, const wp_launch *launches, int n, double *kernel_us,
                      wp_err *err) {
    if (!b->ops->launch) return WP_UNSUPPORTED(b, err, "kernel launches");
    if (kernel_us) *kernel_us = 0;
    if (n <= 0) return 0;
    return b->ops->launch(b, fn, launches, n, kernel_us, err);
}

/* ---- streams into a buffer (buffer.h) ---- */

#define WP_STREAM_SLOTS 4               /* ring slots: one filling, the rest copying */
#define WP_STREAM_SLOT_BYTES (8u << 20) /* a slot: large enough that a copy's fixed cost is lost in it */
#define WP_STREAM_RING_MIN (16u << 20)  /* smaller buffers are gathered and written at once */
#define WP_STREAM_STAGE_MAX (16u << 20) /* host staging of the synchronous path, written when full */

typedef enum { MODE_HOST, MODE_RING, MODE_STAGED } stream_mode;

struct wp_buf_stream {
    wp_buf *buf;
    stream_mode mode;
    size_t at;   /* bytes written so far: the next write's offset */
    size_t sent; /* bytes handed to the buffer (ring: copies queued; staged: written) */
    size_t fill; /* bytes waiting in the current slot or the stage */
    void *ring;
    void *slot[WP_STREAM_SLOTS];
    bool pending[WP_STREAM_SLOTS]; /* a copy from this slot may be in flight */
    int cur;
    uint8_t *stage;
    size_t stage_cap;
    uint64_t wait_ns;
    bool ended;
    int rc; /* the first error (sticks), in err */
    wp_err err;
};

static int stream_fail(wp_buf_stream *s, wp_err *err) {
    if (err && err != &s->err) *err = s->err;
    return s->rc = -1;
}

wp_buf_stream *wp_buf_stream_open(wp_buf *buf, wp_err *err) {
    if (buf_check(buf, 0, 0, "stream", err)) return NULL;
    wp_backend *b = buf->backend;
    if (!b->ops->host_buffers && !b->ops->buf_write) {
        WP_UNSUPPORTED(b, err, "buffer writes");
        return NULL;
    }
    wp_buf_stream *s = calloc(1, sizeof *s);
    if (!s) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
        return NULL;
    }
    s->buf = buf;
    if (b->ops->host_buffers) {
        s->mode = MODE_HOST;
        return s;
    }
    if (buf->size >= WP_STREAM_RING_MIN && b->ops->upload_open) {
        wp_err ignored = {0}; /* no ring (no page-locked memory, say): stage instead */
        s->ring = b->ops->upload_open(b, WP_STREAM_SLOT_BYTES, WP_STREAM_SLOTS, s->slot, &ignored);
        if (s->ring) {
            s->mode = MODE_RING;
            return s;
        }
    }
    s->mode = MODE_STAGED;
    s->stage_cap = buf->size < WP_STREAM_STAGE_MAX ? buf->size : WP_STREAM_STAGE_MAX;
    if (s->stage_cap && !(s->stage = malloc(s->stage_cap))) {
        free(s);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory for %zu bytes of staging", (size_t)WP_STREAM_STAGE_MAX);
        return NULL;
    }
    return s;
}

/* Ring: waits until slot i's last copy is done. */
static int slot_wait(wp_buf_stream *s, int i) {
    if (!s->pending[i]) return 0;
    uint64_t t0 = wp_now_ns();
    wp_backend *b = s->buf->backend;
    s->pending[i] = false;
    int rc = b->ops->upload_wait(b, s->ring, i, &s->err);
    s->wait_ns += wp_now_ns() - t0;
    return rc ? stream_fail(s, NULL) : 0;
}

/* Sends what is gathered (the current slot, or the stage). */
static int stream_flush(wp_buf_stream *s) {
    if (!s->fill) return 0;
    if (s->mode == MODE_RING) {
        wp_backend *b = s->buf->backend;
        if (b->ops->upload_send(b, s->ring, s->cur, s->buf, s->sent, s->fill, &s->err)) return stream_fail(s, NULL);
        s->pending[s->cur] = true;
        s->cur = (s->cur + 1) % WP_STREAM_SLOTS;
    } else {
        uint64_t t0 = wp_now_ns();
        int rc = wp_buf_write(s->buf, s->sent, s->stage, s->fill, &s->err);
        s->wait_ns += wp_now_ns() - t0;
        if (rc) return stream_fail(s, NULL);
    }
    s->sent += s->fill;
    s->fill = 0;
    return 0;
}

int wp_buf_stream_write(wp_buf_stream *s, const void *src, size_t len, wp_err *err) {
    if (s->rc) return stream_fail(s, err);
    if (s->ended) {
        WP_FAIL(&s->err, 500, "internal", "", "write after the end of a buffer stream");
        return stream_fail(s, err);
    }
    if (len > s->buf->size - s->at) {
        WP_FAIL(&s->err, 400, "out_of_range", "body", "%zu bytes do not fit after %zu in a buffer of %zu", len, s->at,
                s->buf->size);
        return stream_fail(s, err);
    }
    const uint8_t *p = src;
    if (s->mode == MODE_HOST) {
        if (len) memcpy((uint8_t *)(uintptr_t)s->buf->addr + s->at, p, len);
        s->at += len;
        s->sent = s->at;
        return 0;
    }
    size_t cap = s->mode == MODE_RING ? WP_STREAM_SLOT_BYTES : s->stage_cap;
    while (len) {
        if (s->mode == MODE_RING && s->fill == 0 && slot_wait(s, s->cur)) return stream_fail(s, err);
        uint8_t *dst = s->mode == MODE_RING ? s->slot[s->cur] : s->stage;
        size_t k = cap - s->fill < len ? cap - s->fill : len;
        memcpy(dst + s->fill, p, k);
        s->fill += k;
        s->at += k;
        p += k;
        len -= k;
        if (s->fill == cap && stream_flush(s)) return stream_fail(s, err);
    }
    return 0;
}

int wp_buf_stream_end(wp_buf_stream *s, wp_err *err) {
    if (!s->ended && !s->rc) {
        s->ended = true;
        if (stream_flush(s) == 0)
            for (int i = 0; i < WP_STREAM_SLOTS && !s->rc; i++) slot_wait(s, i);
    }
    return s->rc ? stream_fail(s, err) : 0;
}

void wp_buf_stream_free(wp_buf_stream *s) {
    if (!s) return;
    if (s->ring) s->buf->backend->ops->upload_close(s->buf->backend, s->ring); /* waits for copies in flight */
    free(s->stage);
    free(s);
}

size_t wp_buf_stream_written(const wp_buf_stream *s) { return s->at; }
double wp_buf_stream_wait_us(const wp_buf_stream *s) { return (double)s->wait_ns / 1e3; }
const char *wp_buf_stream_mode(const wp_buf_stream *s) {
    return s->mode == MODE_HOST ? "host" : s->mode == MODE_RING ? "ring" : "staged";
}
