/* backend_emu.c — the CPU emulator backend: runs a warp primitive through its family's emulate
 * function (kernels/), the oracle GPU results are checked against. Loads nothing; keeps no state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_impl.h"

static void emu_close(wp_backend *b) { free(b); }

/* Test hook: lost only through WARPD_EMU_FAIL_DEVICE (read at open; see wp_backend_emu_open_device). */
static bool emu_usable(wp_backend *b, char *why, size_t n) {
    if (!b->lost[0]) return true;
    if (n) snprintf(why, n, "%s", b->lost);
    return false;
}

static void emu_info(wp_backend *b, wp_device_info *out) {
    (void)b;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES);
    long avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    memset(out, 0, sizeof *out);
    out->backend = "emu";
    snprintf(out->name, sizeof out->name, "CPU emulator");
    out->sms = cpus > 0 ? (int)cpus : 1;
    if (pages > 0 && page > 0) out->mem_total = (uint64_t)pages * (uint64_t)page;
    if (avail > 0 && page > 0) out->mem_free = (uint64_t)avail * (uint64_t)page;
}

/* Nothing to load: the emulator runs the family's C reference, so the "function" is NULL. */
static int emu_load(wp_backend *b, const wp_artifact *a, void **fn, wp_err *err) {
    (void)b, (void)a, (void)err;
    *fn = NULL;
    return 0;
}
static void emu_unload(wp_backend *b, void *fn) { (void)b, (void)fn; }

static int emu_run_warp(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                        wp_run_timing *t, wp_err *err) {
    (void)b, (void)fn;
    const wp_family *f = s->family;
    if (!f || !f->emulate || !(f->backends & WP_BACKEND_EMU))
        return WP_FAIL(err, 400, "unsupported_backend", "backend", "family %s does not run on the emulator",
                       f ? f->name : "(none)");
    uint64_t t0 = wp_now_ns();
    f->emulate(s, job, res);
    if (t) *t = (wp_run_timing){.upload_us = 0, .kernel_us = wp_us_since(t0), .download_us = 0};
    return 0;
}

/* Buffers are plain host memory; the CPU references read and write them in place. */
static int emu_buf_alloc(wp_backend *b, wp_buf *buf, wp_err *err) {
    (void)b;
    /* 64-byte aligned so the references may treat it like device memory (16-byte vector loads). */
    size_t rounded = (buf->size + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded);
    if (!p) return WP_FAIL(err, 507, "out_of_memory", "", "no host memory for %zu bytes", buf->size);
    buf->addr = (uint64_t)(uintptr_t)p;
    return 0;
}
static void emu_buf_free(wp_backend *b, wp_buf *buf) {
    (void)b;
    free((void *)(uintptr_t)buf->addr);
}
static int emu_buf_write(wp_backend *b, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
    (void)b, (void)err;
    memcpy((unsigned char *)(uintptr_t)buf->addr + offset, src, len);
    return 0;
}
static int emu_buf_read(wp_backend *b, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
    (void)b, (void)err;
    memcpy(dst, (const unsigned char *)(uintptr_t)buf->addr + offset, len);
    return 0;
}
static int emu_buf_memset(wp_backend *b, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    (void)b, (void)err;
    memset((unsigned char *)(uintptr_t)buf->addr + offset, byte, len);
    return 0;
}
static int emu_buf_copy(wp_backend *b, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len,
                        wp_err *err) {
    (void)b, (void)err;
    memcpy((unsigned char *)(uintptr_t)dst->addr + dst_offset, (const unsigned char *)(uintptr_t)src->addr + src_offset,
           len);
    return 0;
}

static const wp_backend_ops emu_ops = {
    .name = "emu",
    .host_buffers = true,
    .close = emu_close,
    .info = emu_info,
    .usable = emu_usable,
    .load = emu_load,
    .unload = emu_unload,
    .run_warp = emu_run_warp,
    .buf_alloc = emu_buf_alloc,
    .buf_free = emu_buf_free,
    .buf_write = emu_buf_write,
    .buf_read = emu_buf_read,
    .buf_memset = emu_buf_memset,
    .buf_copy = emu_buf_copy,
    /* no .launch: the emulator runs kernels/ references, not cubins */
};

wp_backend *wp_backend_emu_open(void) { return wp_backend_emu_open_device(0); }

wp_backend *wp_backend_emu_open_device(int ordinal) {
    wp_backend *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->ops = &emu_ops;
    b->ordinal = ordinal;
    b->index = -1; /* main.c places it */
    emu_info(b, &b->facts);
    const char *fail = getenv("WARPD_EMU_FAIL_DEVICE"); /* test only: a device lost from the start */
    char *end = NULL;
    long which = fail && *fail ? strtol(fail, &end, 10) : -1;
    if (end && !*end && which == ordinal)
        snprintf(b->lost, sizeof b->lost, "emulated device %d was marked lost (WARPD_EMU_FAIL_DEVICE, a test hook)",
                 ordinal);
    return b;
}
