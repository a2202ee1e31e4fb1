/* cuda_launch.c — the cuda backend's kernels: loaded from a cubin, run as a warp job (warp_grid.h), and
 * launched (plain, as programmatic dependents, captured into a graph, with a write before and a read
 * after in the same wait). A loaded function remembers the generation it was loaded in and keeps its
 * own copy of the cubin, so a function the cache still holds is reloaded lazily on its next run after
 * a context reset. Owns: cuda_fn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "warp_grid.h"

/* A loaded kernel. Keeps its own cubin so it can be reloaded after a context reset. */
typedef struct {
    CUmodule module;
    CUfunction function;
    unsigned generation;
    unsigned char *cubin;
    size_t cubin_len;
    char *lowered;
} cuda_fn;

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

int cuda_load(wp_backend *base, const wp_artifact *a, void **out, wp_err *err) {
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

void cuda_unload(wp_backend *base, void *p) {
    cuda_backend *b = (cuda_backend *)base;
    cuda_fn *fn = p;
    if (!fn) return;
    cuda_op op;
    /* A module of an older generation died with its context. */
    if (fn->module && cuda_op_begin(b, false, &op, NULL) == 0) {
        cuda_resident_forget(b, fn, op.gen);
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
    wp_run_meanwhile(t); /* the caller's own work while the device runs */
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

/* An untimed job through the device's resident kernel of fn: 0 done (*device_us its round trip), 1 not
 * taken, -1 failed. */
static int cuda_run_resident(cuda_backend *b, cuda_fn *fn, const cuda_resident_job *j, double *device_us, wp_err *err) {
    cuda_op op;
    if (cuda_op_begin(b, false, &op, err)) return -1;
    const uint64_t t0 = wp_now_ns();
    const char *call = "";
    CUfunction function;
    CUresult r = fn_function(&op, fn, &function, &call);
    if (r != CUDA_SUCCESS) return cuda_op_fail(&op, err, call, r);
    const int rc = cuda_resident_run(&op, fn, function, j, err);
    if (rc < 0) return -1; /* op ended */
    cuda_op_end(&op);
    if (rc == 0) *device_us = wp_us_since(t0);
    return rc;
}

int cuda_run_resident_image(wp_backend *base, void *fnp, const wp_resident_image *im, double *device_us, wp_err *err) {
    cuda_backend *b = (cuda_backend *)base;
    if (!fnp || !cuda_resident_image_fits(b, im)) return 1;
    const cuda_resident_job j = {.image = im, .t = im->hook};
    return cuda_run_resident(b, fnp, &j, device_us, err);
}

int cuda_run_warp(wp_backend *base, void *fnp, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
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
    if (t && t->untimed && s && s->resident && cuda_resident_fits(b, job)) {
        const cuda_resident_job j = {.warp = job, .res = res, .t = t};
        double device_us = 0;
        const int rc = cuda_run_resident(b, fn, &j, &device_us, err);
        if (rc == 0) *t = (wp_run_timing){.untimed = true, .device_us = device_us};
        if (rc <= 0) return rc;
    }
    if (cuda_op_begin(b, true, &op, err)) return -1;
    return cuda_run_warp_on(&op, fn, job, res, t, err); /* ends op */
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
    const int wait = io && !timed ? io->wait : WP_WAIT_DEFAULT;
    CUevent end = timed ? ln->ev_download : wait == WP_WAIT_SLEEP ? ln->ev_sleep : ln->ev_done;
    if ((r = b->cu.event_record(end, ln->stream)) != CUDA_SUCCESS) return cuda_op_fail(op, err, "cuEventRecord", r);
    if (io && io->meanwhile) io->meanwhile(io->meanwhile_ctx); /* the caller's own work while the device runs */
    if ((r = cuda_event_wait_as(b, end, wait == WP_WAIT_DEFAULT ? b->wait_yield : wait == WP_WAIT_YIELD)) !=
        CUDA_SUCCESS)
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

int cuda_launch(wp_backend *base, void *const *fns, const wp_launch *ls, int n, double *kernel_us, wp_err *err) {
    wp_run_timing t;
    int rc = launch_with((cuda_backend *)base, fns, ls, n, NULL, kernel_us ? &t : NULL, err);
    if (rc == 0 && kernel_us) *kernel_us = t.kernel_us;
    return rc;
}

int cuda_launch_io(wp_backend *base, void *const *fns, const wp_launch *ls, int n, const wp_launch_io *io,
                   wp_run_timing *t, wp_err *err) {
    return launch_with((cuda_backend *)base, fns, ls, n, io, t, err);
}
