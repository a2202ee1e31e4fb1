/* reduce.cu — the reduction kernels over packed data (wp_data_params, wp_abi.h): device_reduce,
 * argmin/argmax, warp_reduce and block_reduce (groups of WIDTH or BLOCK elements) and
 * segmented_reduce (groups by offsets). Every kernel is kernel<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op>:
 * T the element type, A the accumulator (f32 for f16/bf16 unless native), Op a functor over A.
 * The combining order is docs/semantics.md's and kernels/reduce.c's. */
#include "wp_block.cuh"
#include "wp_map.cuh"
#include "wp_resident.cuh"

/* Element -> accumulator: the value itself, or (value, index) for argmin/argmax. */
template <typename T, typename A> struct wp_make_value {
    typedef A acc;
    static WP_DEV A run(T x, unsigned long long) { return wp_convert<A>(x); }
};
template <typename T, typename A> struct wp_make_arg {
    typedef wp_argval<A> acc;
    static WP_DEV wp_argval<A> run(T x, unsigned long long i) {
        wp_argval<A> r;
        r.v = wp_convert<A>(x);
        r.i = (long long)i;
        return r;
    }
};

/* One pass over the whole array in tiles of WP_REDUCE_UNROLL * BLOCK 16-byte vectors (wp_abi.h): block
 * b takes tiles b, b + G, b + 2G, ... (16 KiB contiguous at BLOCK 256: CUB's tile too), thread t of a
 * tile its vectors t, t + BLOCK, ... (elements in order; the first element starts the fold; the partial
 * last vector is the thread's whose progression reaches index n / V). Each block reduces its threads
 * (tree by STRAT) and writes its partial. Tickets: the last block of each group of WP_TICKET_GROUP to finish
 * (atomic counter per group) bumps the top counter, and the last group's last block folds all the
 * partials (thread t: partials t, t + BLOCK, ...; then the block tree) and writes out[0] — two levels
 * so thousands of blocks finishing together do not queue on one address. G is a function of n and
 * BLOCK (kernels/data.c), which fixes the order for every device. atomic: blocks combine into out[0]
 * (pre-set to the identity). docs/semantics.md and kernels/reduce.c follow the same order. */
#define WP_TICKET_GROUP 256 /* blocks per ticket counter: up to 256 share one address */
/* WP_REDUCE_UNROLL (wp_abi.h): vectors each thread has in flight (4 x 16 bytes keeps 32 registers: 8
 * blocks of 256 per SM). */

/* Inputs of at least this many bytes are streamed: read with ld.global.nc.L1::no_allocate.L2::256B
 * (no L1 line, 256-byte L2 fetches), measured 0.3-4 % faster than __ldg from 2^24 f32 up on H100.
 * Smaller ones, which a repeated reduce finds in L2, are read through __ldg: streamed, 16 MiB measured
 * up to 30 % slower (bench/RESULTS.md). Only the load instruction changes, never the order. */
#ifndef WP_REDUCE_STREAM_BYTES
#define WP_REDUCE_STREAM_BYTES (32ull << 20)
#endif
template <typename T, bool STREAM>
WP_DEV void wp_load_stream(const T *base, unsigned long long vec, T (&x)[16 / sizeof(T)]) {
    const uint4 *p = (const uint4 *)base + vec;
    uint4 w;
#ifndef WP_RESIDENT /* a resident reads its jobs' inputs with plain loads (wp_ldg) */
    if constexpr (STREAM)
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
            : "l"(p));
    else
#endif
        w = wp_ldg(p);
    memcpy(x, &w, 16);
}

/* Release/acquire at GPU scope for the ticket handoff (lighter than __threadfence's fence.sc). */
WP_DEV void wp_fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

/* One thread's fold: from vector `base` (its first, in tile b), tiles `step` = G * U * BLOCK vectors
 * apart; in each, vectors base, base + BLOCK, ..., base + (U - 1) * BLOCK, in that order, all U loads in
 * flight together (with a map over y, the same vectors of in2 beside them). A partial last tile: the
 * vectors below nvec (1 .. U - 1), loaded together too (predicated), never one round trip each. `has`
 * says whether acc holds a value yet. */
template <typename T, int BLOCK, bool STREAM, class Op, class Make, class Map>
WP_DEV void wp_fold_tiles(const T *in, const T *in2, unsigned long long base, unsigned long long nvec,
                          unsigned long long step, typename Make::acc &acc, bool &has, Op op) {
    constexpr int V = 16 / sizeof(T), U = WP_REDUCE_UNROLL;
    for (; base + (U - 1) * BLOCK < nvec; base += step) {
        T x[U][V], y[U][V];
#pragma unroll
        for (int u = 0; u < U; u++) {
            wp_load_stream<T, STREAM>(in, base + u * BLOCK, x[u]);
            if constexpr (Map::uses_y) wp_load_stream<T, STREAM>(in2, base + u * BLOCK, y[u]);
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int j = 0; j < V; j++) {
                const typename Make::acc e =
                    Make::run(wp_map_pick<Map>(x[u], y[u], j), (base + u * BLOCK) * V + j);
                acc = (u == 0 && j == 0 && !has) ? e : op(acc, e);
            }
        has = true;
    }
    if (base < nvec) { /* the last tile, partial: 1 .. U - 1 of this thread's vectors are below nvec */
        T x[U - 1][V], y[U - 1][V];
#pragma unroll
        for (int u = 0; u < U - 1; u++)
            if (u == 0 || base + u * BLOCK < nvec) {
                wp_load_stream<T, STREAM>(in, base + u * BLOCK, x[u]);
                if constexpr (Map::uses_y) wp_load_stream<T, STREAM>(in2, base + u * BLOCK, y[u]);
            }
#pragma unroll
        for (int u = 0; u < U - 1; u++)
            if (u == 0 || base + u * BLOCK < nvec)
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const typename Make::acc e =
                        Make::run(wp_map_pick<Map>(x[u], y[u], j), (base + u * BLOCK) * V + j);
                    acc = (u == 0 && j == 0 && !has) ? e : op(acc, e);
                }
        has = true;
    }
}

/* Map (wp_map.cuh): applied to each element (with y from p.in2 when it reads it) before Make. */
template <typename T, int BLOCK, int STRAT, class Op, class Make, class Map = wp_map_none>
WP_DEV void wp_device_reduce_run(const wp_data_params &p, const unsigned bid, const unsigned G, Op op) {
    typedef typename Make::acc Acc;
    constexpr int V = 16 / sizeof(T);
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(Acc)];
    __shared__ bool is_last;
    Acc *shared = (Acc *)shared_raw;
    const T *in = (const T *)p.in, *in2 = (const T *)p.in2;
    const unsigned long long n = p.n, nvec = n / V, nv = (n + V - 1) / V;
    const int t = threadIdx.x;
    Acc acc = wp_zero<Acc>();
    bool has = false;
    const bool stream = n * sizeof(T) >= WP_REDUCE_STREAM_BYTES;
    constexpr unsigned long long TV = (unsigned long long)WP_REDUCE_UNROLL * BLOCK; /* vectors in a tile */
    if (stream) /* one loop each way: the load instruction is chosen once, not per load */
        wp_fold_tiles<T, BLOCK, true, Op, Make, Map>(in, in2, bid * TV + t, nvec, G * TV, acc, has, op);
    else
        wp_fold_tiles<T, BLOCK, false, Op, Make, Map>(in, in2, bid * TV + t, nvec, G * TV, acc, has, op);
    /* the partial last vector, element by element, by the thread whose progression reaches it */
    if ((nvec % TV) % BLOCK == (unsigned)t && (nvec / TV) % G == bid)
        for (unsigned long long i = nvec * V; i < n; i++) {
            const Acc e = Make::run(wp_map_at<Map>(p, in, i), i);
            acc = has ? op(acc, e) : e;
            has = true;
        }
    wp_grid_launch_next(); /* this block reads nothing more: the next kernel in the stream may be placed */
    const unsigned long long left = nv - (unsigned long long)bid * TV; /* threads with a first vector */
    const int valid = left < BLOCK ? (int)left : BLOCK;
    Acc *scratch_partials = (Acc *)p.scratch;
    Acc *gmem = (Acc *)(p.scratch + (unsigned long long)WP_REDUCE_GRID_MAX * 16) + (unsigned long long)bid * BLOCK;
    Acc *out = (Acc *)p.out;
    /* atomic: blocks reduce with shuffles and only their results meet in atomics */
    constexpr int BSTRAT = STRAT == WP_STRAT_ATOMIC ? WP_STRAT_SHFL_DOWN : STRAT;
    const Acc ident = wp_zero<Acc>(); /* unused by BSTRAT */
    Acc r = wp_group_reduce<Acc, BLOCK, BLOCK, BSTRAT, Op>(acc, valid, op, shared, gmem, ident);
    if (G == 1) {
        if (t == 0) *out = r;
        return;
    }
    if constexpr (STRAT == WP_STRAT_ATOMIC) {
        if (t == 0) wp_atomic_combine(out, r, op);
        return;
    } else {
        if (t == 0) { /* counter[0]: top; counter[1 + g]: group g */
            unsigned *counters = (unsigned *)p.counter;
            const unsigned group = bid / WP_TICKET_GROUP, groups = (G + WP_TICKET_GROUP - 1) / WP_TICKET_GROUP;
            const unsigned in_group = G - group * WP_TICKET_GROUP < WP_TICKET_GROUP ? G - group * WP_TICKET_GROUP : WP_TICKET_GROUP;
            scratch_partials[bid] = r;
            wp_fence_acq_rel_gpu(); /* release: the partial before the ticket */
            bool last = atomicAdd(&counters[1 + group], 1u) == in_group - 1;
            if (last) {
                counters[1 + group] = 0; /* nobody else counts here any more: ready for the next launch */
                if (groups > 1) {
                    wp_fence_acq_rel_gpu(); /* the group's partials (acquired) on to the top ticket (released) */
                    last = atomicAdd(&counters[0], 1u) == groups - 1;
                    if (last) counters[0] = 0;
                }
                if (last) wp_fence_acq_rel_gpu(); /* acquire: every partial; the barrier passes it to the block */
            }
            is_last = last;
        }
        __syncthreads();
        if (!is_last) return;
        /* Thread t folds partials t, t + BLOCK, ... in order (device-coherent loads, four in flight). */
        Acc part = wp_zero<Acc>();
        for (unsigned i = t; i < G; i += 4 * BLOCK) {
            Acc x[4];
#pragma unroll
            for (int u = 0; u < 4; u++) x[u] = i + u * BLOCK < G ? wp_ld_gpu(&scratch_partials[i + u * BLOCK]) : wp_zero<Acc>();
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (i + u * BLOCK < G) part = (u == 0 && i == (unsigned)t) ? x[u] : op(part, x[u]);
        }
        r = wp_group_reduce<Acc, BLOCK, BLOCK, BSTRAT, Op>(part, G < BLOCK ? (int)G : BLOCK, op, shared, gmem, ident);
        if (t == 0) *out = r;
    }
}

/* 2048 threads per SM (8 blocks of 256) keep enough loads in flight: at most 32 registers a thread.
 * A map over two inputs (wp_map.cuh) has twice the loads in flight: half the blocks. */
#define WP_REDUCE_MIN_BLOCKS(BLOCK) ((BLOCK) >= 64 ? 2048 / (BLOCK) : 32)
#define WP_REDUCE_MIN_BLOCKS_OP(BLOCK, Op) (WP_REDUCE_MIN_BLOCKS(BLOCK) / wp_map_inputs<Op>::value)
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK, WP_REDUCE_MIN_BLOCKS_OP(BLOCK, Op)) wp_device_reduce(wp_data_params p) {
    wp_grid_wait();
    typedef wp_split<Op> S;
    wp_device_reduce_run<T, BLOCK, STRAT, typename S::op, wp_make_value<T, A>, typename S::map>(p, blockIdx.x, gridDim.x,
                                                                                               typename S::op());
}

/* argmin/argmax: (value, first index) under wp_op_arg's total order, so any order gives the same. */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_argmin(wp_data_params p) {
    wp_grid_wait();
    wp_device_reduce_run<T, BLOCK, STRAT, wp_op_arg<A, false>, wp_make_arg<T, A>, typename wp_split<Op>::map>(
        p, blockIdx.x, gridDim.x, wp_op_arg<A, false>());
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_argmax(wp_data_params p) {
    wp_grid_wait();
    wp_device_reduce_run<T, BLOCK, STRAT, wp_op_arg<A, true>, wp_make_arg<T, A>, typename wp_split<Op>::map>(
        p, blockIdx.x, gridDim.x, wp_op_arg<A, true>());
}

/* Groups of GROUP consecutive elements, one per thread: out[g] = tree of group g (its first
 * min(GROUP, n - g*GROUP) elements), rounded to T. */
template <typename T, typename A, int GROUP, int BLOCK, int STRAT, class OpM>
WP_DEV void wp_group_reduce_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op;
    typedef typename wp_split<OpM>::map Map;
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(A)];
    A *shared = (A *)shared_raw;
    Op op;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const unsigned long long n = p.n, i = (unsigned long long)bid * BLOCK + threadIdx.x;
    const unsigned long long g = i / GROUP, gbase = g * GROUP;
    const int valid = gbase >= n ? 0 : (n - gbase < GROUP ? (int)(n - gbase) : GROUP);
    const A v = i < n ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>();
    A *gmem = (A *)p.scratch + (unsigned long long)bid * BLOCK;
    const A r = wp_group_reduce<A, GROUP, BLOCK, STRAT, Op>(v, valid, op, shared, gmem, wp_from_bits64<A>(p.init));
    if ((threadIdx.x & (GROUP - 1)) == 0 && valid > 0) out[g] = wp_convert<T>(r);
}

/* warp_reduce at a width W that is not a power of two: logical warps (wp_block.cuh). Warp w of the grid
 * takes R = WP_LW_ROWS rows of LANES elements from w * R * LANES, all R loaded before the first shuffle;
 * lane `lane` of row r holds element w * R * LANES + r * LANES + lane, of group element / W. */
template <typename T, typename A, int W, int BLOCK, int STRAT, class OpM>
WP_DEV void wp_lw_reduce_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op; /* a map (wp_map.cuh) applies where elements are read */
    typedef typename wp_split<OpM>::map Map;
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(A)];
    A *shared = (A *)shared_raw;
    constexpr int R = WP_LW_ROWS, LANES = wp_lw<W>::LANES;
    Op op;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const unsigned long long n = p.n;
    const int lane = wp_lane();
    const bool holds = lane < LANES;
    const int l = holds ? lane % W : 0;
    /* the first element of this lane's logical warp in row 0 */
    const unsigned long long base =
        ((unsigned long long)bid * BLOCK + threadIdx.x) / 32 * (unsigned long long)(R * LANES) + (lane - l);
    A v[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const unsigned long long i = base + (unsigned long long)(r * LANES + l);
        v[r] = holds && i < n ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>();
    }
    A *gmem = (A *)p.scratch + (unsigned long long)bid * BLOCK;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const unsigned long long gbase = base + (unsigned long long)(r * LANES);
        const int valid = !holds || gbase >= n ? 0 : (n - gbase < W ? (int)(n - gbase) : W);
        const A res = wp_lw_reduce<A, W, BLOCK, STRAT, Op>(v[r], l, valid, op, shared, gmem, wp_from_bits64<A>(p.init));
        if (l == 0 && valid > 0) out[gbase / W] = wp_convert<T>(res);
    }
}

/* Groups of WIDTH: warp segments for a power of two, logical warps for any other width. */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, class Op>
WP_DEV void wp_width_reduce_run(const wp_data_params &p, const unsigned bid) {
    if constexpr ((WIDTH & (WIDTH - 1)) == 0)
        wp_group_reduce_run<T, A, WIDTH, BLOCK, STRAT, Op>(p, bid);
    else
        wp_lw_reduce_run<T, A, WIDTH, BLOCK, STRAT, Op>(p, bid);
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_warp_reduce(wp_data_params p) {
    wp_grid_entry();
    wp_width_reduce_run<T, A, WIDTH, BLOCK, STRAT, Op>(p, blockIdx.x);
}
/* block_reduce with a group of G threads, G not a power of two of at least 32 (wp_block.cuh, "blocks of
 * any size"): block b reduces elements b * G .. b * G + G - 1 in a block of WP_ROUND32(G) threads. */
template <typename T, typename A, int G, int STRAT, class OpM>
WP_DEV void wp_anyblock_reduce_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op; /* a map (wp_map.cuh) applies where elements are read */
    typedef typename wp_split<OpM>::map Map;
    constexpr int L = WP_ROUND32(G);
    __shared__ __align__(16) unsigned char shared_raw[L * sizeof(A)];
    A *shared = (A *)shared_raw;
    Op op;
    const T *in = (const T *)p.in;
    const unsigned long long n = p.n, gbase = (unsigned long long)bid * G, i = gbase + threadIdx.x;
    const int gvalid = gbase >= n ? 0 : (n - gbase < G ? (int)(n - gbase) : G);
    const bool mine = threadIdx.x < G;
    const A v = mine && i < n ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>();
    A *gmem = (A *)p.scratch + (unsigned long long)bid * L;
    const A r = wp_anyblock_reduce<A, G, STRAT, Op>(v, mine ? gvalid : 0, op, shared, gmem, wp_from_bits64<A>(p.init));
    if (threadIdx.x == 0 && gvalid > 0) ((T *)p.out)[bid] = wp_convert<T>(r);
}

/* Groups of BLOCK: the block itself for a power of two of at least 32, else a rounded-up block. */
template <typename T, typename A, int BLOCK, int STRAT, class Op>
WP_DEV void wp_block_reduce_any_run(const wp_data_params &p, const unsigned bid) {
    if constexpr (wp_is_pow2_block<BLOCK>::value)
        wp_group_reduce_run<T, A, BLOCK, BLOCK, STRAT, Op>(p, bid);
    else
        wp_anyblock_reduce_run<T, A, BLOCK, STRAT, Op>(p, bid);
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(WP_ROUND32(BLOCK)) wp_block_reduce(wp_data_params p) {
    wp_grid_entry();
    wp_block_reduce_any_run<T, A, BLOCK, STRAT, Op>(p, blockIdx.x);
}

/* One warp per segment [offsets[s], offsets[s+1]): lane l folds elements start + l, start + l + 32, ...
 * (the first starts the fold), then tree(min(32, length)) in lane 0. An empty segment gets p.init
 * (the identity; zero bits for an expression). */
template <typename T, typename A, int BLOCK, int STRAT, class OpM>
WP_DEV void wp_segmented_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op;
    typedef typename wp_split<OpM>::map Map;
    Op op;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const unsigned long long *offsets = (const unsigned long long *)p.aux;
    const unsigned long long seg = ((unsigned long long)bid * BLOCK + threadIdx.x) / 32;
    if (seg >= p.groups) return; /* whole warps leave together */
    const int lane = wp_lane();
    const unsigned long long start = offsets[seg], end = offsets[seg + 1];
    const unsigned long long len = end - start;
    A acc = wp_zero<A>();
    if ((unsigned long long)lane < len) {
        acc = wp_convert<A>(wp_map_at<Map>(p, in, start + lane));
        for (unsigned long long i = start + lane + 32; i < end; i += 32)
            acc = op(acc, wp_convert<A>(wp_map_at<Map>(p, in, i)));
    }
    const A r = wp_warp_reduce_valid<A, 32, STRAT, Op>(acc, len < 32 ? (int)len : 32, op);
    if (lane == 0) out[seg] = len ? wp_convert<T>(r) : wp_convert<T>(wp_from_bits64<A>(p.init));
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_segmented_reduce(wp_data_params p) {
    wp_grid_entry();
    wp_segmented_run<T, A, BLOCK, STRAT, Op>(p, blockIdx.x);
}

/* ---- batched launches (server/batch_reduce.c): many small jobs of one kernel in one grid; block b
 * runs its job (wp_batch_job) through the very code path the job takes alone. device_reduce's, argmin's
 * and argmax's serve as residents too (WP_DATA_SERVE, templates/wp_resident.cuh). ---- */
/* A resident build is one block on the device: its loop needs registers more than blocks an SM (the
 * full-occupancy bound spills it). Registers never change a result's bits. */
#ifdef WP_RESIDENT
#define WP_REDUCE_BATCH_MIN_BLOCKS(BLOCK, Op) 1
#else
#define WP_REDUCE_BATCH_MIN_BLOCKS(BLOCK, Op) WP_REDUCE_MIN_BLOCKS_OP(BLOCK, Op)
#endif
/* The body the three share: block b runs its job (wp_batch_job) through wp_device_reduce_run with the
 * accumulator's operator OpA and element maker Make; a resident build loops over its jobs
 * (WP_DATA_SERVE). */
template <typename T, int BLOCK, int STRAT, class OpA, class Make, class Map>
WP_DEV void wp_device_reduce_batched(const wp_data_params &p) {
    WP_DATA_SERVE(p, [](const wp_data_params &b) {
        wp_data_params q;
        unsigned G;
        const unsigned bid = wp_batch_job(b, q, G);
        wp_device_reduce_run<T, BLOCK, STRAT, OpA, Make, Map>(q, bid, G, OpA());
    });
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK, WP_REDUCE_BATCH_MIN_BLOCKS(BLOCK, Op)) wp_device_reduce_batch(wp_data_params p) {
    typedef wp_split<Op> S;
    wp_device_reduce_batched<T, BLOCK, STRAT, typename S::op, wp_make_value<T, A>, typename S::map>(p);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_argmin_batch(wp_data_params p) {
    wp_device_reduce_batched<T, BLOCK, STRAT, wp_op_arg<A, false>, wp_make_arg<T, A>, typename wp_split<Op>::map>(p);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_argmax_batch(wp_data_params p) {
    wp_device_reduce_batched<T, BLOCK, STRAT, wp_op_arg<A, true>, wp_make_arg<T, A>, typename wp_split<Op>::map>(p);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_warp_reduce_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_width_reduce_run<T, A, WIDTH, BLOCK, STRAT, Op>(q, bid);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(WP_ROUND32(BLOCK)) wp_block_reduce_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_block_reduce_any_run<T, A, BLOCK, STRAT, Op>(q, bid);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_segmented_reduce_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_segmented_run<T, A, BLOCK, STRAT, Op>(q, bid);
}

/* The statistics and norms (op mean, var, std, norm1, norm2, norminf, count_nonzero): this pass over
 * their accumulators. */
#include "stats.cuh"
