/* scan.cu — the scan kernels over packed data (wp_data_params, wp_abi.h): warp_scan and block_scan
 * (each group of WIDTH or BLOCK elements scanned on its own) and device_scan (the whole array, one
 * pass, decoupled look-back with a fixed fold so floats come out the same every run).
 * kernel<T, A, WIDTH, BLOCK, STRAT, EXCLUSIVE, Op>; the order is docs/semantics.md's and
 * kernels/scan.c's. */
#include "wp_block.cuh"
#include "wp_map.cuh"

/* One element per thread. inclusive: op(init, scan) with an init, else the scan. exclusive: the
 * group's first element gets init (the identity when none was given), element i > 0 op(init,
 * scan[i-1]) with an init, else scan[i-1]. */
template <typename T, typename A, int GROUP, int BLOCK, int STRAT, int EXCL, class OpM>
WP_DEV void wp_group_scan_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op; /* a map (wp_map.cuh) applies where elements are read */
    typedef typename wp_split<OpM>::map Map;
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(A)];
    A *shared = (A *)shared_raw;
    Op op;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const unsigned long long i = (unsigned long long)bid * BLOCK + threadIdx.x;
    const A v = i < p.n ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>();
    const A inc = wp_group_scan<A, GROUP, BLOCK, STRAT, Op>(v, op, shared);
    const A init = wp_from_bits64<A>(p.init);
    A r;
    if constexpr (EXCL) {
        const A prev = wp_group_prev<A, GROUP, BLOCK, Op>(inc, shared);
        r = (threadIdx.x & (GROUP - 1)) == 0 ? init : (p.has_init ? op(init, prev) : prev);
    } else {
        r = p.has_init ? op(init, inc) : inc;
    }
    if (i < p.n) out[i] = wp_convert<T>(r);
}

/* warp_scan at a width W that is not a power of two: logical warps (wp_block.cuh), rows as in reduce.cu's
 * wp_lw_reduce_run; inclusive, exclusive and init as in wp_group_scan_run. */
template <typename T, typename A, int W, int BLOCK, int STRAT, int EXCL, class OpM>
WP_DEV void wp_lw_scan_run(const wp_data_params &p, const unsigned bid) {
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
    const unsigned long long base =
        ((unsigned long long)bid * BLOCK + threadIdx.x) / 32 * (unsigned long long)(R * LANES) + lane;
    A v[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const unsigned long long i = base + (unsigned long long)(r * LANES);
        v[r] = holds && i < n ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>();
    }
    const A init = wp_from_bits64<A>(p.init);
#pragma unroll
    for (int r = 0; r < R; r++) {
        const unsigned long long i = base + (unsigned long long)(r * LANES);
        const A inc = wp_lw_scan<A, W, STRAT, Op>(v[r], l, op, shared);
        A res;
        if constexpr (EXCL) {
            const A prev = wp_any_shfl_up<32>(inc, 1); /* lane l - 1 of the same logical warp when l > 0 */
            res = l == 0 ? init : (p.has_init ? op(init, prev) : prev);
        } else {
            res = p.has_init ? op(init, inc) : inc;
        }
        if (holds && i < n) out[i] = wp_convert<T>(res);
    }
}

/* Groups of WIDTH: warp segments for a power of two, logical warps for any other width. */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int EXCL, class Op>
WP_DEV void wp_width_scan_run(const wp_data_params &p, const unsigned bid) {
    if constexpr ((WIDTH & (WIDTH - 1)) == 0)
        wp_group_scan_run<T, A, WIDTH, BLOCK, STRAT, EXCL, Op>(p, bid);
    else
        wp_lw_scan_run<T, A, WIDTH, BLOCK, STRAT, EXCL, Op>(p, bid);
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_warp_scan(wp_data_params p) {
    wp_grid_entry();
    wp_width_scan_run<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op>(p, blockIdx.x);
}
/* block_scan with a group of G threads, G not a power of two of at least 32: block b scans elements
 * b * G .. b * G + G - 1 in a block of WP_ROUND32(G) threads; inclusive, exclusive and init as above. */
template <typename T, typename A, int G, int STRAT, int EXCL, class OpM>
WP_DEV void wp_anyblock_scan_run(const wp_data_params &p, const unsigned bid) {
    typedef typename wp_split<OpM>::op Op; /* a map (wp_map.cuh) applies where elements are read */
    typedef typename wp_split<OpM>::map Map;
    __shared__ __align__(16) unsigned char shared_raw[WP_ROUND32(G) * sizeof(A)];
    A *shared = (A *)shared_raw;
    Op op;
    const T *in = (const T *)p.in;
    const unsigned long long i = (unsigned long long)bid * G + threadIdx.x;
    const bool mine = threadIdx.x < G && i < p.n;
    A prev;
    const A inc = wp_anyblock_scan<A, G, STRAT, Op>(mine ? wp_convert<A>(wp_map_at<Map>(p, in, i)) : wp_zero<A>(), op, shared, &prev);
    const A init = wp_from_bits64<A>(p.init);
    A r;
    if constexpr (EXCL)
        r = threadIdx.x == 0 ? init : (p.has_init ? op(init, prev) : prev);
    else
        r = p.has_init ? op(init, inc) : inc;
    if (mine) ((T *)p.out)[i] = wp_convert<T>(r);
}

template <typename T, typename A, int BLOCK, int STRAT, int EXCL, class Op>
WP_DEV void wp_block_scan_any_run(const wp_data_params &p, const unsigned bid) {
    if constexpr (wp_is_pow2_block<BLOCK>::value)
        wp_group_scan_run<T, A, BLOCK, BLOCK, STRAT, EXCL, Op>(p, bid);
    else
        wp_anyblock_scan_run<T, A, BLOCK, STRAT, EXCL, Op>(p, bid);
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(WP_ROUND32(BLOCK)) wp_block_scan(wp_data_params p) {
    wp_grid_entry();
    wp_block_scan_any_run<T, A, BLOCK, STRAT, VARIANT, Op>(p, blockIdx.x);
}

/* ---- device_scan ------------------------------------------------------------------------------
 * Tiles of BLOCK * ITEMS elements; tile i is block i (blocks start in index order, as CUB's scan
 * relies on too, so every tile a block waits for has started). Each thread scans its ITEMS
 * consecutive elements serially; a warp loads and stores its 32 threads' elements as whole 512-byte
 * runs through a shared-memory transpose. The block scans the threads' aggregates (STRAT); the tile
 * publishes its aggregate A_i at once, then one warp looks back for the nearest tile j < i that has
 * published its inclusive prefix P_j, reading 32 * WP_LOOKBACK_LANE_TILES tile status words at a time.
 * Its exclusive prefix is the left fold op(..op(P_j, A_j+1).., A_i-1) — exactly P_i-1 of the chain
 * P_i = op(P_i-1, A_i), P_-1 = init — so the bits do not depend on which j it found (nor on who
 * published P_k). Each thread then re-scans its elements starting from op(tile prefix, thread prefix). */

#ifndef WP_LOOKBACK_LANE_TILES
#define WP_LOOKBACK_LANE_TILES 2 /* tiles each lane of the look-back warp reads per window (1, 2, 4) */
#endif
/* The look-back's pauses, on grids of WP_LOOKBACK_PAUSE_GRID tiles or more (as CUB's delays): a sleep
 * after the tile publishes its aggregate, before the first poll (about an L2 write's round trip: the
 * tiles below have time to publish, and fewer warps spin on the status words), then a sleep between
 * polls. Both measured on the H200 (bench/RESULTS.md); 0 turns either off. */
#ifndef WP_LOOKBACK_FIRST_NS
#define WP_LOOKBACK_FIRST_NS 1300
#endif
#ifndef WP_LOOKBACK_SLEEP_NS
#define WP_LOOKBACK_SLEEP_NS 200
#endif
#define WP_LOOKBACK_PAUSE_GRID 500
#define WP_LOOKBACK_DEPTH 512   /* tiles of aggregates a look-back stashes before it waits for a prefix */
#define WP_SCAN_STAGE_MAX 32768 /* shared bytes a block may use for the transpose (else direct loads) */

/* Tile status (wp_abi.h): one record per tile from p.scratch. An accumulator of up to 4 bytes shares
 * its 8-byte word with the stamp ((epoch << 2 | WP_TILE_*) << 32 | bits): one load reads both, and a
 * prefix replaces the aggregate. An 8-byte one: a 16-byte record, the stamp word and the value's bits,
 * written and read as one access; a prefix replaces the aggregate there too. */
WP_DEV unsigned wp_tile_epoch(const wp_data_params &p) { return p.epoch & 0x3fffffffu; }
WP_DEV unsigned long long wp_ld_relaxed64(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
WP_DEV void wp_st_relaxed64(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <typename A, bool PACKED = (sizeof(A) <= 4)> struct wp_tile_status;
template <typename A> struct wp_tile_status<A, true> {
    static WP_DEV void publish(const wp_data_params &p, unsigned long long tile, int level, A v) {
        const unsigned long long flag = (unsigned long long)(wp_tile_epoch(p) << 2 | (unsigned)level);
        wp_st_relaxed64((unsigned long long *)p.scratch + tile, flag << 32 | (unsigned long long)wp_raw<A>::bits(v));
    }
    /* Whether the tile has published anything in this launch; then its value and whether it is P. */
    static WP_DEV bool read(const wp_data_params &p, unsigned long long tile, A *v, bool *prefix) {
        const unsigned long long w = wp_ld_relaxed64((const unsigned long long *)p.scratch + tile);
        const unsigned hi = (unsigned)(w >> 32);
        if ((hi >> 2) != wp_tile_epoch(p)) return false;
        *prefix = (hi & 3u) == WP_TILE_PREFIX;
        *v = wp_raw<A>::value((typename wp_raw<A>::word)(unsigned)w);
        return true;
    }
};
/* The 16-byte record's one access: the stamp word and the value's bits together (as CUB's tile status
 * for 8-byte values: a 16-byte relaxed access is read and written whole). */
WP_DEV void wp_st_relaxed128(unsigned long long *p, unsigned long long a, unsigned long long b) {
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
WP_DEV void wp_ld_relaxed128(const unsigned long long *p, unsigned long long *a, unsigned long long *b) {
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}
template <typename A> struct wp_tile_status<A, false> {
    static_assert(sizeof(A) == 8, "a wide record holds an 8-byte value");
    static WP_DEV unsigned long long *record(const wp_data_params &p, unsigned long long tile) {
        return (unsigned long long *)(p.scratch + tile * WP_TILE_RECORD_WIDE);
    }
    static WP_DEV void publish(const wp_data_params &p, unsigned long long tile, int level, A v) {
        const unsigned long long stamp = wp_tile_epoch(p) << 2 | (unsigned)level;
        wp_st_relaxed128(record(p, tile), stamp, (unsigned long long)wp_raw<A>::bits(v));
    }
    static WP_DEV bool read(const wp_data_params &p, unsigned long long tile, A *v, bool *prefix) {
        unsigned long long stamp, bits;
        wp_ld_relaxed128(record(p, tile), &stamp, &bits);
        if ((stamp >> 2) != wp_tile_epoch(p)) return false;
        *prefix = (stamp & 3u) == WP_TILE_PREFIX;
        *v = wp_raw<A>::value((typename wp_raw<A>::word)bits);
        return true;
    }
};

/* Builtin operators on integers are associative and commutative bit for bit (wrapping arithmetic,
 * min/max, bitwise): for them a look-back combines the aggregates it holds as a warp tree, which gives
 * the left fold's bits whatever the order. Floats and expressions keep the left fold. */
template <typename A> struct wp_int_acc { static constexpr bool value = false; };
template <> struct wp_int_acc<int> { static constexpr bool value = true; };
template <> struct wp_int_acc<unsigned> { static constexpr bool value = true; };
template <> struct wp_int_acc<long long> { static constexpr bool value = true; };
template <> struct wp_int_acc<unsigned long long> { static constexpr bool value = true; };
template <class Op> struct wp_tree_exact { static constexpr bool value = false; };
#define WP_TREE_EXACT(NAME)                                                                                            \
    template <typename A> struct wp_tree_exact<NAME<A>> { static constexpr bool value = wp_int_acc<A>::value; };
WP_TREE_EXACT(wp_op_sum)
WP_TREE_EXACT(wp_op_prod)
WP_TREE_EXACT(wp_op_min)
WP_TREE_EXACT(wp_op_max)
WP_TREE_EXACT(wp_op_and)
WP_TREE_EXACT(wp_op_or)
WP_TREE_EXACT(wp_op_xor)
#undef WP_TREE_EXACT

/* Run by one whole warp for a tile > 0 that has published its aggregate; returns P_tile-1 in every
 * lane. A window is the W = 32 * K tiles below `top` (lane l, slot k: distance 32k + l). It waits
 * until the window holds a prefix with every tile nearer than it published, or every tile published
 * and no prefix: then it stashes the aggregates and moves one window back. Every lane folds the same
 * values in the same order (shared-memory broadcasts): P_j, then A_j+1 .. A_tile-1. With an exact
 * operator (wp_tree_exact) the A's are combined as a warp tree instead: the same bits, and a quarter
 * less NVRTC time for the kernel than the unrolled fold (bench/RESULTS.md). */
template <typename A, class Op>
WP_DEV A wp_scan_lookback(const wp_data_params &p, unsigned long long tile, Op op, A *stash) {
    typedef wp_tile_status<A> status;
    constexpr int K = WP_LOOKBACK_LANE_TILES, W = 32 * K, WINDOWS = WP_LOOKBACK_DEPTH / W;
    static_assert(K >= 1 && WINDOWS >= 1, "look-back window");
    const int lane = wp_lane();
    long long top = (long long)tile - 1;
    int win = 0;
    const bool pause = gridDim.x >= WP_LOOKBACK_PAUSE_GRID;
    if constexpr (WP_LOOKBACK_FIRST_NS > 0)
        if (pause) __nanosleep(WP_LOOKBACK_FIRST_NS);
    for (;;) {
        A v[K];
        bool ready[K], pre[K];
#pragma unroll
        for (int k = 0; k < K; k++) {
            v[k] = wp_zero<A>();
            ready[k] = pre[k] = false;
        }
        int dp; /* distance of the nearest prefix; -1: none in the window */
        for (;;) {
#pragma unroll
            for (int k = 0; k < K; k++) {
                const long long idx = top - (32 * k + lane);
                if (!ready[k]) ready[k] = idx < 0 || status::read(p, (unsigned long long)idx, &v[k], &pre[k]);
            }
            bool complete = true;
            dp = -1;
#pragma unroll
            for (int k = 0; k < K; k++) {
                const unsigned pb = __ballot_sync(WP_FULL_MASK, pre[k]), rb = __ballot_sync(WP_FULL_MASK, ready[k]);
                if (dp < 0) {
                    if (pb) {
                        const int l = __ffs(pb) - 1;
                        const unsigned need = l == 31 ? WP_FULL_MASK : (2u << l) - 1u;
                        complete = complete && (rb & need) == need;
                        dp = 32 * k + l;
                    } else {
                        complete = complete && rb == WP_FULL_MASK;
                    }
                }
            }
            if (complete) break;
            if constexpr (WP_LOOKBACK_SLEEP_NS > 0)
                if (pause) __nanosleep(WP_LOOKBACK_SLEEP_NS);
        }
        A *s = stash + win * W;
#pragma unroll
        for (int k = 0; k < K; k++) s[32 * k + lane] = v[k];
        __syncwarp();
        if (dp >= 0) {
            A acc = s[dp];
            if constexpr (wp_tree_exact<Op>::value) { /* this window's values nearer than dp, every stashed one */
                A t = wp_zero<A>();
                bool h = false;
#pragma unroll
                for (int k = 0; k < K; k++)
                    if (32 * k + lane < dp) {
                        t = h ? op(t, v[k]) : v[k];
                        h = true;
                    }
                for (int w = win - 1; w >= 0; w--)
#pragma unroll
                    for (int k = 0; k < K; k++) {
                        const A a = stash[w * W + 32 * k + lane];
                        t = h ? op(t, a) : a;
                        h = true;
                    }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    const A ot = wp_any_shfl_xor<32>(t, o);
                    const bool oh = __shfl_xor_sync(WP_FULL_MASK, (int)h, o) != 0;
                    if (oh) t = h ? op(t, ot) : ot;
                    h = h || oh;
                }
                return h ? op(acc, t) : acc;
            }
#pragma unroll
            for (int k = K - 1; k >= 0; k--) {
                if (32 * k < dp) {
#pragma unroll
                    for (int l = 31; l >= 0; l--) {
                        const A a = s[32 * k + l];
                        if (32 * k + l < dp) acc = op(acc, a);
                    }
                }
            }
            for (int w = win - 1; w >= 0; w--) {
#pragma unroll 32
                for (int d = W - 1; d >= 0; d--) acc = op(acc, stash[w * W + d]);
            }
            return acc;
        }
        if (win < WINDOWS - 1) { /* all aggregates: keep them, look further back */
            win++;
            top -= W;
        } /* else the stash is full: poll this window again until a prefix shows up */
    }
}

/* The shared-memory transpose of a warp's 32 * VECS 16-byte vectors: thread t's vector v sits at
 * t * VECS + (v ^ f(t)), so both the blocked accesses (thread t: its VECS vectors) and the striped
 * ones (lane l: vectors l, l + 32, ..) hit 8 distinct 16-byte bank groups per quarter warp. */
template <int VECS> WP_DEV int wp_stage_slot(int c) {
    const int t = c / VECS, v = c % VECS;
    const int f = VECS >= 8 ? (t & 7) : ((t / (8 / VECS)) & (VECS - 1));
    return t * VECS + (v ^ f);
}

/* A thread's ITEMS elements from base (cnt of them valid) through the map: y, when it reads it, in
 * 16-byte vectors of in2 for a whole thread, else element by element. */
template <class Map, typename T, int ITEMS>
WP_DEV void wp_device_scan_map(const wp_data_params &p, unsigned long long base, int cnt, T (&x)[ITEMS]) {
    T y[ITEMS];
    if constexpr (Map::uses_y) {
        const T *in2 = (const T *)p.in2;
        if (cnt == ITEMS) {
#pragma unroll
            for (int v = 0; v < ITEMS * (int)sizeof(T) / 16; v++) {
                const uint4 q = __ldg((const uint4 *)(in2 + base) + v);
                memcpy(&y[v * (16 / sizeof(T))], &q, 16);
            }
        } else {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) y[j] = j < cnt ? in2[base + j] : wp_raw<T>::value(0);
        }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; j++) x[j] = wp_map_pick<Map>(x, y, j);
}

template <typename T, typename A, int BLOCK, int STRAT, int EXCL, class OpM>
WP_DEV void wp_device_scan_run(const wp_data_params &p, const unsigned long long tile) {
    typedef typename wp_split<OpM>::op Op; /* a map (wp_map.cuh) applies to the elements once loaded */
    typedef typename wp_split<OpM>::map Map;
    typedef wp_tile_status<A> status;
    constexpr int ITEMS = WP_SCAN_THREAD_BYTES / sizeof(T);
    constexpr int VECS = WP_SCAN_THREAD_BYTES / 16;
    constexpr int PER_VEC = 16 / sizeof(T);
    constexpr int WARPS = BLOCK / 32;
    constexpr bool STAGED = BLOCK * WP_SCAN_THREAD_BYTES <= WP_SCAN_STAGE_MAX;
    constexpr bool SHFL = STRAT != WP_STRAT_SMEM;
    constexpr unsigned long long TILE = (unsigned long long)BLOCK * ITEMS;
    __shared__ uint4 stage[STAGED ? BLOCK * VECS : 1];
    __shared__ __align__(16) unsigned char shared_raw[(SHFL ? 32 : BLOCK) * sizeof(A)];
    __shared__ __align__(16) unsigned char stash_raw[WP_LOOKBACK_DEPTH * sizeof(A)];
    __shared__ __align__(16) unsigned char prefix_raw[2 * (sizeof(A) < 16 ? 16 : sizeof(A))];
    __shared__ bool has_prefix_sh;
    A *shared = (A *)shared_raw;
    Op op;
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const unsigned long long n = p.n;
    const unsigned long long base = tile * TILE + (unsigned long long)t * ITEMS;
    const unsigned long long wbase = tile * TILE + (unsigned long long)w * 32 * ITEMS;
    const bool warp_full = STAGED && wbase + 32ull * ITEMS <= n; /* the same in every lane */
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const bool full = base + ITEMS <= n;
    const int cnt = full ? ITEMS : (base < n ? (int)(n - base) : 0);
    uint4 *ws = stage + (STAGED ? w * 32 * VECS : 0);
    T x[ITEMS];
    if (warp_full) { /* striped 16-byte loads, then each thread takes its own vectors */
        const uint4 *src = (const uint4 *)(in + wbase);
        uint4 r[VECS];
#pragma unroll
        for (int k = 0; k < VECS; k++) r[k] = __ldg(src + 32 * k + lane);
#pragma unroll
        for (int k = 0; k < VECS; k++) ws[wp_stage_slot<VECS>(32 * k + lane)] = r[k];
        __syncwarp();
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            const uint4 q = ws[wp_stage_slot<VECS>(lane * VECS + v)];
            memcpy(&x[v * PER_VEC], &q, 16);
        }
    } else if (!STAGED && full) {
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            const uint4 q = __ldg((const uint4 *)(in + base) + v);
            memcpy(&x[v * PER_VEC], &q, 16);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) x[j] = j < cnt ? in[base + j] : wp_raw<T>::value(0);
    }
    if constexpr (wp_is_map<Map>::value) wp_device_scan_map<Map, T, ITEMS>(p, base, cnt, x);
    A agg = wp_convert<A>(x[0]);
#pragma unroll
    for (int j = 1; j < ITEMS; j++)
        if (j < cnt) agg = op(agg, wp_convert<A>(x[j]));

    /* The block scan of the aggregates (wp_group_scan's order): texcl = the previous thread's
     * inclusive value, tile_agg = the last thread's. shfl_up computes both without another barrier:
     * every warp scans the warps' totals T itself (S = HS(T)), and thread 32w - 1's inclusive value
     * is op(S_w-2, T_w-1) (T_0 for w = 1). */
    A texcl, tile_agg;
    if constexpr (SHFL) {
        const A h = wp_warp_scan_hs<A, 32, Op>(agg, op);
        if constexpr (WARPS == 1) {
            tile_agg = wp_any_shfl<32>(h, 31);
            texcl = wp_any_shfl_up<32>(h, 1);
        } else {
            if (lane == 31) shared[w] = h;
            __syncthreads();
            const A tv = lane < WARPS ? shared[lane] : wp_zero<A>();
            const A s = wp_warp_scan_hs<A, 32, Op>(tv, op);
            const A s1 = wp_any_shfl<32>(s, w > 0 ? w - 1 : 0), s2 = wp_any_shfl<32>(s, w > 1 ? w - 2 : 0);
            const A t1 = wp_any_shfl<32>(tv, w > 0 ? w - 1 : 0);
            const A inc = w > 0 ? op(s1, h) : h;
            const A up = wp_any_shfl_up<32>(inc, 1);
            texcl = lane > 0 ? up : (w > 1 ? op(s2, t1) : t1);
            tile_agg = op(wp_any_shfl<32>(s, WARPS - 2), wp_any_shfl<32>(tv, WARPS - 1));
        }
    } else {
        const A inc = wp_group_scan<A, BLOCK, BLOCK, STRAT, Op>(agg, op, shared);
        texcl = wp_group_prev<A, BLOCK, BLOCK, Op>(inc, shared);
        A *agg_sh = (A *)(prefix_raw + (sizeof(A) < 16 ? 16 : sizeof(A)));
        if (t == BLOCK - 1) *agg_sh = inc;
        __syncthreads();
        tile_agg = *agg_sh;
    }
    if (w == 0) { /* publish A_i at once; the look-back gives P_i-1; publish P_i */
        const A init = wp_from_bits64<A>(p.init);
        A excl = init;
        bool has = p.has_init != 0;
        if (tile == 0) {
            if (lane == 0) status::publish(p, 0, WP_TILE_PREFIX, has ? op(init, tile_agg) : tile_agg);
        } else {
            if (lane == 0) status::publish(p, tile, WP_TILE_AGGREGATE, tile_agg);
            excl = wp_scan_lookback<A, Op>(p, tile, op, (A *)stash_raw);
            has = true;
            if (lane == 0) status::publish(p, tile, WP_TILE_PREFIX, op(excl, tile_agg));
        }
        if (lane == 0) {
            *(A *)prefix_raw = excl;
            has_prefix_sh = has;
        }
    }
    __syncthreads();
    bool has = has_prefix_sh;
    A pre = *(const A *)prefix_raw;
    if (t > 0) {
        pre = has ? op(pre, texcl) : texcl;
        has = true;
    }
    const A init = wp_from_bits64<A>(p.init);
    T y[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        const A xj = wp_convert<A>(x[j]);
        if constexpr (EXCL) {
            y[j] = wp_convert<T>(has ? pre : init);
            pre = has ? op(pre, xj) : xj;
        } else {
            pre = has ? op(pre, xj) : xj;
            y[j] = wp_convert<T>(pre);
        }
        has = true;
    }
    if (warp_full) { /* the transpose back, then striped 16-byte stores */
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            uint4 q;
            memcpy(&q, &y[v * PER_VEC], 16);
            ws[wp_stage_slot<VECS>(lane * VECS + v)] = q;
        }
        __syncwarp();
        uint4 *dst = (uint4 *)(out + wbase);
#pragma unroll
        for (int k = 0; k < VECS; k++) dst[32 * k + lane] = ws[wp_stage_slot<VECS>(32 * k + lane)];
    } else if (!STAGED && full) {
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            uint4 q;
            memcpy(&q, &y[v * PER_VEC], 16);
            ((uint4 *)(out + base))[v] = q;
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) /* static indexes keep y in registers */
            if (j < cnt) out[base + j] = y[j];
    }
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int EXCL, class Op>
__global__ void __launch_bounds__(BLOCK) wp_device_scan(wp_data_params p) {
    wp_grid_entry();
    wp_device_scan_run<T, A, BLOCK, STRAT, EXCL, Op>(p, blockIdx.x);
}

/* ---- batched launches (server/batch_reduce.c): block b runs its job (wp_batch_job) through the
 * code path the job takes alone. A device_scan job's tiles are consecutive blocks, so every tile a
 * block looks back at has started, as alone. ---- */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_warp_scan_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_width_scan_run<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op>(q, bid);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(WP_ROUND32(BLOCK)) wp_block_scan_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_block_scan_any_run<T, A, BLOCK, STRAT, VARIANT, Op>(q, bid);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int EXCL, class Op>
__global__ void __launch_bounds__(BLOCK) wp_device_scan_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_device_scan_run<T, A, BLOCK, STRAT, EXCL, Op>(q, bid);
}
