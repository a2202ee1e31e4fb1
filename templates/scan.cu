/* scan.cu — the scan kernels over packed data (wp_data_params, wp_abi.h): warp_scan and block_scan
 * (each group of WIDTH or BLOCK elements scanned on its own) and device_scan (the whole array, one
 * pass, decoupled look-back with a fixed fold so floats come out the same every run).
 * kernel<T, A, WIDTH, BLOCK, STRAT, EXCLUSIVE, Op>; the order is docs/semantics.md's and
 * kernels/scan.c's. */
#include "wp_block.cuh"

/* One element per thread. inclusive: op(init, scan) with an init, else the scan. exclusive: the
 * group's first element gets init (the identity when none was given), element i > 0 op(init,
 * scan[i-1]) with an init, else scan[i-1]. */
template <typename T, typename A, int GROUP, int BLOCK, int STRAT, int EXCL, class Op>
WP_DEV void wp_group_scan_run(const wp_data_params &p) {
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(A)];
    A *shared = (A *)shared_raw;
    Op op;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    const A v = i < p.n ? wp_convert<A>(in[i]) : wp_zero<A>();
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

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_warp_scan(wp_data_params p) {
    wp_group_scan_run<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op>(p);
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_block_scan(wp_data_params p) {
    wp_group_scan_run<T, A, BLOCK, BLOCK, STRAT, VARIANT, Op>(p);
}

/* ---- device_scan ------------------------------------------------------------------------------
 * Tiles of BLOCK * ITEMS elements, taken in launch order from an atomic counter. Each thread scans
 * its ITEMS consecutive elements serially; the block scans the threads' aggregates (STRAT); the tile
 * publishes its aggregate A_i, then looks back for the nearest tile j < i that has published its
 * inclusive prefix P_j, within the 32 tiles before it (waiting until one has). Its exclusive prefix
 * is the left fold op(..op(P_j, A_j+1).., A_i-1) — exactly P_i-1 of the chain P_i = op(P_i-1, A_i),
 * P_-1 = init — so the bits do not depend on which j it found (nor on who published P_k). Each thread then re-scans its
 * elements starting from op(tile prefix, thread prefix). */

/* Tile status, two 8-byte words per tile: A_i, then P_i. An accumulator of up to 4 bytes shares its
 * word with its flag (epoch << 2 | WP_TILE_*, high half) so one load reads both; a wider one sits in
 * the word with the flag in a separate array (flags first, then the words) behind a release store. */
#define WP_LOOKBACK_WINDOWS 16 /* windows of 32 tiles a tile may look back through before it waits */
/* A tile that folds from P_j up to itself computes P_k of every tile k between (the same bits tile k
 * would: it is the same left fold) and publishes them, so the tiles behind it find a prefix at once
 * instead of each folding the same long run again. */
#ifndef WP_LOOKBACK_PUBLISH
#define WP_LOOKBACK_PUBLISH 0 /* measured on H100: 1 was slower at block 256 (bench/RESULTS.md) */
#endif

WP_DEV unsigned long long *wp_tile_slots(const wp_data_params &p) {
    return (unsigned long long *)(p.scratch + ((p.groups * 4 + 15) & ~15ull));
}
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
        const unsigned long long flag = (unsigned long long)((p.epoch & 0x3fffffffu) << 2 | (unsigned)level);
        wp_st_relaxed64(&wp_tile_slots(p)[2 * tile + (level == WP_TILE_PREFIX)], flag << 32 | (unsigned long long)wp_raw<A>::bits(v));
    }
    /* Waits until the tile has published at least its aggregate; *prefix says which came back. */
    static WP_DEV A poll(const wp_data_params &p, unsigned long long tile, bool *prefix) {
        const unsigned long long *w = &wp_tile_slots(p)[2 * tile];
        const unsigned epoch = p.epoch & 0x3fffffffu;
        for (;;) {
            const unsigned long long pw = wp_ld_relaxed64(w + 1), aw = wp_ld_relaxed64(w);
            if ((unsigned)(pw >> 32) == (epoch << 2 | WP_TILE_PREFIX)) {
                *prefix = true;
                return wp_raw<A>::value((typename wp_raw<A>::word)(unsigned)pw);
            }
            if ((unsigned)(aw >> 32) == (epoch << 2 | WP_TILE_AGGREGATE)) {
                *prefix = false;
                return wp_raw<A>::value((typename wp_raw<A>::word)(unsigned)aw);
            }
        }
    }
};
template <typename A> struct wp_tile_status<A, false> {
    static WP_DEV void publish(const wp_data_params &p, unsigned long long tile, int level, A v) {
        *(A *)&wp_tile_slots(p)[2 * tile + (level == WP_TILE_PREFIX)] = v;
        wp_st_release(&((unsigned *)p.scratch)[tile], (p.epoch & 0x3fffffffu) << 2 | (unsigned)level);
    }
    static WP_DEV A poll(const wp_data_params &p, unsigned long long tile, bool *prefix) {
        const unsigned epoch = p.epoch & 0x3fffffffu;
        unsigned st;
        do
            st = wp_ld_acquire(&((const unsigned *)p.scratch)[tile]);
        while ((st >> 2) != epoch);
        *prefix = (st & 3u) == WP_TILE_PREFIX;
        return wp_ld_gpu((const A *)&wp_tile_slots(p)[2 * tile + *prefix]);
    }
};

/* Run by one whole warp; returns whether *excl holds a prefix (false only for tile 0 with no init).
 * Looks back window by window (32 tiles each, stashing their aggregates in shared memory) until a
 * window holds a prefix, then folds forward from the nearest one: P_j, then A_j+1 .. A_i-1 in order. */
template <typename A, class Op>
WP_DEV bool wp_scan_lookback(const wp_data_params &p, unsigned long long tile, A tile_agg, Op op, A *excl, A *stash) {
    typedef wp_tile_status<A> status;
    const int lane = wp_lane();
    const A init = wp_from_bits64<A>(p.init);
    if (tile == 0) {
        if (lane == 0) status::publish(p, 0, WP_TILE_PREFIX, p.has_init ? op(init, tile_agg) : tile_agg);
        *excl = init;
        return p.has_init != 0;
    }
    if (lane == 0) status::publish(p, tile, WP_TILE_AGGREGATE, tile_agg);
    long long top = (long long)tile - 1;
    int windows = 0;
    A acc = wp_zero<A>();
    for (;;) {
        const long long idx = top - lane;
        bool is_prefix = false;
        const A v = idx >= 0 ? status::poll(p, (unsigned long long)idx, &is_prefix) : wp_zero<A>();
        const unsigned prefix_lanes = __ballot_sync(WP_FULL_MASK, idx >= 0 && is_prefix);
        if (prefix_lanes) {
            const int pl = __ffs(prefix_lanes) - 1; /* the nearest tile with a prefix */
            if (lane <= pl) stash[windows * 32 + lane] = v;
            __syncwarp();
            if (lane == 0) { /* every step of the fold is P_k of a tile k between: publish it too */
                acc = stash[windows * 32 + pl];
                for (int l = pl - 1; l >= 0; --l) {
                    acc = op(acc, stash[windows * 32 + l]);
                    if (WP_LOOKBACK_PUBLISH) status::publish(p, (unsigned long long)(top - l), WP_TILE_PREFIX, acc);
                }
                for (int w = windows - 1; w >= 0; --w) {
                    const long long top_w = (long long)tile - 1 - 32 * w;
#pragma unroll 8
                    for (int l = 31; l >= 0; --l) {
                        acc = op(acc, stash[w * 32 + l]);
                        if (WP_LOOKBACK_PUBLISH) status::publish(p, (unsigned long long)(top_w - l), WP_TILE_PREFIX, acc);
                    }
                }
            }
            acc = wp_any_shfl<32>(acc, 0);
            break;
        }
        if (windows < WP_LOOKBACK_WINDOWS - 1) { /* all 32 are aggregates: keep them, look further back */
            stash[windows * 32 + lane] = v;
            windows++;
            top -= 32;
        } /* else: the stash is full; poll this window again until a prefix shows up */
    }
    if (lane == 0) status::publish(p, tile, WP_TILE_PREFIX, op(acc, tile_agg));
    *excl = acc;
    return true;
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int EXCL, class Op>
__global__ void __launch_bounds__(BLOCK) wp_device_scan(wp_data_params p) {
    constexpr int ITEMS = WP_SCAN_THREAD_BYTES / sizeof(T);
    constexpr int VECS = WP_SCAN_THREAD_BYTES / 16;
    constexpr int PER_VEC = 16 / sizeof(T);
    constexpr unsigned long long TILE = (unsigned long long)BLOCK * ITEMS;
    __shared__ __align__(16) unsigned char shared_raw[BLOCK * sizeof(A)];
    __shared__ __align__(16) unsigned char prefix_raw[sizeof(A) < 16 ? 16 : sizeof(A)];
    __shared__ __align__(16) unsigned char stash_raw[WP_LOOKBACK_WINDOWS * 32 * sizeof(A)];
    __shared__ unsigned long long tile_sh;
    __shared__ bool has_prefix_sh;
    A *shared = (A *)shared_raw;
    Op op;
    const int t = threadIdx.x;
    if (t == 0) {
        const unsigned id = atomicAdd((unsigned *)p.counter, 1u);
        if (id == p.groups - 1) atomicExch((unsigned *)p.counter, 0u); /* every tile is taken: reset */
        tile_sh = id;
    }
    __syncthreads();
    const unsigned long long tile = tile_sh;
    const unsigned long long n = p.n, base = tile * TILE + (unsigned long long)t * ITEMS;
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const bool full = base + ITEMS <= n;
    const int cnt = full ? ITEMS : (base < n ? (int)(n - base) : 0);
    T x[ITEMS];
    if (full) {
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            const uint4 w = __ldg((const uint4 *)(in + base) + v);
            memcpy(&x[v * PER_VEC], &w, 16);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) x[j] = j < cnt ? in[base + j] : wp_raw<T>::value(0);
    }
    A agg = wp_convert<A>(x[0]);
#pragma unroll
    for (int j = 1; j < ITEMS; j++)
        if (j < cnt) agg = op(agg, wp_convert<A>(x[j]));

    const A inc = wp_group_scan<A, BLOCK, BLOCK, STRAT, Op>(agg, op, shared);
    const A texcl = wp_group_prev<A, BLOCK, BLOCK, Op>(inc, shared);
    if (t >= BLOCK - 32) { /* the last warp holds the tile's aggregate (thread BLOCK-1) and looks back */
        const A tile_agg = wp_any_shfl<32>(inc, 31);
        A excl;
        const bool has = wp_scan_lookback<A, Op>(p, tile, tile_agg, op, &excl, (A *)stash_raw);
        if (t == BLOCK - 32) {
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
    if (full) {
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            uint4 w;
            memcpy(&w, &y[v * PER_VEC], 16);
            ((uint4 *)(out + base))[v] = w;
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) /* static indexes keep y in registers */
            if (j < cnt) out[base + j] = y[j];
    }
}
