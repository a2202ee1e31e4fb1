/* test_buf_stream.c — wp_buf_stream (server/backend/backend.c, buffer.h): sequential writes into a buffer while
 * the bytes arrive. On emu (in place), and on a fake device backend (tests/unit only) whose buffers are
 * not host memory, in both of the stream's other modes: staged (synchronous buf_write) and the ring
 * (upload_open/send/wait/close), where the fake copies a slot only when it is waited for — so a
 * stream that refilled a slot before its copy finished would be caught by the contents. Random chunk
 * sizes, every byte checked; errors stick (a failed copy, a write past the end, a lost ring); end is
 * idempotent; free without end waits for copies in flight. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/buffer.h"
#include "t.h"

/* ---- the fake device ---- */

#define FAKE_SLOTS_MAX 8

typedef struct {
    int slot;
    wp_buf *buf;
    size_t offset, len;
    bool queued;
} fake_copy;

typedef struct {
    void *host[FAKE_SLOTS_MAX];
    fake_copy copy[FAKE_SLOTS_MAX]; /* the copy queued from each slot, done when waited for */
    int slots;
    size_t slot_bytes;
} fake_ring;

typedef struct {
    wp_backend base;
    bool ring;         /* offers upload rings */
    int fail_send_at;  /* the nth send fails (0: never) */
    int sends, writes; /* calls so far */
    int rings_open, rings_made;
    size_t copied; /* bytes moved by ring copies */
} fake_backend;

static int fake_alloc(wp_backend *b, wp_buf *buf, wp_err *err) {
    (void)b;
    void *p = malloc(buf->size);
    if (!p) return WP_FAIL(err, 507, "out_of_memory", "", "no memory");
    memset(p, 0xee, buf->size);
    buf->addr = (uint64_t)(uintptr_t)p;
    return 0;
}
static void fake_free(wp_backend *b, wp_buf *buf) {
    (void)b;
    free((void *)(uintptr_t)buf->addr);
}
static int fake_write(wp_backend *b, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    (void)err;
    ((fake_backend *)b)->writes++;
    memcpy((uint8_t *)(uintptr_t)buf->addr + offset, src, len);
    return 0;
}
static int fake_read(wp_backend *b, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    (void)b, (void)err;
    memcpy(dst, (const uint8_t *)(uintptr_t)buf->addr + offset, len);
    return 0;
}
static void *fake_upload_open(wp_backend *b, size_t slot_bytes, int slots, void **host, wp_err *err) {
    fake_backend *f = (fake_backend *)b;
    if (!f->ring) {
        WP_FAIL(err, 500, "cuda_error", "", "no page-locked memory");
        return NULL;
    }
    fake_ring *r = calloc(1, sizeof *r);
    r->slots = slots;
    r->slot_bytes = slot_bytes;
    for (int i = 0; i < slots; i++) {
        r->host[i] = malloc(slot_bytes);
        memset(r->host[i], 0xcd, slot_bytes);
        host[i] = r->host[i];
    }
    f->rings_open++;
    f->rings_made++;
    return r;
}
static void fake_do_copy(fake_backend *f, fake_ring *r, int slot) {
    fake_copy *c = &r->copy[slot];
    if (!c->queued) return;
    memcpy((uint8_t *)(uintptr_t)c->buf->addr + c->offset, r->host[slot], c->len);
    f->copied += c->len;
    c->queued = false;
}
static int fake_upload_send(wp_backend *b, void *ring, int slot, wp_buf *buf, size_t offset, size_t len, wp_err *err) {
    fake_backend *f = (fake_backend *)b;
    fake_ring *r = ring;
    if (++f->sends == f->fail_send_at) return WP_FAIL(err, 500, "cuda_error", "", "the copy failed");
    if (r->copy[slot].queued) return WP_FAIL(err, 500, "internal", "", "slot %d sent twice without a wait", slot);
    if (len > r->slot_bytes || offset + len > buf->size)
        return WP_FAIL(err, 500, "internal", "", "copy of %zu at %zu is out of range", len, offset);
    r->copy[slot] = (fake_copy){.slot = slot, .buf = buf, .offset = offset, .len = len, .queued = true};
    return 0;
}
static int fake_upload_wait(wp_backend *b, void *ring, int slot, wp_err *err) {
    (void)err;
    fake_do_copy((fake_backend *)b, ring, slot);
    return 0;
}
static void fake_upload_close(wp_backend *b, void *ring) {
    fake_backend *f = (fake_backend *)b;
    fake_ring *r = ring;
    for (int i = 0; i < r->slots; i++) {
        fake_do_copy(f, r, i);
        free(r->host[i]);
    }
    free(r);
    f->rings_open--;
}

static const wp_backend_ops fake_ops = {
    .name = "fake",
    .buf_alloc = fake_alloc,
    .buf_free = fake_free,
    .buf_write = fake_write,
    .buf_read = fake_read,
    .upload_open = fake_upload_open,
    .upload_send = fake_upload_send,
    .upload_wait = fake_upload_wait,
    .upload_close = fake_upload_close,
};

/* ---- helpers ---- */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static uint8_t *pattern(size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(rnd() >> 24);
    return p;
}

/* Streams n bytes in random chunks (1 byte up to max_chunk) and checks every byte. */
static void stream_and_check(wp_backend *b, size_t n, size_t max_chunk, const char *want_mode) {
    wp_err err = {0};
    wp_buf *buf = wp_buf_alloc(b, n, &err);
    CHECKF(buf != NULL, "%s", err.msg);
    if (!buf) return;
    uint8_t *src = pattern(n), *back = malloc(n ? n : 1);
    wp_buf_stream *s = wp_buf_stream_open(buf, &err);
    CHECKF(s != NULL, "%s", err.msg);
    if (s) {
        CHECKF(!strcmp(wp_buf_stream_mode(s), want_mode), "%zu bytes: mode %s, want %s", n, wp_buf_stream_mode(s),
               want_mode);
        size_t at = 0;
        int rc = 0;
        while (at < n && rc == 0) {
            size_t k = 1 + (size_t)(rnd() % max_chunk);
            if (rnd() % 16 == 0) k = 0; /* empty writes happen */
            if (k > n - at) k = n - at;
            rc = wp_buf_stream_write(s, src + at, k, &err);
            at += k;
        }
        CHECKF(rc == 0, "write: %s", err.msg);
        CHECK(wp_buf_stream_written(s) == n);
        CHECKF(wp_buf_stream_end(s, &err) == 0, "end: %s", err.msg);
        CHECK(wp_buf_stream_end(s, &err) == 0); /* again: the same answer */
        CHECK(wp_buf_stream_wait_us(s) >= 0);
        CHECK(wp_buf_read(buf, 0, back, n, &err) == 0 && (n == 0 || !memcmp(back, src, n)));
        wp_buf_stream_free(s);
    }
    free(src);
    free(back);
    wp_buf_free(buf);
}

#define MIB (1u << 20)

static void test_emu(void) {
    T_CASE("emu: in place");
    wp_backend *emu = wp_backend_emu_open();
    stream_and_check(emu, 0, 1, "host");
    stream_and_check(emu, 1, 1, "host");
    stream_and_check(emu, 100003, 5000, "host");
    stream_and_check(emu, 3 * MIB + 7, 300000, "host");
    wp_backend_close(emu);
}

static void test_staged(void) {
    T_CASE("fake device, no ring: staged");
    fake_backend f = {.base.ops = &fake_ops};
    stream_and_check(&f.base, 0, 1, "staged");
    stream_and_check(&f.base, 4097, 100, "staged");
    stream_and_check(&f.base, 1 * MIB, 70000, "staged");
    f.writes = 0;
    stream_and_check(&f.base, 40 * MIB + 5, 1 * MIB, "staged"); /* the stage fills and is written, 3 times */
    CHECKF(f.writes == 3, "%d writes", f.writes);
    f.ring = true; /* below the ring's size threshold: still staged */
    stream_and_check(&f.base, 2 * MIB, 100000, "staged");
    CHECK(f.rings_made == 0);
}

static void test_ring(void) {
    T_CASE("fake device: ring");
    fake_backend f = {.base.ops = &fake_ops, .ring = true};
    stream_and_check(&f.base, 16 * MIB, 1 * MIB, "ring");
    stream_and_check(&f.base, 50 * MIB + 12345, 3 * MIB, "ring"); /* slots wrap around many times */
    stream_and_check(&f.base, 33 * MIB, 37, "ring");              /* tiny chunks */
    CHECK(f.rings_open == 0 && f.rings_made == 3);
    CHECK(f.copied == 16 * MIB + 50 * MIB + 12345 + 33 * MIB);
}

static void test_errors(void) {
    T_CASE("errors stick");
    fake_backend f = {.base.ops = &fake_ops, .ring = true, .fail_send_at = 3};
    wp_err err = {0};
    size_t n = 64 * MIB;
    wp_buf *buf = wp_buf_alloc(&f.base, n, &err);
    uint8_t *chunk = pattern(MIB);
    wp_buf_stream *s = wp_buf_stream_open(buf, &err);
    int rc = 0, i = 0;
    for (; i < 64 && rc == 0; i++) rc = wp_buf_stream_write(s, chunk, MIB, &err);
    CHECKF(rc < 0 && !strcmp(err.code, "cuda_error") && i == 24, "rc %d after %d MiB: %s", rc, i, err.msg);
    wp_err_clear(&err);
    CHECK(wp_buf_stream_write(s, chunk, 1, &err) < 0 && !strcmp(err.code, "cuda_error"));
    wp_err_clear(&err);
    CHECK(wp_buf_stream_end(s, &err) < 0 && !strcmp(err.code, "cuda_error"));
    wp_buf_stream_free(s);
    CHECK(f.rings_open == 0);

    T_CASE("past the end");
    s = wp_buf_stream_open(buf, &err);
    CHECK(wp_buf_stream_write(s, chunk, MIB, &err) == 0);
    wp_err_clear(&err);
    for (i = 1; i < 64; i++) wp_buf_stream_write(s, chunk, MIB, &err);
    CHECK(err.status == 0);
    CHECK(wp_buf_stream_write(s, chunk, 1, &err) < 0 && err.status == 400 && !strcmp(err.code, "out_of_range"));
    wp_buf_stream_free(s); /* no end: copies in flight are waited for, nothing leaks */
    CHECK(f.rings_open == 0);

    T_CASE("write after end");
    s = wp_buf_stream_open(buf, &err);
    CHECK(wp_buf_stream_end(s, &err) == 0);
    CHECK(wp_buf_stream_write(s, chunk, 1, &err) < 0 && err.status == 500);
    wp_buf_stream_free(s);
    wp_buf_stream_free(NULL);
    free(chunk);
    wp_buf_free(buf);
}

int main(void) {
    test_emu();
    test_staged();
    test_ring();
    test_errors();
    return t_done("buf_stream");
}
