/* test_gpu_stream.c — wp_buf_stream (buffer.h) on the cuda backend: a request body's bytes written into
 * device memory while they arrive. Large buffers go through the page-locked ring (asynchronous copies
 * overlapping the writes), small ones are staged; both read back bit for bit after random chunk
 * sizes, several streams one after another (the ring is reused), two at once, a stream freed without
 * its end, and the throughput of 1 GiB in 256 KiB chunks (what a large HTTP upload looks like) against
 * one pageable wp_buf_write of the same bytes. Without a CUDA device it says SKIPPED and passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/t.h"
#include "backend/backend.h"
#include "backend/buffer.h"

#define MIB (1ull << 20)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static void fill(uint8_t *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = seed ^ (i * 0x9E3779B97F4A7C15ull);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* Streams n bytes in random chunks up to max_chunk; checks the mode and every byte. */
static void round_trip(wp_backend *cuda, size_t n, size_t max_chunk, const char *want_mode) {
    wp_err err = {0};
    uint8_t *src = malloc(n), *back = malloc(n);
    fill(src, n, rnd());
    wp_buf *b = wp_buf_alloc(cuda, n, &err);
    wp_buf_stream *s = b ? wp_buf_stream_open(b, &err) : NULL;
    CHECKF(s != NULL, "%zu bytes: %s", n, err.msg);
    if (s) {
        CHECKF(!strcmp(wp_buf_stream_mode(s), want_mode), "%zu bytes: mode %s", n, wp_buf_stream_mode(s));
        int rc = 0;
        for (size_t at = 0; at < n && rc == 0;) {
            size_t k = 1 + (size_t)(rnd() % max_chunk);
            if (k > n - at) k = n - at;
            rc = wp_buf_stream_write(s, src + at, k, &err);
            at += k;
        }
        CHECKF(rc == 0 && wp_buf_stream_end(s, &err) == 0, "%zu bytes: %s", n, err.msg);
        CHECK(wp_buf_read(b, 0, back, n, &err) == 0 && !memcmp(back, src, n));
        wp_buf_stream_free(s);
    }
    wp_buf_free(b);
    free(src);
    free(back);
}

int main(void) {
    wp_err err = {0};
    wp_backend *cuda = wp_backend_cuda_open(0, &err);
    if (!cuda) {
        printf("SKIPPED: no CUDA device (%s)\n", err.msg);
        return t_done("gpu_stream");
    }
    T_CASE("staged (small) and ring (large), bit for bit");
    round_trip(cuda, 1, 1, "staged");
    round_trip(cuda, 3 * MIB + 5, 200000, "staged");
    round_trip(cuda, 16 * MIB, 1 * MIB, "ring");
    round_trip(cuda, 100 * MIB + 3, 300000, "ring"); /* the ring wraps many times */
    round_trip(cuda, 40 * MIB, 4096, "ring");        /* small chunks */
    round_trip(cuda, 24 * MIB, 9 * MIB, "ring");     /* chunks larger than a slot */

    T_CASE("two streams at once, and one freed without its end");
    size_t n = 48 * MIB;
    uint8_t *a = malloc(n), *c = malloc(n), *back = malloc(n);
    fill(a, n, 1), fill(c, n, 2);
    wp_buf *ba = wp_buf_alloc(cuda, n, &err), *bc = wp_buf_alloc(cuda, n, &err);
    wp_buf_stream *sa = wp_buf_stream_open(ba, &err), *sc = wp_buf_stream_open(bc, &err);
    CHECK(sa && sc);
    for (size_t at = 0; sa && sc && at < n; at += MIB) {
        CHECK(wp_buf_stream_write(sa, a + at, MIB, &err) == 0);
        CHECK(wp_buf_stream_write(sc, c + at, MIB, &err) == 0);
    }
    CHECK(sa && wp_buf_stream_end(sa, &err) == 0 && wp_buf_read(ba, 0, back, n, &err) == 0 && !memcmp(back, a, n));
    wp_buf_stream_free(sa);
    wp_buf_stream_free(sc); /* no end: waits for its copies, then gives the ring back */
    wp_buf_free(ba);
    wp_buf_free(bc);

    T_CASE("past the end");
    wp_buf *small = wp_buf_alloc(cuda, 20 * MIB, &err);
    wp_buf_stream *s = wp_buf_stream_open(small, &err);
    CHECK(s && wp_buf_stream_write(s, a, 20 * MIB, &err) == 0);
    CHECK(s && wp_buf_stream_write(s, a, 1, &err) < 0 && err.status == 400);
    wp_buf_stream_free(s);
    wp_buf_free(small);
    free(a), free(c), free(back);

    T_CASE("1 GiB in 256 KiB chunks: ring against one pageable write");
    n = 1024 * MIB;
    uint8_t *big = malloc(n);
    fill(big, n, 3);
    wp_buf *bb = wp_buf_alloc(cuda, n, &err);
    if (bb) {
        uint64_t t0 = wp_now_ns();
        CHECK(wp_buf_write(bb, 0, big, n, &err) == 0);
        double pageable_ms = wp_ms_since(t0);
        t0 = wp_now_ns();
        s = wp_buf_stream_open(bb, &err);
        for (size_t at = 0; s && at < n; at += 256 << 10) CHECK(wp_buf_stream_write(s, big + at, 256 << 10, &err) == 0);
        CHECK(s && wp_buf_stream_end(s, &err) == 0);
        double ring_ms = wp_ms_since(t0);
        printf("1 GiB: one pageable wp_buf_write %.1f ms (%.2f GB/s); streamed in 256 KiB chunks (%s) %.1f ms "
               "(%.2f GB/s), %.1f ms of it waiting\n",
               pageable_ms, n / pageable_ms / 1e6, s ? wp_buf_stream_mode(s) : "?", ring_ms, n / ring_ms / 1e6,
               s ? wp_buf_stream_wait_us(s) / 1e3 : 0);
        wp_buf_stream_free(s);
        uint8_t *tail = malloc(MIB);
        CHECK(wp_buf_read(bb, n - MIB, tail, MIB, &err) == 0 && !memcmp(tail, big + n - MIB, MIB));
        free(tail);
    }
    wp_buf_free(bb);
    free(big);
    wp_backend_close(cuda);
    return t_done("gpu_stream");
}
