/* backend.c — dispatch from the public backend calls to the backend's table. */
#include <stdlib.h>

#include "backend_impl.h"

void wp_backend_close(wp_backend *b) {
    if (b) b->ops->close(b);
}
const char *wp_backend_name(const wp_backend *b) { return b->ops->name; }
void wp_backend_info(wp_backend *b, wp_device_info *out) { b->ops->info(b, out); }
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
