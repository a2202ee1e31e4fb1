/* backend_cuda.c — the GPU backend's ops table (backend_impl.h) for one CUDA device: kernel loads,
 * warp runs, buffers, launches and upload rings. Each operation passes the device's gate and runs
 * on a lane of its stream pool (cuda_impl.h: no lock is held while the device works, so as many
 * operations run at once as there are lanes); the driver table is cuda_driver.c, the context and
 * its recovery cuda_device.c, the lanes cuda_streams.c.
 *
 * A loaded function remembers the generation it was loaded in and keeps its own copy of the cubin,
 * so a function the cache still holds is reloaded lazily on its next run after a context reset.
 * Small device buffers (up to 1 MiB) are kept in per-size pools when freed: cuMemFree waits for the
 * whole device, which would serialize every small job behind the others.
 * Owns: cuda_backend (with cuda_device.c and cuda_streams.c), cuda_fn, upload rings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "warp_grid.h"

#define WP_STAGE_MAX (4u << 20) /* copies up to this size go through the lane's page-locked staging */
#define WP_UPLOAD_IDLE_MAX 2    /* upload rings kept for the next upload (page-locking is slow) */
#define WP_MEMPOOL_MIN 256
#define WP_MEMPOOL_KEEP 64               /* freed buffers kept per size class */
#define WP_MEMPOOL_BYTES_MAX (64u << 20) /* and at most this much memory in all classes */

/* A loaded kernel. Keeps its own cubin so it can be reloaded after a context reset. */
typedef struct {
    CUmodule module;
    CUfunction function;
    unsigned generation;
    unsigned char *cubin;
    size_t cubin_len;
    char *lowered;
} cuda_fn;

static void cuda_close(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_device_stop(b);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    pthread_cond_destroy(&b->lane_cv);
    pthread_mutex_destroy(&b->load_mu);
    wp_cu_close(b->lib);
    free(b);
}

static void cuda_info(wp_backend *base, wp_device_info *out) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    size_t free_bytes = 0, total_bytes = 0;
    bool got = false;
    if (cuda_op_begin(b, false, &op, NULL) == 0) {
        got = b->cu.mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS;
        cuda_op_end(&op);
    }
    pthread_mutex_lock(&b->mu);
    if (got) b->info.mem_free = free_bytes;
    *out = b->info;
    out->zero_copy_runs = atomic_load(&b->zero_copy_runs);
    pthread_mutex_unlock(&b->mu);
}

static bool cuda_usable(wp_backend *base, char *why, size_t n) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->mu);
    bool ok = b->ctx != NULL;
    if (!ok && n) snprintf(why, n, "%s", b->lost_reason);
    pthread_mutex_unlock(&b->mu);
    return ok;
}

void wp_backend_cuda_set_wait(wp_backend *base, bool yield) {
    if (base && !strcmp(base->ops->name, "cuda")) ((cuda_backend *)base)->wait_yield = yield;
}

void wp_backend_cuda_set_zero_copy(wp_backend *base, bool on) {
    if (base && !strcmp(base->ops->name, "cuda")) ((cuda_backend *)base)->zero_copy = on;
}

static bool cuda_lane_free(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->mu);
    bool free_now = b->ctx && b->free_lanes && !b->lane_waiters && !b->resetting;
    pthread_mutex_unlock(&b->mu);
    return free_now;
}

static unsigned cuda_generation(wp_backend *base) {
    cuda_backend *b = (cuda_backend *)base;
    pthread_mutex_lock(&b->mu);
    unsigned g = b->generation;
    pthread_mutex_unlock(&b->mu);
    return g;
}

/* ---- kernels ---- */

/* fn's CUfunction in the op's context, (re)loading its cubin when it was loaded in an older one. */
static CUresult fn_function(cuda_op *op, cuda_fn *fn, CUfunction *out, const char **call) {
    cuda_backend *b = op->b;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&b->load_mu);
    if (fn->generation != op->gen) {
        CUmodule module = NULL;
        CUfunction function = NULL;
        *call = "cuModuleLoadData";
        r = b->cu.module_load_data(&module, fn->cubin);
        if (r == CUDA_SUCCESS) {
            *call = "cuModuleGetFunction";
            if ((r = b->cu.module_get_function(&function, module, fn->lowered)) != CUDA_SUCCESS)
                b->cu.module_unload(module);
        }
        if (r == CUDA_SUCCESS) {
            fn->module = module;
            fn->function = function;
            fn->generation = op->gen;
        }
    }
    *out = fn->function;
    pthread_mutex_unlock(&b->load_mu);
    return r;
}

static void fn_free(cuda_fn *fn) {
    if (!fn) return;
    free(fn->cubin);
    free(fn->lowered);
    free(fn);
}

static int cuda_load(wp_backend *base, const wp_artifact *a, void **out, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    *out = NULL;
    if (!a->cubin || !a->cubin_len || !a->lowered)
        return WP_FAIL(err, 500, "cuda_error", "", "the artifact has no cubin or kernel name to load");
    cuda_fn *fn = calloc(1, sizeof *fn);
    if (fn) fn->cubin = malloc(a->cubin_len);
    if (fn) fn->lowered = strdup(a->lowered);
    if (!fn || !fn->cubin || !fn->lowered) {
        fn_free(fn);
        return WP_FAIL(err, 500, "out_of_memory", "", "out of memory loading a kernel");
    }
    memcpy(fn->cubin, a->cubin, a->cubin_len);
    fn->cubin_len = a->cubin_len;
    cuda_op op;
    if (cuda_op_begin(b, false, &op, err)) {
        fn_free(fn);
        return -1;
    }
    const char *call = "";
    CUfunction f;
    CUresult r = fn_function(&op, fn, &f, &call);
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_NOT_FOUND || !strcmp(call, "cuModuleGetFunction")) {
            wp_cu_fail(&b->cu, err, call, r);
            size_t len = strlen(err->msg);
            snprintf(err->msg + len, sizeof err->msg - len, " for %.80s", fn->lowered);
            cuda_op_end(&op);
        } else {
            cuda_op_fail(&op, err, call, r);
        }
        fn_free(fn);
        return -1;
    }
    cuda_op_end(&op);
    *out = fn;
    return 0;
}

static void cuda_unload(wp_backend *base, void *p) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_fn *fn = p;
    if (!fn) return;
    cuda_op op;
    /* A module of an older generation died with its context. */
    if (fn->module && cuda_op_begin(b, false, &op, NULL) == 0) {
        if (fn->generation == op.gen) b->cu.module_unload(fn->module);
        cuda_op_end(&op);
    }
    fn_free(fn);
}

/* ---- warp runs (the layout and parameters: warp_grid.h) ---- */

static int cuda_run_warp_on(cuda_op *op, cuda_fn *fn, const wp_warp_job *job, wp_warp_result *res, wp_run_timing *t,
                            wp_err *err) {
    cuda_backend *b = op->b;
    cuda_lane *ln = op->lane;
    const int n = job->n, elems = job->elems;
    wp_warp_layout l = wp_warp_layout_for(n, elems);
    const char *call = "";
    CUfunction function;
    CUresult r = cuda_lane_reserve(b, ln, l.total, l.total, &call);
    if (r == CUDA_SUCCESS) r = fn_function(op, fn, &function, &call);
    if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, call, r);

    const uint64_t t0 = wp_now_ns();
    const bool timed = !(t && t->untimed);
    const bool zero_copy = !timed && cuda_zero_copy(b, ln, l.total); /* the kernel works in ln->host */
    unsigned char *h = ln->host;
    wp_warp_image_put(h, &l, job, 0, n);
    wp_warp_params p = wp_warp_params_at(zero_copy ? ln->host_dev : ln->scratch, &l, job, n);
    void *params[] = {&p};
    const unsigned threads = (unsigned)((n + 31) / 32 * 32);
#define CU_TRY(x, name)                                                                                                \
    do {                                                                                                               \
        if ((r = (x)) != CUDA_SUCCESS) return cuda_op_fail(op, err, (name), r);                                        \
    } while (0)

    /* Upload, kernel and download are queued back to back on the lane and waited for once; events
     * between them time each step on the device (unless untimed: one event without timing at the end;
     * zero-copy: no copies either). */
    if (timed) CU_TRY(b->cu.event_record(ln->ev_upload, ln->stream), "cuEventRecord");
    if (!zero_copy) CU_TRY(b->cu.memcpy_htod_async(ln->scratch, h, l.total, ln->stream), "cuMemcpyHtoDAsync");
    if (timed) CU_TRY(b->cu.event_record(ln->ev_start, ln->stream), "cuEventRecord");
    CU_TRY(b->cu.launch_kernel(function, 1, 1, 1, threads, 1, 1, 0, ln->stream, params, NULL), "cuLaunchKernel");
    if (timed) CU_TRY(b->cu.event_record(ln->ev_stop, ln->stream), "cuEventRecord");
    if (!zero_copy) CU_TRY(b->cu.memcpy_dtoh_async(h, ln->scratch, l.download, ln->stream), "cuMemcpyDtoHAsync");
    CUevent end = timed ? ln->ev_download : ln->ev_done;
    CU_TRY(b->cu.event_record(end, ln->stream), "cuEventRecord");
    CU_TRY(cuda_event_wait(b, end), "the warp run (cuEventSynchronize)");
    float upload_ms = 0, kernel_ms = 0, download_ms = 0;
    if (t && timed) {
        CU_TRY(b->cu.event_elapsed_time(&upload_ms, ln->ev_upload, ln->ev_start), "cuEventElapsedTime");
        CU_TRY(b->cu.event_elapsed_time(&kernel_ms, ln->ev_start, ln->ev_stop), "cuEventElapsedTime");
        CU_TRY(b->cu.event_elapsed_time(&download_ms, ln->ev_stop, ln->ev_download), "cuEventElapsedTime");
    }
#undef CU_TRY
    memcpy(res->out, h + l.out, (size_t)n * (size_t)elems * sizeof(uint64_t));
    memcpy(res->src, h + l.src, (size_t)n * sizeof(int32_t));
    if (t)
        *t = (wp_run_timing){.upload_us = cuda_ms_to_us(upload_ms),
                             .kernel_us = cuda_ms_to_us(kernel_ms),
                             .download_us = cuda_ms_to_us(download_ms),
                             .untimed = !timed,
                             .device_us = wp_us_since(t0)};
    cuda_op_end(op);
    return 0;
}

static int cuda_run_warp(wp_backend *base, void *fnp, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                         wp_run_timing *t, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_fn *fn = fnp;
    if (!fn) return WP_FAIL(err, 500, "cuda_error", "", "no loaded kernel for the cuda backend");
    if (job->n < 1 || job->n > WP_MAX_LANES)
        return WP_FAIL(err, 400, "bad_n", "n", "n %d is outside 1..%d", job->n, WP_MAX_LANES);
    if (job->elems < 1 || job->elems > WP_MAX_ELEMS)
        return WP_FAIL(err, 400, "bad_elems", "elems", "elems %d is outside 1..%d", job->elems, WP_MAX_ELEMS);
    if (s && s->family && s->family->min_sm > b->base.facts.sm)
        return WP_FAIL(err, 400, "unsupported_on_device", "family", "family %s needs sm_%d; the device is sm_%d",
                       s->family->name, s->family->min_sm, b->base.facts.sm);
    cuda_op op;
    if (cuda_op_begin(b, true, &op, err)) return -1;
    return cuda_run_warp_on(&op, fn, job, res, t, err); /* ends op */
}

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

static int cuda_buf_alloc(wp_backend *base, wp_buf *buf, wp_err *err) {
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

static void cuda_buf_free(wp_backend *base, wp_buf *buf) {
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

static int cuda_buf_write(wp_backend *base, wp_buf *buf, size_t offset, const void *src, size_t len, wp_err *err) {
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

static int cuda_buf_read(wp_backend *base, const wp_buf *buf, size_t offset, void *dst, size_t len, wp_err *err) {
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

static int cuda_buf_memset(wp_backend *base, wp_buf *buf, size_t offset, int byte, size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, buf, NULL, &op, err)) return -1;
    CUresult r = b->cu.memset_d8_async(buf->addr + offset, (unsigned char)byte, len, op.lane->stream);
    return buf_finish(&op, r, "cuMemsetD8Async", err);
}

static int cuda_buf_copy(wp_backend *base, wp_buf *dst, size_t dst_offset, const wp_buf *src, size_t src_offset,
                         size_t len, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_op op;
    if (buf_begin(b, dst, src, &op, err)) return -1;
    CUresult r = b->cu.memcpy_dtod_async(dst->addr + dst_offset, src->addr + src_offset, len, op.lane->stream);
    return buf_finish(&op, r, "cuMemcpyDtoDAsync", err);
}

/* ---- launches ---- */

/* Whether a launch goes as a programmatic dependent: the kernel allows it (WP_LAUNCH_OVERLAP) and the
 * device has it (sm_90+). */
static bool cuda_overlaps(const cuda_backend *b, const wp_launch *l) {
    return (l->flags & WP_LAUNCH_OVERLAP) && b->base.facts.sm >= 90;
}

/* One launch on the stream: cuLaunchKernelEx with programmatic stream serialization when it overlaps
 * (cuda_overlaps), else plain cuLaunchKernel. */
static CUresult cuda_launch_one(cuda_backend *b, CUstream stream, CUfunction f, const wp_launch *l) {
#define DIM(x) ((x) ? (x) : 1u)
    if (cuda_overlaps(b, l)) {
        CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = DIM(l->grid[0]),
                              .gridDimY = DIM(l->grid[1]),
                              .gridDimZ = DIM(l->grid[2]),
                              .blockDimX = DIM(l->block[0]),
                              .blockDimY = DIM(l->block[1]),
                              .blockDimZ = DIM(l->block[2]),
                              .sharedMemBytes = l->smem_bytes,
                              .hStream = stream,
                              .attrs = &attr,
                              .numAttrs = 1};
        return b->cu.launch_kernel_ex(&cfg, f, l->params, NULL);
    }
    return b->cu.launch_kernel(f, DIM(l->grid[0]), DIM(l->grid[1]), DIM(l->grid[2]), DIM(l->block[0]), DIM(l->block[1]),
                               DIM(l->block[2]), l->smem_bytes, stream, l->params, NULL);
#undef DIM
}

/* WP_LAUNCH_GRAPH: the n launches captured from the lane's stream into one graph (programmatic
 * edges kept), replayed once to warm up; *exec gets the instantiated graph. The capture is always
 * ended. On failure the op is failed. */
static int cuda_capture(cuda_op *op, const CUfunction *fs, const wp_launch *ls, int n, CUgraphExec *exec, wp_err *err) {
    cuda_backend *b = op->b;
    CUstream st = op->lane->stream;
    CUresult r = b->cu.stream_begin_capture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuStreamBeginCapture", r);
    CUresult lr = CUDA_SUCCESS;
    for (int i = 0; i < n && lr == CUDA_SUCCESS; i++) lr = cuda_launch_one(b, st, fs[i], &ls[i]);
    CUgraph graph = NULL;
    r = b->cu.stream_end_capture(st, &graph);
    if (lr != CUDA_SUCCESS || r != CUDA_SUCCESS) {
        if (graph) b->cu.graph_destroy(graph);
        return cuda_op_fail(op, err, lr != CUDA_SUCCESS ? "a launch under stream capture" : "cuStreamEndCapture",
                            lr != CUDA_SUCCESS ? lr : r);
    }
    r = b->cu.graph_instantiate(exec, graph, 0);
    b->cu.graph_destroy(graph);
    if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuGraphInstantiate", r);
    if ((r = b->cu.graph_launch(*exec, st)) != CUDA_SUCCESS) {
        b->cu.graph_exec_destroy(*exec);
        return cuda_op_fail(op, err, "cuGraphLaunch", r);
    }
    return 0;
}

/* Queues io's write on the lane (before the launches): through the lane's page-locked staging when it
 * fits (reserved for the read too, so the read after the launches never reallocates it under the
 * write), else straight from the caller's memory (a pageable copy: done when the call returns). An
 * image (io->fill) is built straight into the staging, or into memory of its own past it. */
static int cuda_queue_write(cuda_op *op, const wp_launch_io *io, bool timed, wp_err *err) {
    cuda_backend *b = op->b;
    cuda_lane *ln = op->lane;
    const char *call = "";
    CUresult r;
    const bool staged = io->write_len <= WP_STAGE_MAX;
    size_t stage = staged ? io->write_len : 0;
    if (io->read_len <= WP_STAGE_MAX && io->read_len > stage) stage = io->read_len;
    if (stage && (r = cuda_lane_reserve(b, ln, 0, stage, &call)) != CUDA_SUCCESS) return cuda_op_fail(op, err, call, r);
    const void *src = staged ? ln->host : io->src;
    void *own = NULL;
    if (io->fill) {
        if (!staged && !(src = own = malloc(io->write_len))) {
            cuda_op_end(op);
            return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for a %zu-byte image", io->write_len);
        }
        io->fill(io->fill_ctx, io->buf->addr, (void *)src);
    } else if (staged) {
        memcpy(ln->host, io->src, io->write_len);
    }
    /* recorded here, after the host copy into staging: upload_us is the device's copy alone */
    if (timed && (r = b->cu.event_record(ln->ev_upload, ln->stream)) != CUDA_SUCCESS) {
        free(own);
        return cuda_op_fail(op, err, "cuEventRecord", r);
    }
    r = b->cu.memcpy_htod_async(io->buf->addr + io->write_offset, src, io->write_len, ln->stream);
    free(own); /* a pageable copy has read it when the call returns */
    return r == CUDA_SUCCESS ? 0 : cuda_op_fail(op, err, "cuMemcpyHtoDAsync", r);
}

/* io (may be NULL): a write queued before the launches and a read after them, in the same wait. Timed
 * (the default): an event before each step and one after the last; io->untimed: one event without
 * timing at the end. */
static int cuda_launch_on(cuda_op *op, const CUfunction *fs, const wp_launch *ls, int n, const wp_launch_io *io,
                          wp_run_timing *t, wp_err *err) {
    cuda_backend *b = op->b;
    cuda_lane *ln = op->lane;
    CUgraphExec exec = NULL;
    const uint64_t t0 = wp_now_ns();
    const bool write = io && io->write_len, read = io && io->read_len;
    const bool timed = !(io && io->untimed) || (ls[0].flags & WP_LAUNCH_GRAPH);
    const bool staged = read && io->read_len <= WP_STAGE_MAX; /* else straight into dst (pageable: waits) */
    /* an untimed image the kernels may reach over the bus (cuda_zero_copy) */
    const bool zero_copy = !timed && io->fill && io->zero_copy_ok && cuda_zero_copy(b, ln, io->image_len);
    const char *call = "";
    CUresult r;
    if (zero_copy)
        io->fill(io->fill_ctx, ln->host_dev, ln->host); /* the kernels work in it: nothing to copy */
    else if (write && cuda_queue_write(op, io, timed, err))
        return -1; /* never with a graph (backend.c) */
    /* the read's staging before the first launch (a no-op after a write, which reserved for both): a
     * growth never lands between the events that time the kernel and the download */
    if (!zero_copy && !write && staged && (r = cuda_lane_reserve(b, ln, 0, io->read_len, &call)) != CUDA_SUCCESS)
        return cuda_op_fail(op, err, call, r);
    if ((ls[0].flags & WP_LAUNCH_GRAPH) && cuda_capture(op, fs, ls, n, &exec, err)) return -1;
    if (timed && (r = b->cu.event_record(ln->ev_start, ln->stream)) != CUDA_SUCCESS) {
        if (exec) b->cu.graph_exec_destroy(exec);
        return cuda_op_fail(op, err, "cuEventRecord", r);
    }
    if (exec) {
        r = b->cu.graph_launch(exec, ln->stream);
        b->cu.graph_exec_destroy(exec); /* freed once the replay is done */
        if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuGraphLaunch", r);
    }
    for (int i = 0; !exec && i < n; i++)
        if ((r = cuda_launch_one(b, ln->stream, fs[i], &ls[i])) != CUDA_SUCCESS)
            return cuda_op_fail(op, err, cuda_overlaps(b, &ls[i]) ? "cuLaunchKernelEx" : "cuLaunchKernel", r);
    if (timed && (r = b->cu.event_record(ln->ev_stop, ln->stream)) != CUDA_SUCCESS)
        return cuda_op_fail(op, err, "cuEventRecord", r);
    if (read && !zero_copy) {
        r = b->cu.memcpy_dtoh_async(staged ? ln->host : io->dst, io->buf->addr + io->read_offset, io->read_len,
                                    ln->stream);
        if (r != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuMemcpyDtoHAsync", r);
    }
    CUevent end = timed ? ln->ev_download : ln->ev_done;
    if ((r = b->cu.event_record(end, ln->stream)) != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuEventRecord", r);
    if ((r = cuda_event_wait(b, end)) != CUDA_SUCCESS)
        return cuda_op_fail(op, err, "the kernel (cuEventSynchronize)", r);
    if (read && zero_copy)
        memcpy(io->dst, ln->host + io->read_offset, io->read_len);
    else if (staged)
        memcpy(io->dst, ln->host, io->read_len);
    if (t && !timed) *t = (wp_run_timing){.untimed = true, .device_us = wp_us_since(t0)};
    if (t && timed) {
        float up = 0, kern = 0, down = 0;
        if ((write && (r = b->cu.event_elapsed_time(&up, ln->ev_upload, ln->ev_start)) != CUDA_SUCCESS) ||
            (r = b->cu.event_elapsed_time(&kern, ln->ev_start, ln->ev_stop)) != CUDA_SUCCESS ||
            (read && (r = b->cu.event_elapsed_time(&down, ln->ev_stop, ln->ev_download)) != CUDA_SUCCESS))
            return cuda_op_fail(op, err, "cuEventElapsedTime", r);
        *t = (wp_run_timing){.upload_us = cuda_ms_to_us(up),
                             .kernel_us = cuda_ms_to_us(kern),
                             .download_us = cuda_ms_to_us(down),
                             .device_us = wp_us_since(t0)};
    }
    cuda_op_end(op);
    return 0;
}

#define WP_LAUNCH_FNS_LOCAL 16

static int launch_with(cuda_backend *b, void *const *fns, const wp_launch *ls, int n, const wp_launch_io *io,
                       wp_run_timing *t, wp_err *err) {
    for (int i = 0; i < n; i++)
        if (!fns[i]) return WP_FAIL(err, 500, "cuda_error", "", "no loaded kernel for launch %d", i);
    CUfunction local[WP_LAUNCH_FNS_LOCAL], *fs = n <= WP_LAUNCH_FNS_LOCAL ? local : malloc((size_t)n * sizeof *fs);
    if (!fs) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory");
    cuda_op op;
    int rc = cuda_op_begin(b, true, &op, err);
    if (rc == 0 && io && io->buf->generation != op.gen) {
        cuda_op_end(&op);
        rc = WP_FAIL(err, 410, "buffer_lost", "buffer", "the buffer was lost when the CUDA context was reset");
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        const char *call = "";
        CUresult r = i > 0 && fns[i] == fns[i - 1] ? CUDA_SUCCESS : fn_function(&op, fns[i], &fs[i], &call);
        if (i > 0 && fns[i] == fns[i - 1]) fs[i] = fs[i - 1];
        if (r != CUDA_SUCCESS) rc = cuda_op_fail(&op, err, call, r);
    }
    if (rc == 0) rc = cuda_launch_on(&op, fs, ls, n, io, t, err); /* ends op */
    if (fs != local) free(fs);
    return rc;
}

static int cuda_launch(wp_backend *base, void *const *fns, const wp_launch *ls, int n, double *kernel_us, wp_err *err) {
    wp_run_timing t;
    int rc = launch_with((cuda_backend *)base, fns, ls, n, NULL, kernel_us ? &t : NULL, err);
    if (rc == 0 && kernel_us) *kernel_us = t.kernel_us;
    return rc;
}

static int cuda_launch_io(wp_backend *base, void *const *fns, const wp_launch *ls, int n, const wp_launch_io *io,
                          wp_run_timing *t, wp_err *err) {
    return launch_with((cuda_backend *)base, fns, ls, n, io, t, err);
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

static void *cuda_upload_open(wp_backend *base, size_t slot_bytes, int slots, void **host, wp_err *err) {
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

static int cuda_upload_send(wp_backend *base, void *ringp, int slot, wp_buf *buf, size_t offset, size_t len,
                            wp_err *err) {
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

static int cuda_upload_wait(wp_backend *base, void *ringp, int slot, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_ring *r = ringp;
    cuda_op op;
    if (ring_begin(b, r, &op, err)) return -1;
    CUresult cr = b->cu.event_synchronize(r->done[slot]);
    if (cr != CUDA_SUCCESS) return cuda_op_fail(&op, err, "cuEventSynchronize (upload)", cr);
    cuda_op_end(&op);
    return 0;
}

static void cuda_upload_close(wp_backend *base, void *ringp) {
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

static const wp_backend_ops cuda_ops = {
    .name = "cuda",
    .close = cuda_close,
    .info = cuda_info,
    .usable = cuda_usable,
    .load = cuda_load,
    .unload = cuda_unload,
    .run_warp = cuda_run_warp,
    .buf_alloc = cuda_buf_alloc,
    .buf_free = cuda_buf_free,
    .buf_write = cuda_buf_write,
    .buf_read = cuda_buf_read,
    .buf_memset = cuda_buf_memset,
    .buf_copy = cuda_buf_copy,
    .launch = cuda_launch,
    .launch_io = cuda_launch_io,
    .generation = cuda_generation,
    .lane_free = cuda_lane_free,
    .upload_open = cuda_upload_open,
    .upload_send = cuda_upload_send,
    .upload_wait = cuda_upload_wait,
    .upload_close = cuda_upload_close,
};

wp_backend *wp_backend_cuda_open_streams(int device_ordinal, int streams, wp_err *err) {
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b) {
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the cuda backend");
        return NULL;
    }
    b->base.ops = &cuda_ops;
    b->zero_copy = true;
    if (pthread_mutex_init(&b->mu, NULL) != 0 || pthread_cond_init(&b->cv, NULL) != 0 ||
        pthread_cond_init(&b->lane_cv, NULL) != 0 || pthread_mutex_init(&b->load_mu, NULL) != 0) {
        free(b);
        WP_FAIL(err, 500, "internal", "", "pthread_mutex_init failed");
        return NULL;
    }
    if (wp_cu_open(&b->lib, &b->cu, &b->info.driver_version, err) || cuda_device_start(b, device_ordinal, err) ||
        cuda_lanes_make(b, streams, err)) {
        cuda_close(&b->base);
        return NULL;
    }
    b->base.facts = b->info;
    b->base.ordinal = device_ordinal;
    b->base.index = -1; /* main.c places it */
    return &b->base;
}

int wp_backend_cuda_count(wp_err *err) {
    wp_cu cu;
    void *lib = NULL;
    int version = 0, count = -1;
    memset(&cu, 0, sizeof cu);
    if (wp_cu_open(&lib, &cu, &version, err) == 0) {
        CUresult r = cu.init(0);
        if (r == CUDA_SUCCESS) r = cu.device_get_count(&count);
        if (r != CUDA_SUCCESS) {
            char text[160];
            count = -1;
            WP_FAIL(err, 503, "cuda_unavailable", "", "cuInit/cuDeviceGetCount failed: %s",
                    wp_cu_error_text(&cu, r, text, sizeof text));
        }
    }
    wp_cu_close(lib);
    return count;
}

wp_backend *wp_backend_cuda_open(int device_ordinal, wp_err *err) {
    return wp_backend_cuda_open_streams(device_ordinal, WP_CUDA_STREAMS_DEFAULT, err);
}

int wp_backend_cuda_streams(const wp_backend *base) {
    if (!base || strcmp(base->ops->name, "cuda")) return 0;
    return ((const cuda_backend *)base)->n_lanes;
}

/* cuInit and the device's attributes only: no context, stream or memory, which are most of what
 * opening a device costs (--prewarm --exit compiles for the device and runs nothing). */
int wp_backend_cuda_sm(int device_ordinal, int *sm, wp_err *err) {
    void *lib = NULL;
    wp_cu cu;
    memset(&cu, 0, sizeof cu);
    int version = 0;
    if (wp_cu_open(&lib, &cu, &version, err)) {
        wp_cu_close(lib);
        return -1;
    }
    CUdevice dev = 0;
    int rc = cuda_device_find(&cu, device_ordinal, &dev, sm, err);
    wp_cu_close(lib);
    return rc;
}
