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
bool wp_backend_on_host(const wp_backend *b) { return b->ops->host_buffers; }
int wp_backend_streams(const wp_backend *b) {
    int n = wp_backend_cuda_streams(b);
    return n ? n : 1;
}
int wp_backend_ordinal(const wp_backend *b) { return b->ordinal; }
int wp_backend_index(const wp_backend *b) { return b->index >= 0 ? b->index : b->ordinal; }
void wp_backend_set_index(wp_backend *b, int index) { b->index = index; }
void wp_backend_job_enter(wp_backend *b) { atomic_fetch_add(&b->running, 1); }
void wp_backend_job_leave(wp_backend *b) { atomic_fetch_sub(&b->running, 1); }
int wp_backend_running(const wp_backend *b) { return atomic_load(&((wp_backend *)b)->running); }
bool wp_backend_lane_free(wp_backend *b) { return !b->ops->lane_free || b->ops->lane_free(b); }
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
    wp_backend_job_enter(b);
    int rc = b->ops->run_warp(b, fn, s, job, res, t, err);
    wp_backend_job_leave(b);
    return rc;
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
    if (!buf->n_shards && buf->size && buf->generation != backend_generation(buf->backend))
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
    if (buf->n_shards) {
        for (int i = 0; i < buf->n_shards; i++) wp_buf_free(buf->shard[i]);
        free(buf->shard);
        free(buf->shard_offset);
        free(buf);
        return;
    }
    if (buf->ipc) { /* another process's memory: the mapping is closed (the backend checks its context) */
        buf->backend->ops->ipc_close(buf->backend, buf->ipc);
        free(buf);
        return;
    }
    /* A lost buffer's memory died with its context: nothing to give back. */
    if (buf->size && buf->generation == backend_generation(buf->backend))
        buf->backend->ops->buf_free(buf->backend, buf);
    free(buf);
}

int wp_backend_host_register(wp_backend *b, void *p, size_t len, wp_err *err) {
    return b->ops->host_register && len ? b->ops->host_register(b, p, len, err) : 1;
}

void wp_backend_host_unregister(wp_backend *b, void *p) {
    if (b->ops->host_unregister) b->ops->host_unregister(b, p);
}

wp_buf *wp_buf_open_ipc(wp_backend *b, const unsigned char handle[64], size_t offset, size_t bytes, wp_err *err) {
    if (!b->ops->ipc_open) {
        WP_FAIL(err, 400, "needs_gpu", "cuda_ipc", "a CUDA IPC buffer needs a GPU; this daemon runs on %s",
                b->ops->name);
        return NULL;
    }
    uint64_t base = 0;
    size_t whole = 0;
    void *ipc = NULL;
    if (b->ops->ipc_open(b, handle, &base, &whole, &ipc, err)) return NULL;
    wp_buf *buf = NULL;
    if (offset > whole || bytes > whole - offset)
        WP_FAIL(err, 400, "out_of_range", offset > whole ? "cuda_ipc.offset" : "cuda_ipc.count",
                "offset %zu and %zu bytes lie past the allocation's %zu bytes", offset, bytes, whole);
    else if (!(buf = calloc(1, sizeof *buf)))
        WP_FAIL(err, 507, "out_of_memory", "", "no host memory for a buffer handle");
    if (!buf) {
        b->ops->ipc_close(b, ipc);
        return NULL;
    }
    buf->backend = b;
    buf->size = bytes;
    buf->addr = base + offset;
    buf->generation = backend_generation(b);
    buf->ipc = ipc;
    return buf;
}

bool wp_buf_is_ipc(const wp_buf *buf) { return buf && buf->ipc; }

/* The parts of a sharded buffer that [offset, offset+len) touches: each as (part, offset in it, offset
 * in the range, length). */
typedef int (*part_fn)(wp_buf *part, size_t at, size_t from, size_t len, void *ctx, wp_err *err);
static int each_part(const wp_buf *g, size_t offset, size_t len, part_fn fn, void *ctx, wp_err *err) {
    for (int i = 0; i < g->n_shards; i++) {
        size_t lo = g->shard_offset[i], hi = lo + g->shard[i]->size;
        size_t from = offset > lo ? offset : lo, to = offset + len < hi ? offset + len : hi;
        if (from < to && fn(g->shard[i], from - lo, from - offset, to - from, ctx, err)) return -1;
    }
    return 0;
}
static int part_write(wp_buf *p, size_t at, size_t from, size_t len, void *ctx, wp_err *err) {
    return wp_buf_write(p, at, (const uint8_t *)ctx + from, len, err);
}
static int part_read(wp_buf *p, size_t at, size_t from, size_t len, void *ctx, wp_err *err) {
    return wp_buf_read(p, at, (uint8_t *)ctx + from, len, err);
}
static int part_memset(wp_buf *p, size_t at, size_t from, size_t len, void *ctx, wp_err *err) {
    (void)from;
    return wp_buf_memset(p, at, *(const int *)ctx, len, err);
}

int wp_buf_write(wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "write", err)) return -1;
    if (!len) return 0;
    if (buf->n_shards) return each_part(buf, offset, len, part_write, (void *)(uintptr_t)src, err);
    if (!buf->backend->ops->buf_write) return WP_UNSUPPORTED(buf->backend, err, "buffer writes");
    return buf->backend->ops->buf_write(buf->backend, buf, offset, src, len, err);
}

int wp_buf_read(const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "read", err)) return -1;
    if (!len) return 0;
    if (buf->n_shards) return each_part(buf, offset, len, part_read, dst, err);
    if (!buf->backend->ops->buf_read) return WP_UNSUPPORTED(buf->backend, err, "buffer reads");
    return buf->backend->ops->buf_read(buf->backend, buf, offset, dst, len, err);
}

int wp_buf_memset(wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    if (buf_check(buf, offset, len, "memset", err)) return -1;
    if (!len) return 0;
    if (buf->n_shards) return each_part(buf, offset, len, part_memset, &byte, err);
    if (!buf->backend->ops->buf_memset) return WP_UNSUPPORTED(buf->backend, err, "buffer memset");
    return buf->backend->ops->buf_memset(buf->backend, buf, offset, byte, len, err);
}

int wp_buf_copy(wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len, wp_err *err) {
    if (dst->n_shards || src->n_shards)
        return WP_FAIL(err, 400, "sharded_buffer", "buffer", "a sharded buffer is copied part by part");
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

wp_buf *wp_buf_alloc_sharded(wp_backend *const *devs, int n, size_t esize, uint64_t count, wp_err *err) {
    if (n < 1 || n > WP_BUF_SHARDS_MAX || !esize) {
        WP_FAIL(err, 400, "bad_shard", "shard", "a buffer is sharded over 1..%d devices", WP_BUF_SHARDS_MAX);
        return NULL;
    }
    wp_buf *g = calloc(1, sizeof *g);
    if (g) g->shard = calloc((size_t)n, sizeof *g->shard);
    if (g) g->shard_offset = calloc((size_t)n, sizeof *g->shard_offset);
    if (!g || !g->shard || !g->shard_offset) {
        if (g) free(g->shard);
        free(g);
        WP_FAIL(err, 507, "out_of_memory", "", "no host memory for a sharded buffer");
        return NULL;
    }
    g->backend = devs[0];
    g->size = (size_t)count * esize;
    g->n_shards = n;
    uint64_t base = count / (uint64_t)n, rem = count % (uint64_t)n, at = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = base + ((uint64_t)i < rem);
        g->shard_offset[i] = (size_t)(at * esize);
        if (!(g->shard[i] = wp_buf_alloc(devs[i], (size_t)(c * esize), err))) {
            wp_buf_free(g);
            return NULL;
        }
        at += c;
    }
    return g;
}

wp_buf *wp_buf_alloc_like(const wp_buf *like, size_t esize, uint64_t count, wp_err *err) {
    if (!like->n_shards) return wp_buf_alloc(like->backend, (size_t)(count * esize), err);
    wp_backend *devs[WP_BUF_SHARDS_MAX];
    for (int i = 0; i < like->n_shards; i++) devs[i] = like->shard[i]->backend;
    return wp_buf_alloc_sharded(devs, like->n_shards, esize, count, err);
}

int wp_buf_shards(const wp_buf *buf) { return buf->n_shards; }
wp_buf *wp_buf_shard(const wp_buf *buf, int i, size_t *offset) {
    if (offset) *offset = buf->shard_offset[i];
    return buf->shard[i];
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

int wp_backend_launch_io(wp_backend *b, void *const *fn, const wp_launch *launches, int n, const wp_launch_io *io,
                         wp_run_timing *t, wp_err *err) {
    if (t) *t = (wp_run_timing){0};
    const wp_buf *buf = io->buf;
    if (buf->backend != b || buf->n_shards)
        return WP_FAIL(err, 400, "backend_mismatch", "buffer", "the buffer lives on another backend or device");
    if (io->fill &&
        (io->write_offset || io->write_len > io->image_len ||
         (io->read_len && (io->read_offset > io->image_len || io->read_len > io->image_len - io->read_offset))))
        return WP_FAIL(err, 500, "internal", "", "an image goes at offset 0 and holds its write and its read");
    if ((io->write_len && buf_check(buf, io->write_offset, io->write_len, "write", err)) ||
        (io->read_len && buf_check(buf, io->read_offset, io->read_len, "read", err)) ||
        (io->fill && buf_check(buf, 0, io->image_len, "image", err)))
        return -1;
    const bool fused = n > 0 && b->ops->launch_io && !(io->write_len && (launches[0].flags & WP_LAUNCH_GRAPH));
    if (fused) return b->ops->launch_io(b, fn, launches, n, io, t, err);
    const uint64_t start = wp_now_ns();
    uint64_t t0 = start;
    if (io->write_len && io->fill) { /* built here for buf's address, then written as src would be */
        void *image = malloc(io->write_len);
        if (!image) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for a %zu-byte image", io->write_len);
        io->fill(io->fill_ctx, wp_buf_addr(buf), image);
        int rc = wp_buf_write(io->buf, 0, image, io->write_len, err);
        free(image);
        if (rc) return -1;
    } else if (io->write_len && wp_buf_write(io->buf, io->write_offset, io->src, io->write_len, err)) {
        return -1;
    }
    if (t) t->upload_us = wp_us_since(t0);
    if (n > 0 && wp_backend_launch(b, fn, launches, n, t ? &t->kernel_us : NULL, err)) return -1;
    t0 = wp_now_ns();
    if (io->read_len && wp_buf_read(buf, io->read_offset, io->dst, io->read_len, err)) return -1;
    if (t) t->download_us = wp_us_since(t0);
    /* untimed asked for (cuda, no launch: every job of a batch empty): the round trip alone, as fused */
    if (t && io->untimed && !wp_backend_on_host(b))
        *t = (wp_run_timing){.untimed = true, .device_us = wp_us_since(start)};
    return 0;
}

int wp_backend_launch_read(wp_backend *b, void *const *fn, const wp_launch *launches, int n, double *kernel_us,
                           const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    wp_launch_io io = {.buf = (wp_buf *)buf, .read_offset = offset, .read_len = len, .dst = dst};
    wp_run_timing t;
    int rc = wp_backend_launch_io(b, fn, launches, n, &io, kernel_us ? &t : NULL, err);
    if (rc == 0 && kernel_us) *kernel_us = t.kernel_us;
    return rc;
}

/* ---- streams into a buffer (buffer.h) ---- */

#define WP_STREAM_SLOTS 4               /* ring slots: one filling, the rest copying */
#define WP_STREAM_SLOT_BYTES (8u << 20) /* a slot: large enough that a copy's fixed cost is lost in it */
#define WP_STREAM_RING_MIN (16u << 20)  /* smaller buffers are gathered and written at once */
#define WP_STREAM_STAGE_MAX (16u << 20) /* host staging of the synchronous path, written when full */

typedef enum { MODE_HOST, MODE_RING, MODE_STAGED, MODE_SHARDED } stream_mode;

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
    wp_buf_stream *part[WP_BUF_SHARDS_MAX]; /* MODE_SHARDED: a stream into each part, fed in order */
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
    if (buf->n_shards) { /* striped: each part's bytes go to its device while the rest still arrive */
        s->mode = MODE_SHARDED;
        for (int i = 0; i < buf->n_shards; i++)
            if (!(s->part[i] = wp_buf_stream_open(buf->shard[i], err))) {
                wp_buf_stream_free(s);
                return NULL;
            }
        return s;
    }
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
    if (s->mode == MODE_SHARDED) {
        for (int i = 0; i < s->buf->n_shards && len; i++) {
            size_t hi = s->buf->shard_offset[i] + s->buf->shard[i]->size;
            if (s->at >= hi) continue;
            size_t k = hi - s->at < len ? hi - s->at : len;
            if (wp_buf_stream_write(s->part[i], p, k, &s->err)) return stream_fail(s, err);
            s->at += k, p += k, len -= k;
        }
        s->sent = s->at;
        return 0;
    }
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
    if (!s->ended && !s->rc && s->mode == MODE_SHARDED) {
        s->ended = true;
        for (int i = 0; i < s->buf->n_shards && !s->rc; i++) {
            if (wp_buf_stream_end(s->part[i], &s->err)) stream_fail(s, NULL);
            s->wait_ns += (uint64_t)(wp_buf_stream_wait_us(s->part[i]) * 1e3);
        }
    }
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
    for (int i = 0; i < WP_BUF_SHARDS_MAX; i++) wp_buf_stream_free(s->part[i]);
    free(s->stage);
    free(s);
}

size_t wp_buf_stream_written(const wp_buf_stream *s) { return s->at; }
double wp_buf_stream_wait_us(const wp_buf_stream *s) { return (double)s->wait_ns / 1e3; }
const char *wp_buf_stream_mode(const wp_buf_stream *s) {
    return s->mode == MODE_HOST      ? "host"
           : s->mode == MODE_RING    ? "ring"
           : s->mode == MODE_SHARDED ? "sharded"
                                     : "staged";
}
