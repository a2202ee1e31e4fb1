/* backend_impl.h — the table each backend fills in; only backend*.c include this. */
#ifndef WP_BACKEND_IMPL_H
#define WP_BACKEND_IMPL_H

#include <stdatomic.h>

#include "backend.h"
#include "buffer.h"

/* A buffer as backends see it (buffer.h keeps it opaque to everyone else). */
struct wp_buf {
    wp_backend *backend;
    size_t size;
    uint64_t addr;       /* CUdeviceptr on cuda, host address on emu; 0 when size is 0 */
    unsigned generation; /* the backend's context generation at alloc */
    /* A sharded buffer (buffer.h): no bytes of its own; n_shards contiguous parts, one per device,
     * part i holding bytes [shard_offset[i], shard_offset[i] + shard[i]->size). backend: part 0's. */
    int n_shards;
    struct wp_buf **shard;
    size_t *shard_offset;
    void *ipc; /* a CUDA IPC mapping (ops->ipc_open): the bytes are another process's, closed not freed */
};

typedef struct wp_backend_ops {
    const char *name;
    bool host_buffers; /* buffer addresses are host pointers (emu): wp_buf_host gives them out */
    void (*close)(wp_backend *b);
    void (*info)(wp_backend *b, wp_device_info *out);
    /* Optional: false once the device is lost (a sticky error the driver cannot clear in-process). */
    bool (*usable)(wp_backend *b, char *why, size_t n);
    int (*load)(wp_backend *b, const wp_artifact *a, void **fn, wp_err *err);
    void (*unload)(wp_backend *b, void *fn);
    int (*run_warp)(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                    wp_run_timing *t, wp_err *err);
    /* Buffers and launches (buffer.h). backend.c checks ranges and zero sizes before calling; any
     * entry may be NULL (501 "unsupported_backend"). buf_alloc fills buf->addr. */
    int (*buf_alloc)(wp_backend *b, wp_buf *buf, wp_err *err);
    void (*buf_free)(wp_backend *b, wp_buf *buf);
    int (*buf_write)(wp_backend *b, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err);
    int (*buf_read)(wp_backend *b, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err);
    int (*buf_memset)(wp_backend *b, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err);
    int (*buf_copy)(wp_backend *b, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len,
                    wp_err *err);
    int (*launch)(wp_backend *b, void *const *fn, const wp_launch *launches, int n, double *kernel_us, wp_err *err);
    /* Optional: io's write, the launches, then io's read, in one wait (NULL: the separate calls).
     * backend.c has checked the ranges and the buffer's backend; never a WP_LAUNCH_GRAPH launch with a
     * write. t: each step's device time (kernel_us alone when only that is wanted). */
    int (*launch_io)(wp_backend *b, void *const *fn, const wp_launch *launches, int n, const wp_launch_io *io,
                     wp_run_timing *t, wp_err *err);
    unsigned (*generation)(wp_backend *b);
    bool (*lane_free)(wp_backend *b); /* optional: NULL answers true */
    /* Optional, for wp_buf_stream (buffer.h): a ring of `slots` page-locked host areas of slot_bytes
     * each (their addresses into host[]), on a copy stream of its own. upload_send queues the copy of
     * len bytes from slot `slot` to buf+offset and returns; upload_wait waits for that slot's last
     * copy; upload_close waits for all of them and gives the ring back (the backend may keep it for
     * the next upload). NULL from upload_open: no ring (the caller stages through buf_write). */
    void *(*upload_open)(wp_backend *b, size_t slot_bytes, int slots, void **host, wp_err *err);
    int (*upload_send)(wp_backend *b, void *ring, int slot, wp_buf *buf, size_t offset, size_t len, wp_err *err);
    int (*upload_wait)(wp_backend *b, void *ring, int slot, wp_err *err);
    void (*upload_close)(wp_backend *b, void *ring);
    /* Optional (buffer.h): host pages copies may DMA from and to (NULL: nothing to register). */
    int (*host_register)(wp_backend *b, void *p, size_t len, wp_err *err);
    void (*host_unregister)(wp_backend *b, void *p);
    /* Optional: another process's device allocation through its IPC handle: *base and *bytes of the
     * whole allocation, *ipc the mapping ipc_close gives back (NULL ipc_open: 400 needs_gpu). */
    int (*ipc_open)(wp_backend *b, const unsigned char handle[64], uint64_t *base, size_t *bytes, void **ipc,
                    wp_err *err);
    void (*ipc_close)(wp_backend *b, void *ipc);
} wp_backend_ops;

/* Every backend struct starts with this. */
struct wp_backend {
    const wp_backend_ops *ops;
    wp_device_info facts; /* what does not change (name, sm, SMs, total memory), set at open */
    int ordinal;          /* the device's number (cuda: the driver's; emu: --emu-devices' index) */
    int index;            /* its place in the served list: the "device" number of the API (placement.h) */
    /* jobs running on it now (wp_backend_job_enter/leave): placement's load. Every job writes it, from
     * every thread: it has a cache line of its own, so that reading the fields around it misses nothing. */
    char running_apart[64];
    atomic_int running;
    char running_apart_too[64];
    char lost[160]; /* emu test hook (WARPD_EMU_FAIL_DEVICE): "" or why the device is lost */
};

#endif
