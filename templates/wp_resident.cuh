/* wp_resident.cuh — a warp kernel that stays on the device: launched as one warp with p.resident set,
 * it takes jobs from the mailbox in mapped host memory that kernels/wp_abi.h lays out, runs each
 * through the same body a plain launch runs, and answers in the mailbox's out lines; it leaves when
 * told to (WP_RESIDENT_STOP), after resident_idle_us without a job, or between jobs once
 * resident_life_us have passed since its launch, writing the status line as it goes.
 * A job's lanes live in shared memory while it runs, so the body reads and writes what it would read
 * and write in device memory. Every line is moved by one 16-byte volatile load or store: a line is
 * whole or absent, and the sequence number in each says which job it belongs to (no fences). A
 * thread's loads from host memory go over the bus one after another, the lanes' at once, so each lane
 * loads one line where it can. Each lane watches its input line and lane 0 the header too, so a job
 * of one warp arrives with the look that sees its header. A batched data kernel
 * (WP_DATA_SERVE) serves the same way as one block whose jobs are batch images of one job, sent as
 * their words that are not zero; its first warp watches the header and the first 31 words together, so
 * a small image arrives with the look that sees its header. */
#ifndef WP_RESIDENT_CUH
#define WP_RESIDENT_CUH

#include "wp_common.cuh"

/* The host flushes what the watches read at every look (server/backend/resident_box.c): a line a lane. */
static_assert(WP_DRES_WATCH_LINES == WP_WARP_SIZE && WP_RES_WATCH_IN == WP_WARP_SIZE, "a watched line a lane");

struct wp_resident_lanes {
    unsigned long long in[WP_RESIDENT_LANES * WP_MAX_ELEMS], out[WP_RESIDENT_LANES * WP_MAX_ELEMS];
    int arg[WP_RESIDENT_LANES], src[WP_RESIDENT_LANES];
    unsigned char active[WP_RESIDENT_LANES];
};

__device__ __forceinline__ uint4 wp_line_load(const uint4 *p) {
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
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

/* Whether a resident's time is spent: idle_us since idle_from (its last job), or life_us since born. */
__device__ __forceinline__ bool wp_resident_spent(unsigned long long born, unsigned long long idle_from,
                                                  unsigned long long idle_us, unsigned long long life_us) {
    const unsigned long long now = wp_globaltimer_ns();
    return now - idle_from > 1000ull * idle_us || now - born > 1000ull * life_us;
}

/* What a look at a new job read: the header's three lines and, in each lane, input line `lane` (a
 * job of up to 32 lines is there whole). */
struct wp_resident_look {
    uint4 h, a, b, v;
};

__device__ __forceinline__ uint4 wp_line_from(const uint4 &v, int lane) {
    return make_uint4(__shfl_sync(0xffffffffu, v.x, lane), __shfl_sync(0xffffffffu, v.y, lane),
                      __shfl_sync(0xffffffffu, v.z, lane), __shfl_sync(0xffffffffu, v.w, lane));
}

/* The watch: at each look every lane reads its input line, and lane 0 the header too, so that a job
 * of up to 32 lines is there at the look that sees its header (a thread's loads from host memory go
 * over the bus one after another, the lanes' at once: lane 0's two make a look about half as long
 * again as one line's, 1.9 against 1.1-1.4 us, where reading the job after its header took another
 * round trip). A look that caught the host while it wrote is made again. Then lanes 0 and 1 read the
 * header's other two lines unless the header says it all (WP_RES_SHORT: a and b are made from it), and
 * the warp shares the header lines: true. False once the idle or life time is spent. */
__device__ __forceinline__ bool wp_resident_wait(const wp_warp_params &p, const uint4 *box, unsigned last,
                                                 unsigned long long born, unsigned long long idle_from,
                                                 wp_resident_look &k) {
    const unsigned lane = threadIdx.x;
    for (;;) {
        k.v = wp_line_load(box + WP_RES_IN + lane);
        uint4 hh = make_uint4(0, 0, 0, 0);
        if (lane == 0) hh = wp_line_load(box + WP_RES_HEAD);
        k.h = wp_line_from(hh, 0);
        if (k.h.x != last && k.h.x != 0) {
            const unsigned lines = (k.h.y & 0xffu) * ((k.h.y >> 8) & 0xffu);
            if (k.h.x == WP_RESIDENT_STOP || __all_sync(0xffffffffu, lane >= lines || k.v.x == k.h.x)) break;
            continue;
        }
        if (__shfl_sync(0xffffffffu, wp_resident_spent(born, idle_from, p.resident_idle_us, p.resident_life_us), 0))
            return false;
    }
    const bool short_head = k.h.y & WP_RES_SHORT; /* no constants: the other two lines are not needed */
    uint4 ab = make_uint4(k.h.x, 0, 0, (unsigned)(int)(short)(k.h.w & 0xffffu));
    if (!short_head && lane < 2) ab = wp_line_load(box + WP_RES_HEAD + 1 + lane);
    k.a = short_head ? ab : wp_line_from(ab, 0);
    k.b = short_head ? make_uint4(k.h.x, 0, 0, (unsigned)(int)(short)(k.h.w >> 16)) : wp_line_from(ab, 1);
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
    q.pred_kind = (int)((k.h.y & ~WP_RES_SHORT) >> 16);
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

/* Warp 0 watches: at each look lane 0 reads the header and lane l the word line l - 1, one load a
 * lane, so that a job of up to 31 words is there at the look that sees its header (a thread's loads
 * from host memory go one after another, the lanes' at once). True once the header is new (not `last`,
 * not 0) and every word line it names below 31 carries its number (a look that caught the host while
 * it wrote is made again); v the lane's line (lane 0's: the header). False once the idle or life time
 * is spent. */
__device__ __forceinline__ bool wp_data_resident_watch(const uint4 *box, unsigned last, unsigned long long born,
                                                       unsigned long long idle_from, unsigned long long idle_us,
                                                       unsigned long long life_us, uint4 &v) {
    const unsigned lane = threadIdx.x;
    for (;;) {
        v = wp_line_load(box + (lane == 0 ? WP_DRES_HEAD : WP_DRES_IN + lane - 1));
        const uint4 h = wp_line_from(v, 0);
        if (h.x != last && h.x != 0) {
            const unsigned words = WP_DRES_WORDS(h.y);
            if (h.x == WP_RESIDENT_STOP || __all_sync(0xffffffffu, lane == 0 || lane > words || v.x == h.x))
                return true;
            continue;
        }
        if (__shfl_sync(0xffffffffu, wp_resident_spent(born, idle_from, idle_us, life_us), 0)) return false;
    }
}

/* Warp 0 watches (wp_data_resident_watch); the block then finds the header in h and the word lines it
 * read in pre (word i in pre[i + 1]): true. False once the idle or life time is spent. */
__device__ __forceinline__ bool wp_data_resident_wait(const wp_data_params &p, const uint4 *box, unsigned last,
                                                      unsigned long long born, unsigned long long idle_from, uint4 &h,
                                                      uint4 *pre) {
    __shared__ int s_got;
    if (threadIdx.x < WP_WARP_SIZE) {
        uint4 v;
        const bool got = wp_data_resident_watch(box, last, born, idle_from, p.n, p.groups, v);
        pre[threadIdx.x] = v;
        if (threadIdx.x == 0) s_got = got;
    }
    __syncthreads();
    const bool got = s_got != 0;
    h = pre[0];
    __syncthreads(); /* every thread has read them before warp 0 writes the next */
    return got;
}

/* A data job's header (kernels/wp_abi.h), unpacked. */
struct wp_data_head {
    unsigned seq, words, jobs, first_at, len, answer_at, answer_len;
};
__device__ __forceinline__ wp_data_head wp_data_head_of(const uint4 &h) {
    return {h.x,
            WP_DRES_WORDS(h.y),
            WP_DRES_JOBS(h.y),
            WP_DRES_FIRST_AT(h.z),
            WP_DRES_LEN(h.z),
            WP_DRES_ANSWER_AT(h.w),
            WP_DRES_ANSWER_LEN(h.w)};
}

/* Job d.seq's image into img: its bytes zeroed (to the next multiple of 8), then each word sent at its
 * place: the first 31 from the watch's lines (pre), the rest read now (each thread's first before the
 * zeroing, so the bus's round trip overlaps it). True when every line carried the job's number (else
 * look again). */
__device__ __forceinline__ bool wp_data_resident_take(const uint4 *box, const wp_data_head &d, const uint4 *pre,
                                                      unsigned char *img) {
    bool ok = d.words <= WP_DRES_IN_LINES && d.len <= WP_DRES_IMAGE_MAX &&
              d.answer_len <= WP_DRES_OUT_LINES * WP_DRES_LINE_BYTES && d.jobs >= 1;
    const unsigned seen = WP_DRES_WATCH_LINES - 1; /* words the watch read (one lane, the header) */
    uint4 first = make_uint4(0, 0, 0, 0);
    if (ok && threadIdx.x >= seen && threadIdx.x < d.words) first = wp_line_load(box + WP_DRES_IN + threadIdx.x);
    unsigned long long *w = (unsigned long long *)img;
    for (unsigned i = threadIdx.x; ok && i < (d.len + WP_DRES_WORD_BYTES - 1) / WP_DRES_WORD_BYTES; i += blockDim.x)
        w[i] = 0;
    __syncthreads();
    for (unsigned i = threadIdx.x; ok && i < d.words; i += blockDim.x) {
        const uint4 v = i < seen ? pre[i + 1] : i == threadIdx.x ? first : wp_line_load(box + WP_DRES_IN + i);
        ok = v.x == d.seq && v.y % WP_DRES_WORD_BYTES == 0 && v.y < d.len;
        if (ok) w[v.y / WP_DRES_WORD_BYTES] = (unsigned long long)v.z | (unsigned long long)v.w << 32;
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
    __shared__ uint4 pre[WP_WARP_SIZE]; /* the watch's lines: the header, then words 0..30 */
    uint4 h;
    while (wp_data_resident_wait(p, box, last, born, idle_from, h, pre)) {
        const wp_data_head d = wp_data_head_of(h);
        if (d.seq == WP_RESIDENT_STOP) break;
        if (!wp_data_resident_take(box, d, pre, img)) continue; /* a line not yet there: look again */
        wp_data_params b; /* the batch's parameters: only these three are read (wp_batch_job) */
        b.in = (unsigned long long)img;
        b.aux = (unsigned long long)(img + d.first_at);
        b.n = d.jobs;
        run(b);
        __syncthreads();
        for (unsigned i = threadIdx.x; i * WP_DRES_LINE_BYTES < d.answer_len; i += blockDim.x) {
            const unsigned *s = (const unsigned *)(img + d.answer_at + (unsigned long long)WP_DRES_LINE_BYTES * i);
            wp_line_store(box + WP_RES_OUT + i, d.seq, s[0], s[1], s[2]);
        }
        __syncthreads();
        last = d.seq;
        idle_from = wp_globaltimer_ns();
    }
    if (threadIdx.x == 0) wp_line_store(box + WP_RES_STATUS, last, WP_RESIDENT_EXITED, 0, 0);
}

/* A warp kernel's body: BODY(p) for a plain launch, or (built with -DWP_RESIDENT: the spec's resident
 * variant, server/compile/jit.c) the resident's loop over BODY(job) when p.resident is set. The plain build
 * leaves the loop out: it costs NVRTC about as much again as the kernel itself. */
#ifdef WP_RESIDENT
#define WP_WARP_SERVE(p, ...)                                                                                          \
    do {                                                                                                               \
        if ((p).resident)                                                                                              \
            wp_resident_serve(p, [](const wp_warp_params &q_) { __VA_ARGS__(q_); });                                   \
        else                                                                                                           \
            __VA_ARGS__(p);                                                                                            \
    } while (0)
/* A batched data kernel's body (WP_F_RESIDENT): BODY(p) for a plain launch, or (-DWP_RESIDENT) the
 * resident's loop over BODY(batch) when p.reserved is WP_DATA_RESIDENT. */
#define WP_DATA_SERVE(p, ...)                                                                                          \
    do {                                                                                                               \
        if ((p).reserved == WP_DATA_RESIDENT)                                                                          \
            wp_data_resident_serve(p, [](const wp_data_params &b_) { __VA_ARGS__(b_); });                              \
        else                                                                                                           \
            __VA_ARGS__(p);                                                                                            \
    } while (0)
#else
#define WP_WARP_SERVE(p, ...) __VA_ARGS__(p)
#define WP_DATA_SERVE(p, ...) __VA_ARGS__(p)
#endif

#endif
