/* cuda_streams.c — the stream pool of one CUDA device (--streams-per-device): lanes, each a
 * non-blocking stream with its timing events, a device scratch and page-locked host staging of its
 * own, so jobs on different lanes never share memory and run at once. cuda_op_begin (cuda_device.c)
 * hands a lane to one operation at a time (through the device's lane gate, lane_gate.h); the objects
 * are made in the lane's first use in a context and remade lazily after a reset. Waiting is by an
 * event recorded on the lane's stream: no lock is held while the device works.
 * Owns: the lanes' driver objects (streams, events, scratch, staging). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

#define WP_LANE_HOST_MIN (64u << 10)

int cuda_lanes_make(cuda_backend *b, int n, wp_err *err) {
    if (n < 1) n = 1;
    if (n > WP_CUDA_STREAMS_MAX) n = WP_CUDA_STREAMS_MAX;
    b->lanes = calloc((size_t)n, sizeof *b->lanes);
    if (!b->lanes) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory for %d streams", n);
    b->n_lanes = n;
    wp_lane_gate_init(&b->lane_gate);
    for (int i = n - 1; i >= 0; i--) { /* lane 0 the first taken */
        b->lanes[i].index = i;
        wp_lane_gate_put(&b->lane_gate, &b->lanes[i]);
    }
    return 0;
}

/* Destroys a lane's objects (current context: the one they live in). */
static void lane_destroy(cuda_backend *b, cuda_lane *l) {
    if (l->stream) b->cu.stream_synchronize(l->stream);
    CUevent *evs[] = {&l->ev_upload, &l->ev_start, &l->ev_stop, &l->ev_download, &l->ev_done, &l->ev_sleep};
    for (size_t i = 0; i < WP_ARRAY_LEN(evs); i++)
        if (*evs[i]) b->cu.event_destroy(*evs[i]);
    if (l->stream) b->cu.stream_destroy(l->stream);
    if (l->scratch) b->cu.mem_free(l->scratch);
    if (l->host) b->cu.mem_free_host(l->host);
    cuda_lane_forget(l);
}

void cuda_lanes_free(cuda_backend *b) {
    for (int i = 0; i < b->n_lanes; i++)
        if (b->lanes[i].generation == b->generation) lane_destroy(b, &b->lanes[i]);
}

void cuda_lane_forget(cuda_lane *l) {
    l->generation = 0;
    l->stream = NULL;
    l->ev_upload = l->ev_start = l->ev_stop = l->ev_download = l->ev_done = l->ev_sleep = NULL;
    l->scratch = 0;
    l->scratch_cap = 0;
    l->host = NULL;
    l->host_cap = 0;
    l->host_dev = 0;
}

CUresult cuda_lane_ready(cuda_backend *b, cuda_lane *l, unsigned gen, const char **call) {
    if (l->generation == gen) return CUDA_SUCCESS;
    cuda_lane_forget(l); /* a reset freed whatever it had */
    CUresult r;
    *call = "cuStreamCreate";
    if ((r = b->cu.stream_create(&l->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        l->stream = NULL;
        return r;
    }
    l->generation = gen; /* from here lane_destroy frees what was made */
    *call = "cuEventCreate";
    CUevent *evs[] = {&l->ev_upload, &l->ev_start, &l->ev_stop, &l->ev_download, &l->ev_done, &l->ev_sleep};
    const unsigned flags[] = {CU_EVENT_DEFAULT,        CU_EVENT_DEFAULT,
                              CU_EVENT_DEFAULT,        CU_EVENT_DEFAULT,
                              CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC};
    for (size_t i = 0; i < WP_ARRAY_LEN(evs); i++)
        if ((r = b->cu.event_create(evs[i], flags[i])) != CUDA_SUCCESS) {
            *evs[i] = NULL;
            return r;
        }
    return CUDA_SUCCESS;
}

CUresult cuda_lane_reserve(cuda_backend *b, cuda_lane *l, size_t scratch, size_t host, const char **call) {
    CUresult r;
    if (scratch > l->scratch_cap) {
        if (l->scratch) {
            b->cu.stream_synchronize(l->stream);
            b->cu.mem_free(l->scratch);
        }
        l->scratch = 0;
        l->scratch_cap = 0;
        *call = "cuMemAlloc";
        if ((r = b->cu.mem_alloc(&l->scratch, scratch)) != CUDA_SUCCESS) return r;
        l->scratch_cap = scratch;
    }
    if (host > l->host_cap) {
        if (host < WP_LANE_HOST_MIN) host = WP_LANE_HOST_MIN;
        if (l->host) {
            b->cu.stream_synchronize(l->stream);
            b->cu.mem_free_host(l->host);
        }
        l->host = NULL;
        l->host_cap = 0;
        l->host_dev = 0;
        *call = "cuMemHostAlloc";
        void *p = NULL;
        /* mapped into the device's address space too: a zero-copy run's kernel reads and writes it */
        if ((r = b->cu.mem_host_alloc(&p, host, CU_MEMHOSTALLOC_DEVICEMAP)) != CUDA_SUCCESS) return r;
        l->host = p;
        l->host_cap = host;
        CUdeviceptr d = 0;
        if (b->cu.mem_host_get_device_pointer(&d, p, 0) == CUDA_SUCCESS) l->host_dev = d; /* else: copies only */
    }
    return CUDA_SUCCESS;
}

bool cuda_zero_copy(cuda_backend *b, cuda_lane *l, size_t bytes) {
    const char *call;
    if (!b->zero_copy || bytes > WP_ZERO_COPY_MAX || cuda_lane_reserve(b, l, 0, bytes, &call) != CUDA_SUCCESS ||
        !l->host_dev)
        return false; /* copies then */
    atomic_fetch_add(&b->zero_copy_runs, 1);
    return true;
}

CUresult cuda_event_wait(cuda_backend *b, CUevent ev) { return cuda_event_wait_as(b, ev, b->wait_yield); }

CUresult cuda_event_wait_as(cuda_backend *b, CUevent ev, bool yield) {
    if (!yield) return b->cu.event_synchronize(ev);
    CUresult r;
    while ((r = b->cu.event_query(ev)) == CUDA_ERROR_NOT_READY) sched_yield();
    return r;
}

CUresult cuda_lane_wait(cuda_backend *b, cuda_lane *l, const char **call) {
    CUresult r;
    *call = "cuEventRecord";
    if ((r = b->cu.event_record(l->ev_done, l->stream)) != CUDA_SUCCESS) return r;
    *call = "cuEventSynchronize";
    return cuda_event_wait(b, l->ev_done);
}
