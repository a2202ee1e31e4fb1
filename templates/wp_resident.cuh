/* wp_resident.cuh — a warp kernel that stays on the device: launched as one warp with p.resident set,
 * it takes jobs from the mailbox in mapped host memory that kernels/wp_abi.h lays out, runs each
 * through the same body a plain launch runs, and answers in the mailbox's out lines; it leaves when
 * told to (WP_RESIDENT_STOP), after resident_idle_us without a job, or between jobs once
 * resident_life_us have passed since its launch, writing the status line as it goes.
 * A job's lanes live in shared memory while it runs, so the body reads and writes what it would read
 * and write in device memory. Every line is moved by one 16-byte volatile load or store: a line is
 * whole or absent, and the sequence number in each says which job it belongs to (no fences). Lane 0
 * watches the header; a new number and the warp reads the header and the first 32 input lines at
 * once, so a job of one warp arrives in one more round trip over the bus. A batched data kernel
 * (WP_DATA_SERVE) serves the same way as one block whose jobs are batch images of one job. */
#ifndef WP_RESIDENT_CUH
#define WP_RESIDENT_CUH

#include "wp_common.cuh"

struct wp_resident_lanes {
    unsigned long long in[WP_RESIDENT_LANES * WP_MAX_ELEMS], out[WP_RESIDENT_LANES * WP_MAX_ELEMS];
    int arg[WP_RESIDENT_LANES], src[WP_RESIDENT_LANES];
    unsigned char active[WP_RESIDENT_LANES];
};

__device__ __forceinline__ uint4 wp_line_load(const uint4 *p) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void wp_line_store(uint4 *p, unsigned a, unsigned b, unsigned c, unsigned d) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ unsigned long long wp_globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The watch, in one thread: the header line until it carries a sequence number other than `last` (and
 * not 0): true, the line in h. False once idle_us have passed since idle_from, or life_us since born.
 * (Watching one line keeps the bus quiet while it waits: measured faster than reading every line each
 * time round.) */
__device__ __forceinline__ bool wp_resident_watch(const uint4 *head, unsigned last, unsigned long long born,
                                                  unsigned long long idle_from, unsigned long long idle_us,
                                                  unsigned long long life_us, uint4 &h) {
    for (;;) {
        h = wp_line_load(head);
        if (h.x != last && h.x != 0) return true;
        const unsigned long long now = wp_globaltimer_ns();
        if (now - idle_from > 1000ull * idle_us || now - born > 1000ull * life_us) return false;
    }
}

/* What a look at a new job read: the header's three lines and, in each lane, input line `lane` (a
 * job of up to 32 lines is there whole). */
struct wp_resident_look {
    uint4 h, a, b, v;
};

/* Lane 0 watches the header (wp_resident_watch), then every lane reads the look at once: true. False
 * once the idle or life time is spent. */
__device__ __forceinline__ bool wp_resident_wait(const wp_warp_params &p, const uint4 *box, unsigned last,
                                                 unsigned long long born, unsigned long long idle_from,
                                                 wp_resident_look &k) {
    bool got = false;
    if (threadIdx.x == 0)
        got = wp_resident_watch(box + WP_RES_HEAD, last, born, idle_from, p.resident_idle_us, p.resident_life_us, k.h);
    if (!__shfl_sync(0xffffffffu, got, 0)) return false;
    k.h = wp_line_load(box + WP_RES_HEAD);
    k.a = wp_line_load(box + WP_RES_HEAD + 1);
    k.b = wp_line_load(box + WP_RES_HEAD + 2);
    k.v = wp_line_load(box + WP_RES_IN + threadIdx.x);
    return true;
}

/* The job seq from the look (and the lines past the first 32) into L and q; false (look again) while
 * a line of it is not yet there. */
__device__ __forceinline__ bool wp_resident_take(const uint4 *box, unsigned seq, const wp_resident_look &k,
                                                 wp_resident_lanes &L, wp_warp_params &q) {
    const unsigned lane = threadIdx.x;
    const int n = (int)(k.h.y & 0xffu), elems = (int)((k.h.y >> 8) & 0xffu);
    bool ok = k.h.x == seq && k.a.x == seq && k.b.x == seq && n >= 1 && n <= WP_RESIDENT_LANES && elems >= 1 &&
              elems <= WP_MAX_ELEMS;
    if (__all_sync(0xffffffffu, ok)) {
        for (int i = (int)lane; i < n * elems; i += WP_WARP_SIZE) {
            const uint4 v = i < WP_WARP_SIZE ? k.v : wp_line_load(box + WP_RES_IN + i);
            ok = ok && v.x == seq;
            L.in[i] = (unsigned long long)v.z | (unsigned long long)v.w << 32;
            L.out[i] = WP_WARP_POISON;
            if (i % elems == 0) L.arg[i / elems] = (int)v.y;
        }
    }
    if (!__all_sync(0xffffffffu, ok)) return false;
    L.active[lane] = (k.h.z >> lane) & 1u;
    L.src[lane] = -1;
    q.in = (unsigned long long)L.in;
    q.out = (unsigned long long)L.out;
    q.src = (unsigned long long)L.src;
    q.arg = (unsigned long long)L.arg;
    q.active = (unsigned long long)L.active;
    q.pred_a = (unsigned long long)k.a.y | (unsigned long long)k.a.z << 32;
    q.pred_b = (unsigned long long)k.b.y | (unsigned long long)k.b.z << 32;
    q.n = n;
    q.elems = elems;
    q.pred_kind = (int)(k.h.y >> 16);
    q.first = (int)k.a.w;
    q.second = (int)k.b.w;
    q.reserved = 0;
    q.resident = 0;
    __syncwarp();
    return true;
}

/* The kernel's life as a resident: jobs until told to leave or out of time. run(q) is the body a
 * plain launch runs on p. */
template <class Run> __device__ __forceinline__ void wp_resident_serve(const wp_warp_params &p, Run run) {
    __shared__ wp_resident_lanes L;
    if (threadIdx.x >= WP_WARP_SIZE) return; /* launched as one warp; any more threads would idle */
    uint4 *box = (uint4 *)p.resident;
    const unsigned long long born = wp_globaltimer_ns();
    unsigned long long idle_from = born;
    unsigned last = 0;
    wp_resident_look k;
    while (wp_resident_wait(p, box, last, born, idle_from, k)) {
        const unsigned seq = __shfl_sync(0xffffffffu, k.h.x, 0);
        if (seq == WP_RESIDENT_STOP) break;
        wp_warp_params q;
        if (!wp_resident_take(box, seq, k, L, q)) continue; /* a line not yet there: look again */
        run(q);
        __syncwarp();
        for (int i = (int)threadIdx.x; i < q.n * q.elems; i += WP_WARP_SIZE)
            wp_line_store(box + WP_RES_OUT + i, seq, (unsigned)L.src[i / q.elems], (unsigned)L.out[i],
                          (unsigned)(L.out[i] >> 32));
        __syncwarp();
        last = seq;
        idle_from = wp_globaltimer_ns();
    }
    if (threadIdx.x == 0) wp_line_store(box + WP_RES_STATUS, last, WP_RESIDENT_EXITED, 0, 0);
}

/* ---- a batched data kernel as a resident (kernels/wp_abi.h, WP_DATA_RESIDENT) ---- */

/* Thread 0 watches the header until it carries a sequence number other than `last` (and not 0); the
 * block then finds it (and the second header line) in h: true. False once the idle or life time is spent. */
__device__ __forceinline__ bool wp_data_resident_wait(const wp_data_params &p, const uint4 *box, unsigned last,
                                                      unsigned long long born, unsigned long long idle_from,
                                                      uint4 &h, uint4 &h2) {
    __shared__ uint4 s_h, s_h2;
    __shared__ int s_got;
    if (threadIdx.x == 0) {
        uint4 v;
        s_got = wp_resident_watch(box + WP_DRES_HEAD, last, born, idle_from, p.n, p.groups, v);
        s_h = v;
        if (s_got) s_h2 = wp_line_load(box + WP_DRES_HEAD + 1);
    }
    __syncthreads();
    const bool got = s_got != 0;
    h = s_h;
    h2 = s_h2;
    __syncthreads(); /* every thread has read them before thread 0 writes the next */
    return got;
}

/* Job seq's image lines into img, 12 bytes a line: true when every line carried seq (else look again). */
__device__ __forceinline__ bool wp_data_resident_take(const uint4 *box, unsigned seq, const uint4 &h,
                                                      const uint4 &h2, unsigned char *img) {
    const unsigned lines = h.y;
    bool ok = h2.x == seq && lines <= WP_DRES_IN_LINES && h.w <= WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES &&
              h2.z >= 1;
    for (unsigned i = threadIdx.x; ok && i < lines; i += blockDim.x) {
        const uint4 v = wp_line_load(box + WP_DRES_IN + i);
        ok = v.x == seq;
        unsigned *d = (unsigned *)(img + (unsigned long long)WP_DRES_LINE_BYTES * i);
        d[0] = v.y, d[1] = v.z, d[2] = v.w;
    }
    return __syncthreads_and(ok) != 0; /* also: the image is there for every thread */
}

/* The batched kernel's life as a resident: run(b) is its body over the batch parameters b (the image's
 * table and block starts, in the device buffer p.out). */
template <class Run> __device__ __forceinline__ void wp_data_resident_serve(const wp_data_params &p, Run run) {
    uint4 *box = (uint4 *)p.in;
    unsigned char *img = (unsigned char *)p.out;
    const unsigned long long born = wp_globaltimer_ns();
    unsigned long long idle_from = born;
    unsigned last = 0;
    uint4 h, h2;
    while (wp_data_resident_wait(p, box, last, born, idle_from, h, h2)) {
        const unsigned seq = h.x;
        if (seq == WP_RESIDENT_STOP) break;
        if (!wp_data_resident_take(box, seq, h, h2, img)) continue; /* a line not yet there: look again */
        wp_data_params b; /* the batch's parameters: only these three are read (wp_batch_job) */
        b.in = (unsigned long long)img;
        b.aux = (unsigned long long)(img + h2.y);
        b.n = h2.z;
        run(b);
        __syncthreads();
        for (unsigned i = threadIdx.x; i * WP_DRES_LINE_BYTES < h.w; i += blockDim.x) {
            const unsigned *s = (const unsigned *)(img + h.z + (unsigned long long)WP_DRES_LINE_BYTES * i);
            wp_line_store(box + WP_RES_OUT + i, seq, s[0], s[1], s[2]);
        }
        __syncthreads();
        last = seq;
        idle_from = wp_globaltimer_ns();
    }
    if (threadIdx.x == 0) wp_line_store(box + WP_RES_STATUS, last, WP_RESIDENT_EXITED, 0, 0);
}

/* A warp kernel's body: BODY(p) for a plain launch, or (built with -DWP_RESIDENT: the spec's resident
 * variant, server/compile/jit.c) the resident's loop over BODY(job) when p.resident is set. The plain build
 * leaves the loop out: it costs NVRTC about as much again as the kernel itself. */
#ifdef WP_RESIDENT
#define WP_WARP_SERVE(p, ...)                                                                                  \
    do {                                                                                                       \
        if ((p).resident)                                                                                      \
            wp_resident_serve(p, [](const wp_warp_params &q_) { __VA_ARGS__(q_); });                          \
        else                                                                                                   \
            __VA_ARGS__(p);                                                                                    \
    } while (0)
/* A batched data kernel's body (WP_F_RESIDENT): BODY(p) for a plain launch, or (-DWP_RESIDENT) the
 * resident's loop over BODY(batch) when p.reserved is WP_DATA_RESIDENT. */
#define WP_DATA_SERVE(p, ...)                                                                                  \
    do {                                                                                                       \
        if ((p).reserved == WP_DATA_RESIDENT)                                                                  \
            wp_data_resident_serve(p, [](const wp_data_params &b_) { __VA_ARGS__(b_); });                     \
        else                                                                                                   \
            __VA_ARGS__(p);                                                                                    \
    } while (0)
#else
#define WP_WARP_SERVE(p, ...) __VA_ARGS__(p)
#define WP_DATA_SERVE(p, ...) __VA_ARGS__(p)
#endif

#endif
