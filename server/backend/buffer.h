/* buffer.h — memory that lives on a backend (wp_buf) and the generic kernel launch that works on it.
 * A wp_buf is bytes owned by one backend: device memory from cuMemAlloc on cuda, host memory on emu.
 * Callers move host bytes in and out at an offset, and hand the device address to kernels through
 * wp_backend_launch. Implemented by additive entries in backend_impl.h's ops table; a backend that
 * lacks them answers 501 "unsupported_backend".
 *
 * Ownership: one owner frees each wp_buf (wp_buf_free). A wp_buf is not reference counted and not
 * locked: whoever shares one between threads (the buffers registry, server/engine/buffers.c) holds it for
 * the length of each job. Reads and writes of distinct buffers may run from any thread; on cuda they
 * are serialized by the backend and complete before the call returns.
 *
 * Context loss: on cuda a sticky error resets the context, and every buffer allocated before the
 * reset is gone. Such a buffer stays a valid handle (free it as usual), but every other operation on
 * it fails with 410 "buffer_lost". */
#ifndef WP_BUFFER_H
#define WP_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "util/common.h"

typedef struct wp_buf wp_buf; /* opaque */

/* Allocates `bytes` (0 is allowed: a valid empty buffer) on backend b. Contents are undefined.
 * 507 "out_of_memory" when the device (or host, for emu) has no room. */
wp_buf *wp_buf_alloc(wp_backend *b, size_t bytes, wp_err *err);
void wp_buf_free(wp_buf *buf); /* NULL is fine */

/* Host <-> buffer copies; [offset, offset+len) must lie inside the buffer (400 "out_of_range").
 * Synchronous: when they return, the bytes have moved. */
int wp_buf_write(wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err);
int wp_buf_read(const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err);
/* Sets len bytes at offset to `byte` (cuMemsetD8 on cuda). */
int wp_buf_memset(wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err);
/* Buffer -> buffer on the same backend (device-to-device on cuda); ranges must not overlap. */
int wp_buf_copy(wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset, size_t len, wp_err *err);

/* Sequential writes while the bytes are still arriving (a request body, http.h's streaming hooks):
 * each wp_buf_stream_write appends at the next offset and may return before the bytes have reached
 * the buffer. On cuda a large buffer is fed through a ring of page-locked staging areas whose
 * asynchronous copies overlap the caller's next chunks; a small one is gathered and written once;
 * on emu the bytes land in the buffer's host memory at once. wp_buf_stream_end waits until every byte
 * written is in the buffer (it may be called again: it returns the same answer); wp_buf_stream_free
 * waits for copies in flight and releases the staging (call it whether or not end was called). The
 * first error sticks: later writes and end return it. 400 "out_of_range" past the buffer's end. */
typedef struct wp_buf_stream wp_buf_stream;
wp_buf_stream *wp_buf_stream_open(wp_buf *buf, wp_err *err);
int wp_buf_stream_write(wp_buf_stream *s, const void *src, size_t len, wp_err *err);
int wp_buf_stream_end(wp_buf_stream *s, wp_err *err);
void wp_buf_stream_free(wp_buf_stream *s);
/* Bytes written so far; microseconds spent waiting for copies (staging full, or end). */
size_t wp_buf_stream_written(const wp_buf_stream *s);
double wp_buf_stream_wait_us(const wp_buf_stream *s);
/* How it moves bytes: "host" (in place), "ring" (page-locked ring, asynchronous) or "staged". */
const char *wp_buf_stream_mode(const wp_buf_stream *s);

/* Host memory that copies may DMA from and to (a client's shared-memory region, engine/regions.c):
 * page-locked with the driver on cuda (cuMemHostRegister, portable: every context of the process).
 * Returns 0 when registered, 1 when the backend registers nothing (emu) or the driver declined (the
 * copies then go through the driver's staging), -1 with err. Unregister what was registered, once. */
int wp_backend_host_register(wp_backend *b, void *p, size_t len, wp_err *err);
void wp_backend_host_unregister(wp_backend *b, void *p);
/* A buffer over bytes [offset, offset + bytes) of another process's device allocation, named by its
 * 64-byte CUDA IPC handle (cudaIpcMemHandle_t): nothing is copied, and wp_buf_free closes the mapping
 * instead of freeing memory. A handle is opened once per device and shared by every buffer over it.
 * The exporting process must keep the allocation alive while a buffer uses it. 400 "needs_gpu" on
 * emu, 400 "bad_handle" (the driver refuses it), 400 "bad_device" (the allocation is on another GPU),
 * 400 "out_of_range" (past the allocation). */
wp_buf *wp_buf_open_ipc(wp_backend *b, const unsigned char handle[64], size_t offset, size_t bytes, wp_err *err);
bool wp_buf_is_ipc(const wp_buf *buf);

/* Sharded buffers, split over devices: `count` elements of esize bytes in contiguous parts, one on each
 * of devs[0..n) in order (the first count % n parts hold one more element; a part may be empty).
 * Reads, writes, memsets and streams of the whole address range go to the parts they touch; copies
 * and kernel launches take the parts (wp_buf_shard), never the whole: its wp_buf_addr is 0. */
#define WP_BUF_SHARDS_MAX 16
wp_buf *wp_buf_alloc_sharded(wp_backend *const *devs, int n, size_t esize, uint64_t count, wp_err *err);
/* An empty or sharded buffer like `like` (same devices, and the same split when count and esize let
 * it): count elements of esize. A plain `like` gives a plain buffer on its backend. */
wp_buf *wp_buf_alloc_like(const wp_buf *like, size_t esize, uint64_t count, wp_err *err);
int wp_buf_shards(const wp_buf *buf); /* parts; 0 for a plain buffer */
/* Part i, and where its bytes start in the whole. */
wp_buf *wp_buf_shard(const wp_buf *buf, int i, size_t *offset);

size_t wp_buf_size(const wp_buf *buf);
wp_backend *wp_buf_backend(const wp_buf *buf);
/* What a kernel parameter holds for this buffer: the CUdeviceptr on cuda, the host address on emu. */
uint64_t wp_buf_addr(const wp_buf *buf);
/* Host view of the bytes: non-NULL on emu (the CPU references work in place), NULL on cuda. */
void *wp_buf_host(wp_buf *buf);
const void *wp_buf_host_const(const wp_buf *buf);

/* One kernel launch. params is cuLaunchKernel's kernelParams: one pointer per kernel argument, to
 * storage that lives until wp_backend_launch returns (pass wp_buf_addr values as uint64_t). */
typedef struct {
    unsigned grid[3], block[3]; /* 0 reads as 1 */
    unsigned smem_bytes;        /* dynamic shared memory */
    void **params;
    unsigned flags; /* WP_LAUNCH_* */
} wp_launch;

/* The kernel touches no memory before griddepcontrol.wait (templates/wp_common.cuh wp_grid_entry), so
 * cuda may launch it as a programmatic dependent of the kernel before it in the stream (sm_90+): its
 * blocks are scheduled while that one finishes, and no launch gap is left between the two. */
#define WP_LAUNCH_OVERLAP 1u
/* On the first launch of a set: capture the set as one CUDA graph, replay it once to warm up and time
 * one more replay (benchmarks: launch gaps without the host's cost of submitting each launch). */
#define WP_LAUNCH_GRAPH 2u

/* Runs n launches in order on the backend's stream and waits for them. *kernel_us (if non-NULL) gets
 * the time between an event recorded before the first launch and one after the last (WP_LAUNCH_GRAPH:
 * before and after the timed replay). fn[i] comes from wp_app_kernel_get for launch i (one cache
 * entry per kernel). Only cuda runs kernels: emu
 * answers 501 "unsupported_backend" (the emulator runs the C references in kernels/ instead). A
 * CUDA error fails with 500 "cuda_error" and the backend recovers as for wp_backend_run_warp. */
int wp_backend_launch(wp_backend *b, void *const *fn, const wp_launch *launches, int n, double *kernel_us, wp_err *err);

/* wp_backend_launch, then wp_buf_read(buf, offset, dst, len) after the last launch: on cuda both on
 * one stream and waited for once (a job's result slot comes back without a second round trip). */
int wp_backend_launch_read(wp_backend *b, void *const *fn, const wp_launch *launches, int n, double *kernel_us,
                           const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err);

/* Copies around launches, in one wait (wp_backend_launch_io): a write into buf before the first launch
 * and a read of buf after the last; either may be absent (its len 0). */
typedef struct {
    wp_buf *buf;
    size_t write_offset, write_len;
    const void *src; /* read when the call is made: the caller may reuse it once the call returns */
    size_t read_offset, read_len;
    void *dst;
    /* cuda: no timing events around the steps (on an H100 they add ~10 µs to a small job's round
     * trip): the timing comes back untimed, with device_us (wp_run_timing) */
    bool untimed;
    /* An image built for where it lands, in place of src (NULL): the backend calls fill(fill_ctx, base,
     * image) to write the write_len bytes that go to device address base (write_offset must be 0)
     * into image, before it queues the launches (fill may set their parameters). The launches use
     * buf's first image_len bytes at most through base (the write, the read and whatever lies between
     * or after; the write and the read lie within them: else 500 "internal").
     * zero_copy_ok: they use plain loads and stores there (no atomics, no block waiting on another),
     * so an untimed run of a small image may go zero-copy (wp_backend_cuda_set_zero_copy): base is
     * then page-locked host memory the kernels reach over the bus, and neither copy is queued. */
    void (*fill)(void *fill_ctx, uint64_t base, void *image);
    void *fill_ctx;
    size_t image_len;
    bool zero_copy_ok;
    /* cuda: how the caller waits for the device when untimed: WP_WAIT_DEFAULT (--gpu-wait), or for the
     * batcher's runners (--runner-wait) spin, yield (poll, giving the CPU to others between polls) or
     * sleep (the driver's blocking wait) — the HTTP threads may need the cores more than a batch needs
     * the wait's few µs */
    int wait;
    /* cuda: called once, on the calling thread, once the copies and launches are queued and before the
     * wait: the caller's own work that needs nothing of the run (a batch's warp jobs' emulated runs).
     * A backend that does not call it (emu) leaves it to the caller, which tells by its own record. */
    void (*meanwhile)(void *ctx);
    void *meanwhile_ctx;
} wp_launch_io;
enum { WP_WAIT_DEFAULT = 0, WP_WAIT_SPIN, WP_WAIT_YIELD, WP_WAIT_SLEEP }; /* wp_launch_io.wait */

/* wp_buf_write of io's write, wp_backend_launch, then wp_buf_read of io's read: on cuda all three
 * queued on one stream and waited for once (a small batch: one round trip, not three). t (may be
 * NULL) gets the device time of each step from events (upload_us 0 without a write, download_us 0
 * without a read); on a backend without the fused call, the steps are the three calls. */
int wp_backend_launch_io(wp_backend *b, void *const *fn, const wp_launch *launches, int n, const wp_launch_io *io,
                         wp_run_timing *t, wp_err *err);

/* Generation of the backend's context (bumped by each reset on cuda; always 0 on emu). */
unsigned wp_backend_generation(wp_backend *b);

#endif
