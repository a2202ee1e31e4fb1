/* mock_launch_io.c — wp_backend_launch_io with an image built for where it lands (wp_launch_io.fill), on
 * the cuda backend over the stand-in driver (tests/mockcuda: copies are real, kernels do nothing, so
 * what comes back is what was written). Run by tests/api/mockcuda.sh with the mock on LD_LIBRARY_PATH
 * (not named api_*: api.sh runs those against an emu daemon). Checks which way each run goes and that
 * every byte lands where it should:
 *   - copied (timed; untimed but not zero_copy_ok; an image over 64 KiB; --zero-copy off): fill gets
 *     the buffer's address, the buffer holds the image afterwards, the read comes from it;
 *   - zero-copy (untimed, zero_copy_ok, a small image): fill gets another address (the staging's),
 *     the buffer is untouched, the read comes from the image itself, warpd_device_zero_copy_runs_total
 *     (wp_device_info) counts it;
 *   - an image past the staging (over 4 MiB) is built into memory of its own and copied;
 *   - no launch at all (backend.c's unfused path) still builds and writes the image;
 *   - an image at an offset, or a read past it, is refused (500 internal).
 * Prints "launch_io: N passed, N failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "compile/jit.h"
#include "tests/unit/t.h"

typedef struct {
    int calls;
    uint64_t base;
    unsigned seed;
    size_t len;
    uint64_t param; /* what a launch's parameter would be: set by fill, as the batch runs set theirs */
    int meanwhile_calls, meanwhile_after_fill; /* wp_launch_io.meanwhile: calls, and those after fill */
} image_ctx;

static unsigned char pattern(unsigned seed, size_t i) { return (unsigned char)(i * 7u + seed * 13u + (i >> 8)); }

static void fill(void *ctx, uint64_t base, void *image) {
    image_ctx *c = ctx;
    c->calls++;
    c->base = base;
    c->param = base + 64;
    unsigned char *p = image;
    for (size_t i = 0; i < c->len; i++) p[i] = pattern(c->seed, i);
}

static bool holds(const unsigned char *p, size_t n, unsigned seed, size_t from) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(seed, from + i)) return false;
    return true;
}

static uint64_t zero_copy_runs(wp_backend *be) {
    wp_device_info di;
    wp_backend_info(be, &di);
    return di.zero_copy_runs;
}

typedef struct {
    size_t write_len, image_len, read_offset, read_len;
    bool untimed, zero_copy_ok;
    int launches;
} run_shape;

/* wp_launch_io.meanwhile: counted, and whether the image was built by then (the run is queued). */
static void meanwhile(void *ctx) {
    image_ctx *c = ctx;
    c->meanwhile_calls++;
    c->meanwhile_after_fill += c->calls == 1;
}

/* One run of shape s with a fresh seed: 0 and the context, or -1. */
static int run(wp_backend *be, void *fn, wp_buf *buf, const run_shape *s, unsigned seed, image_ctx *c,
               unsigned char *dst, wp_run_timing *t, wp_err *err) {
    *c = (image_ctx){.seed = seed, .len = s->write_len};
    void *params[] = {&c->param};
    wp_launch launch = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .params = params};
    void *fns[] = {fn};
    wp_launch_io io = {.buf = buf,
                       .write_len = s->write_len,
                       .read_offset = s->read_offset,
                       .read_len = s->read_len,
                       .dst = dst,
                       .untimed = s->untimed,
                       .fill = fill,
                       .fill_ctx = c,
                       .image_len = s->image_len,
                       .zero_copy_ok = s->zero_copy_ok,
                       .meanwhile = meanwhile,
                       .meanwhile_ctx = c};
    return wp_backend_launch_io(be, fns, &launch, s->launches, &io, t, err);
}

/* Checks one run: zero_copy says which way it must have gone. */
static void check_run(wp_backend *be, void *fn, wp_buf *buf, const char *what, const run_shape *s, bool zero_copy,
                      unsigned seed) {
    T_CASE(what);
    static unsigned char before[64 << 10], after[64 << 10];
    const size_t probe = s->write_len < sizeof before ? s->write_len : sizeof before;
    wp_err err = {0};
    CHECKF(wp_buf_read(buf, 0, before, probe, &err) == 0, "%s", err.msg);
    unsigned char *dst = calloc(1, s->read_len ? s->read_len : 1);
    image_ctx c;
    wp_run_timing t;
    const uint64_t z0 = zero_copy_runs(be);
    int rc = run(be, fn, buf, s, seed, &c, dst, &t, &err);
    CHECKF(rc == 0, "%s: %s", what, err.msg);
    CHECKF(c.calls == 1, "fill called %d times", c.calls);
    /* the backend's own launch (cuda) calls meanwhile once, after the image; backend.c's path with no
     * launch leaves it to the caller */
    const int want_meanwhile = s->launches > 0 ? 1 : 0;
    CHECKF(c.meanwhile_calls == want_meanwhile && c.meanwhile_after_fill == want_meanwhile,
           "meanwhile called %d times (%d after the image), want %d", c.meanwhile_calls, c.meanwhile_after_fill,
           want_meanwhile);
    CHECKF((c.base == wp_buf_addr(buf)) == !zero_copy, "fill's base %#llx, the buffer's %#llx",
           (unsigned long long)c.base, (unsigned long long)wp_buf_addr(buf));
    CHECKF(zero_copy_runs(be) - z0 == (zero_copy ? 1u : 0u), "zero-copy runs %llu -> %llu", (unsigned long long)z0,
           (unsigned long long)zero_copy_runs(be));
    CHECKF(holds(dst, s->read_len, seed, s->read_offset), "the read is not the image's bytes at %zu", s->read_offset);
    CHECKF(wp_buf_read(buf, 0, after, probe, &err) == 0, "%s", err.msg);
    if (zero_copy)
        CHECKF(!memcmp(before, after, probe), "a zero-copy run wrote the buffer");
    else
        CHECKF(holds(after, probe, seed, 0), "the buffer does not hold the image");
    CHECKF(t.untimed == s->untimed, "timing: untimed %d, asked %d", t.untimed, s->untimed);
    free(dst);
}

int main(void) {
    wp_err err = {0};
    wp_backend *be = wp_backend_cuda_open(0, &err);
    T_CASE("the cuda backend opens on the stand-in driver");
    CHECKF(be != NULL, "%s", err.msg);
    if (!be) return t_done("launch_io");
    wp_artifact a = {.cubin = (uint8_t *)"cubin", .cubin_len = 5, .lowered = "k"};
    void *fn = NULL;
    CHECKF(wp_backend_load(be, &a, &fn, &err) == 0 && fn, "%s", err.msg);
    wp_buf *buf = wp_buf_alloc(be, 6u << 20, &err);
    CHECKF(buf != NULL, "%s", err.msg);
    if (!buf || !fn) {
        wp_backend_close(be);
        return t_done("launch_io");
    }
    unsigned seed = 1;
    const run_shape small = {.write_len = 3000,
                             .image_len = 4096,
                             .read_offset = 1024,
                             .read_len = 512,
                             .untimed = true,
                             .zero_copy_ok = true,
                             .launches = 1};
    run_shape s = small;
    s.untimed = false;
    check_run(be, fn, buf, "timed: copied", &s, false, seed++);
    check_run(be, fn, buf, "untimed, zero_copy_ok, 4 KiB: zero-copy", &small, true, seed++);
    check_run(be, fn, buf, "again on the same stream: zero-copy", &small, true, seed++);
    s = small;
    s.zero_copy_ok = false;
    check_run(be, fn, buf, "untimed, not zero_copy_ok: copied", &s, false, seed++);
    s = small;
    s.write_len = 60000, s.image_len = (64u << 10) + 1, s.read_offset = 50000, s.read_len = 4000;
    check_run(be, fn, buf, "an image over 64 KiB: copied", &s, false, seed++);
    s = small;
    s.image_len = 64u << 10;
    check_run(be, fn, buf, "an image of exactly 64 KiB: zero-copy", &s, true, seed++);
    s = small;
    s.write_len = s.image_len = (5u << 20) + 3, s.read_offset = 4u << 20, s.read_len = 10000;
    check_run(be, fn, buf, "an image over the 4 MiB staging: its own memory, copied", &s, false, seed++);
    s = small;
    s.launches = 0;
    check_run(be, fn, buf, "no launch: the image is still built and written", &s, false, seed++);
    wp_backend_cuda_set_zero_copy(be, false);
    check_run(be, fn, buf, "--zero-copy off: copied", &small, false, seed++);
    wp_backend_cuda_set_zero_copy(be, true);
    check_run(be, fn, buf, "on again: zero-copy", &small, true, seed++);

    T_CASE("an image at an offset is refused");
    {
        image_ctx c = {.seed = seed, .len = 100};
        unsigned char dst[16];
        void *params[] = {&c.param};
        wp_launch launch = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .params = params};
        void *fns[] = {fn};
        wp_launch_io io = {.buf = buf,
                           .write_offset = 256,
                           .write_len = 100,
                           .read_len = 16,
                           .dst = dst,
                           .untimed = true,
                           .fill = fill,
                           .fill_ctx = &c,
                           .image_len = 512,
                           .zero_copy_ok = true};
        wp_run_timing t;
        wp_err e = {0};
        CHECKF(wp_backend_launch_io(be, fns, &launch, 1, &io, &t, &e) == -1 && e.status == 500 && c.calls == 0,
               "rc status %d, fill calls %d", e.status, c.calls);
    }
    T_CASE("a read past the image is refused");
    {
        wp_run_timing t;
        image_ctx c;
        unsigned char dst[600];
        run_shape past = small;
        past.read_offset = past.image_len - 100; /* 512 bytes from 100 before its end */
        wp_err e = {0};
        CHECKF(run(be, fn, buf, &past, seed, &c, dst, &t, &e) == -1 && e.status == 500 && c.calls == 0,
               "status %d (%s), fill calls %d", e.status, e.msg, c.calls);
    }
    T_CASE("an image longer than the buffer is refused");
    {
        wp_run_timing t;
        image_ctx c;
        unsigned char dst[16];
        run_shape big = small;
        big.image_len = (6u << 20) + 1;
        wp_err e = {0};
        CHECKF(run(be, fn, buf, &big, seed, &c, dst, &t, &e) == -1 && e.status == 400 && c.calls == 0,
               "status %d (%s), fill calls %d", e.status, e.msg, c.calls);
    }
    wp_buf_free(buf);
    wp_backend_unload(be, fn);
    wp_backend_close(be);
    return t_done("launch_io");
}
