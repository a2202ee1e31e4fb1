/* cuda_resident.c — a device's resident kernel (templates/wp_resident.cuh): one warp that stays on
 * the device after a small untimed /v1/warp job, or one block after a small reduce's batch image, and
 * takes the next jobs of the same kernel from a mailbox in mapped page-locked memory (resident_box.h),
 * so that a job costs a round trip over the bus instead of a launch and its wait. At most one a device, used by one job
 * at a time (a job that finds it busy, or a different kernel in it, runs as before or replaces it). It leaves by itself
 * after --resident-us without a job, and between jobs four times that after its launch (at least
 * WP_RESIDENT_LIFE_US), so a context-wide wait is never held up for long; an unload or close tells it to leave first.
 * Owns: the resident's stream, end event, mailbox and image buffer. */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "cuda_impl.h"
#include "resident_box.h"

#define RESIDENT_ANSWER_NS 2000000000ull /* a job not answered in 2 s: the kernel is wrong */
#define RESIDENT_QUERY_EVERY 1024        /* polls of the mailbox between looks at the kernel's end */

static void resident_lock(cuda_resident *r) {
    while (atomic_exchange_explicit(&r->busy, true, memory_order_acquire)) sched_yield();
}
static void resident_unlock(cuda_resident *r) { atomic_store_explicit(&r->busy, false, memory_order_release); }

/* Frees what resident_ready made (the context current; objects of an older one died with it). */
static void resident_free(cuda_backend *b, cuda_resident *r) {
    if (r->ev_end) b->cu.event_destroy(r->ev_end);
    if (r->stream) b->cu.stream_destroy(r->stream);
    if (r->box) b->cu.mem_free_host(r->box);
    if (r->image) b->cu.mem_free(r->image);
    r->image = 0;
    r->ev_end = NULL;
    r->stream = NULL;
    r->box = NULL;
    r->box_dev = 0;
    r->generation = 0;
    r->alive = false;
}

/* Its objects in context generation gen, made on first use there (a reset freed the old ones). */
static CUresult resident_ready(cuda_backend *b, cuda_resident *r, unsigned gen, const char **call) {
    if (r->generation == gen) return CUDA_SUCCESS;
    r->ev_end = NULL, r->stream = NULL, r->box = NULL, r->image = 0; /* an older context's: gone with it */
    resident_free(b, r);
    CUresult c;
    *call = "cuStreamCreate";
    if ((c = b->cu.stream_create(&r->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) r->stream = NULL;
    if (c == CUDA_SUCCESS && (*call = "cuEventCreate") &&
        (c = b->cu.event_create(&r->ev_end, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
        r->ev_end = NULL;
    if (c == CUDA_SUCCESS && (*call = "cuMemHostAlloc") &&
        (c = b->cu.mem_host_alloc(&r->box, WP_RESIDENT_BOX_BYTES, CU_MEMHOSTALLOC_DEVICEMAP)) != CUDA_SUCCESS)
        r->box = NULL;
    if (c == CUDA_SUCCESS && (*call = "cuMemHostGetDevicePointer"))
        c = b->cu.mem_host_get_device_pointer(&r->box_dev, r->box, 0);
    if (c == CUDA_SUCCESS && (*call = "cuMemAlloc") &&
        (c = b->cu.mem_alloc(&r->image, WP_RESIDENT_IMAGE_BYTES)) != CUDA_SUCCESS)
        r->image = 0;
    if (c != CUDA_SUCCESS) {
        resident_free(b, r);
        return c;
    }
    memset(r->box, 0, WP_RESIDENT_BOX_BYTES);
    r->generation = gen;
    return CUDA_SUCCESS;
}

/* Waits for the kernel to be gone (its end event), so every line it wrote is visible. */
static CUresult resident_wait_end(cuda_backend *b, cuda_resident *r) {
    r->alive = false;
    return cuda_event_wait(b, r->ev_end);
}

static CUresult resident_stop(cuda_backend *b, cuda_resident *r) {
    wp_resident_box_stop(r->box);
    return resident_wait_end(b, r);
}

/* The kernel of fn launched as a resident for jobs like a: a warp of a warp kernel, a block of a
 * batched data kernel. */
static CUresult resident_launch(cuda_backend *b, cuda_resident *r, const void *fn, CUfunction f,
                                const cuda_resident_job *a) {
    wp_resident_box_clear(r->box);
    const unsigned life_us = r->idle_us > WP_RESIDENT_LIFE_US / 4 ? 4 * r->idle_us : WP_RESIDENT_LIFE_US;
    wp_warp_params wp;
    wp_data_params dp;
    memset(&wp, 0, sizeof wp);
    memset(&dp, 0, sizeof dp);
    wp.resident = dp.in = r->box_dev;
    wp.resident_idle_us = r->idle_us;
    wp.resident_life_us = life_us;
    dp.out = r->image;
    dp.n = r->idle_us;
    dp.groups = life_us;
    dp.reserved = WP_DATA_RESIDENT;
    void *params[] = {a->warp ? (void *)&wp : (void *)&dp};
    const unsigned block = a->warp ? WP_RESIDENT_LANES : a->image->block, smem = a->warp ? 0 : a->image->smem;
    CUresult c = b->cu.launch_kernel(f, 1, 1, 1, block, 1, 1, smem, r->stream, params, NULL);
    if (c != CUDA_SUCCESS) return c;
    r->alive = true;
    r->fn = fn;
    atomic_fetch_add_explicit(&r->launches, 1, memory_order_relaxed);
    if ((c = b->cu.event_record(r->ev_end, r->stream)) != CUDA_SUCCESS)
        wp_resident_box_stop(r->box); /* it leaves; the failure's context-wide wait sees it go */
    return c;
}

/* The kernel has left, or said it is leaving: wait for its end and look again. 0: the job is done;
 * 1: it left without it (launch again); 2: it left without a word (not a resident kernel: off). */
static int ask_poll(const cuda_resident *r, const cuda_resident_job *a) {
    return a->warp ? wp_resident_box_poll(r->box, r->seq, a->warp->n, a->warp->elems)
                   : wp_resident_box_poll_image(r->box, r->seq, a->image->answer_len);
}

/* False: the job does not fit the mailbox (nothing written). */
static bool ask_post(cuda_resident *r, const cuda_resident_job *a) {
    const wp_resident_image *im = a->image;
    if (!a->warp)
        return wp_resident_box_post_image(r->box, im->image, im->image_len, im->first_at, im->jobs, im->answer_at,
                                          im->answer_len, r->seq);
    wp_resident_box_post(r->box, a->warp, r->seq);
    return true;
}

static int resident_gone(cuda_backend *b, cuda_resident *r, const cuda_resident_job *a, CUresult *c) {
    if ((*c = resident_wait_end(b, r)) != CUDA_SUCCESS) return -1;
    if (ask_poll(r, a) == WP_RESIDENT_DONE) return 0;
    if (wp_resident_box_left(r->box)) return 1;
    atomic_store(&r->off, true);
    fprintf(stderr, "warpd: the resident kernel left without a word; resident kernels are off\n");
    return 2;
}

/* Posts job and waits for its answer: 0 done, 1 not taken, -1 failed (c, call). Holding r. */
static int resident_job(cuda_backend *b, cuda_resident *r, const void *fn, CUfunction f, const cuda_resident_job *a,
                        CUresult *c, const char **call) {
    if (r->alive && r->fn != fn) { /* another kernel's: it stays until it leaves (no thrashing) */
        if (!wp_resident_box_left(r->box)) return 1;
        *call = "the resident kernel's end (cuEventSynchronize)";
        if ((*c = resident_wait_end(b, r)) != CUDA_SUCCESS) return -1;
    }
    r->seq = wp_resident_box_next(r->seq);
    if (!ask_post(r, a)) return 1;
    bool launched = false;
    const uint64_t t0 = wp_now_ns();
    for (unsigned spins = 1;; spins++) {
        if (!r->alive) {
            if (launched) return 1; /* a fresh kernel left without it */
            *call = "cuLaunchKernel (resident)";
            if ((*c = resident_launch(b, r, fn, f, a)) != CUDA_SUCCESS) return -1;
            launched = true;
        }
        const int st = ask_poll(r, a);
        if (st == WP_RESIDENT_DONE) return 0;
        if (spins == 1) wp_run_meanwhile(a->t); /* the caller's own work while the resident runs */
        const bool look = spins % RESIDENT_QUERY_EVERY == 0;
        if (st == WP_RESIDENT_GONE || (look && b->cu.event_query(r->ev_end) != CUDA_ERROR_NOT_READY)) {
            *call = "the resident kernel's end (cuEventSynchronize)";
            const int g = resident_gone(b, r, a, c);
            if (g <= 0) return g;
            if (g == 2) return 1;
            continue; /* launched again at the loop's top, once */
        }
        if (b->wait_yield) sched_yield(); /* --gpu-wait yield: the CPU to any runnable thread meanwhile */
        if (look && wp_now_ns() - t0 > RESIDENT_ANSWER_NS) { /* not scheduled, or wrong: told to leave */
            atomic_store(&r->off, true);
            wp_resident_box_stop(r->box);
            fprintf(stderr, "warpd: the resident kernel did not answer in 2 s; resident kernels are off\n");
            return 1; /* alive stays: an unload or close waits for its end */
        }
    }
}

int cuda_resident_run(cuda_op *op, const void *fn, CUfunction f, const cuda_resident_job *a, wp_err *err) {
    cuda_backend *b = op->b;
    cuda_resident *r = &b->resident;
    if (atomic_exchange_explicit(&r->busy, true, memory_order_acquire)) return 1; /* another job has it */
    const char *call = "";
    CUresult c = resident_ready(b, r, op->gen, &call);
    if (c == CUDA_SUCCESS && a->image) a->image->fill(a->image->fill_ctx, r->image, a->image->image);
    int rc = c == CUDA_SUCCESS ? resident_job(b, r, fn, f, a, &c, &call) : -1;
    if (rc < 0 && !r->alive && !wp_cu_is_sticky(c)) { /* no resident made or launched: run as usual */
        atomic_store(&r->off, true);
        fprintf(stderr, "warpd: no resident kernel (%s failed: %d); resident kernels are off\n", call, (int)c);
        rc = 1;
    }
    if (rc == 0) {
        const wp_resident_image *im = a->image;
        if (a->warp)
            wp_resident_box_read(r->box, a->warp->n, a->warp->elems, a->res);
        else
            wp_resident_box_read_image(r->box, im->answer_len, (unsigned char *)im->image + im->answer_at);
        atomic_fetch_add_explicit(&r->runs, 1, memory_order_relaxed);
    }
    resident_unlock(r);
    return rc < 0 ? cuda_op_fail(op, err, call, c) : rc;
}

static bool residents_on(const cuda_backend *b) {
    return b->resident.idle_us > 0 && !atomic_load(&b->resident.off) && wp_resident_box_usable();
}

bool cuda_resident_fits(const cuda_backend *b, const wp_warp_job *job) {
    return residents_on(b) && wp_resident_box_fits(job);
}

bool cuda_resident_image_fits(const cuda_backend *b, const wp_resident_image *im) {
    /* whole warps: the block's first warp watches the mailbox with every lane (templates/wp_resident.cuh) */
    return residents_on(b) && im->jobs >= 1 && im->block >= 32 && im->block % 32 == 0 && im->block <= 1024 &&
           wp_resident_box_image_fits(im->image_len, im->first_at, im->jobs, im->answer_at, im->answer_len) &&
           im->total <= WP_RESIDENT_IMAGE_BYTES &&
           im->answer_at + im->answer_len + WP_DRES_LINE_BYTES <= WP_RESIDENT_IMAGE_BYTES;
}

void cuda_resident_forget(cuda_backend *b, const void *fn, unsigned gen) {
    cuda_resident *r = &b->resident;
    resident_lock(r);
    if (r->fn == fn) {
        if (r->alive && r->generation == gen) resident_stop(b, r);
        r->alive = false;
        r->fn = NULL;
    }
    resident_unlock(r);
}

void cuda_resident_close(cuda_backend *b) {
    cuda_resident *r = &b->resident;
    cuda_op op;
    if (r->generation && cuda_op_begin(b, false, &op, NULL) == 0) {
        if (r->generation == op.gen) {
            if (r->alive) resident_stop(b, r);
            resident_free(b, r);
        }
        cuda_op_end(&op);
    }
    r->generation = 0;
    r->alive = false;
}
