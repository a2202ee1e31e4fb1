/* bykey.cu — reduce_by_key (CUB's DeviceReduce::ReduceByKey): every run of equal consecutive keys
 * reduced to one value, in one pass with a decoupled look-back (scan.cu's algorithm over pairs, written
 * out here: NVRTC is given the .cuh headers only, not another template). Keys are
 * compared as raw bits of KEYBYTES (4 or 8) bytes; values are T, combined in A.
 * kernel<T, A, WIDTH, BLOCK, STRAT, KEYBYTES, Op>: p.in the values, p.aux the keys, p.out the run
 * values, p.seed the run keys (addresses), p.counter where the number of runs goes (u64), p.scratch
 * the tile status (WP_BYKEY_RECORD bytes a tile, epoch-stamped).
 *
 * The combining order (docs/semantics.md, "reduce_by_key"; kernels/bykey.c follows it step for step):
 * tiles of BLOCK * WP_BYKEY_ITEMS elements, tile i is block i; thread t holds the WP_BYKEY_ITEMS
 * consecutive elements from t * WP_BYKEY_ITEMS. Everything is a pair (runs, v) under
 *     (c1, v1) + (c2, v2) = (c1 + c2, c2 > 0 ? v2 : op(v1, v2))
 * (runs: how many runs start in the piece; v: its elements after the last run start, folded).
 *  1. each thread folds its elements left to right: at a run start v restarts from the element;
 *  2. the block scans the threads' pairs: Hillis-Steele within each warp (lane i >= o takes
 *     x[i-o] + x[i] for o = 1, 2, .., 16), then the warps' totals are folded left to right (a warp's
 *     exclusive prefix: T_0 + T_1 + .. + T_w-1; the tile's pair: T_0 + .. + T_last); a thread's
 *     exclusive prefix is (warp prefix) + (the inclusive pair of lane - 1);
 *  3. the tile's exclusive prefix is P_i-1 of the chain P_i = P_i-1 + A_i (A_i the tile's pair), got
 *     by the look-back's fixed left fold, so it does not depend on timing;
 *  4. each thread walks its elements again from (tile prefix) + (thread prefix): an element that
 *     starts a run writes the key of the run and the value of the run before it; the thread holding
 *     the last element writes the last run's value and the number of runs. */
#include "wp_block.cuh"

#define WP_BYKEY_LANE_TILES 1 /* tiles each lane of the look-back warp reads per window (H100: 1 is 10-12 %
                                 * faster than 2, 2 than 4: fewer records polled a round) */
#define WP_BYKEY_DEPTH 512    /* tiles of aggregates a look-back stashes before it waits for a prefix */
#define WP_BYKEY_STAGE_MAX 32768 /* shared bytes a block may use for the transpose (else direct loads) */

/* A piece of the sequence: how many runs start in it, and its elements after the last start, folded. */
template <typename A> struct wp_kv {
    unsigned long long runs;
    A v;
};
template <typename A, class Op> struct wp_kv_op {
    Op op;
    WP_DEV wp_kv<A> operator()(const wp_kv<A> &a, const wp_kv<A> &b) const {
        wp_kv<A> r;
        r.runs = a.runs + b.runs;
        r.v = b.runs ? b.v : op(a.v, b.v);
        return r;
    }
};
template <typename A> struct wp_zero_of<wp_kv<A> > {
    static WP_DEV wp_kv<A> get() {
        wp_kv<A> r;
        r.runs = 0;
        r.v = wp_zero<A>();
        return r;
    }
};
template <typename A> WP_DEV wp_kv<A> wp_kv_shfl_up(wp_kv<A> x, int o) {
    x.runs = __shfl_up_sync(WP_FULL_MASK, x.runs, o);
    x.v = wp_any_shfl_up<32>(x.v, o);
    return x;
}

/* The tile status of a pair (WP_BYKEY_RECORD bytes). Narrow (values of at most 4 bytes, n < 2^32, so a
 * prefix's run count fits 32 bits): two 64-bit words, each stamped in its high half (epoch << 2 |
 * level), the value's bits and the run count in the low halves; a reader takes both words with two
 * loads at once (one round trip) and keeps them when the stamps agree (a torn read, one word of the
 * aggregate and one of the prefix, differs and is read again). Wide: the stamp (4 bytes, then 4
 * unused), the aggregate (runs, v bits), the inclusive prefix (runs, v bits); the stamp is written
 * last behind a release store, as scan.cu's wide records, and read first with an acquire load. The
 * scratch is zeroed before a job (engine/bykey.c) and epochs start at 1: a zero word is never valid. */
template <typename A> struct wp_kv_status {
    static_assert(sizeof(A) <= 8, "a pair record holds 8-byte values");
    static WP_DEV unsigned long long *record(const wp_data_params &p, unsigned long long tile) {
        return (unsigned long long *)(p.scratch + tile * WP_BYKEY_RECORD);
    }
    static WP_DEV bool narrow(const wp_data_params &p) { return sizeof(A) <= 4 && p.n <= 0xffffffffull; }
    static WP_DEV unsigned stamp(const wp_data_params &p, int level) {
        return (p.epoch & 0x3fffffffu) << 2 | (unsigned)level;
    }
    static WP_DEV void publish(const wp_data_params &p, unsigned long long tile, int level, wp_kv<A> v) {
        if (narrow(p)) {
            const unsigned long long st = (unsigned long long)stamp(p, level) << 32;
            unsigned long long *r = record(p, tile);
            const unsigned long long w0 = st | (unsigned)wp_bits64<A>(v.v), w1 = st | (unsigned)v.runs;
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(r), "l"(w0) : "memory");
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(r + 1), "l"(w1) : "memory");
            return;
        }
        unsigned long long *r = record(p, tile) + (level == WP_TILE_PREFIX ? 3 : 1);
        r[0] = v.runs;
        r[1] = wp_bits64<A>(v.v);
        wp_st_release((unsigned *)record(p, tile), stamp(p, level));
    }
    static WP_DEV bool read(const wp_data_params &p, unsigned long long tile, wp_kv<A> *v, bool *prefix) {
        const unsigned long long *r = record(p, tile);
        if (narrow(p)) {
            unsigned long long w0, w1;
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w0) : "l"(r) : "memory");
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w1) : "l"(r + 1) : "memory");
            const unsigned s0 = (unsigned)(w0 >> 32), s1 = (unsigned)(w1 >> 32);
            if (s0 != s1 || (s0 >> 2) != (p.epoch & 0x3fffffffu)) return false;
            *prefix = (s0 & 3u) == WP_TILE_PREFIX;
            v->runs = (unsigned)w1;
            v->v = wp_from_bits64<A>((unsigned)w0);
            return true;
        }
        const unsigned st = wp_ld_acquire((const unsigned *)r);
        if ((st >> 2) != (p.epoch & 0x3fffffffu)) return false;
        *prefix = (st & 3u) == WP_TILE_PREFIX;
        const unsigned long long *q = r + (*prefix ? 3 : 1);
        v->runs = wp_ld_gpu(q);
        v->v = wp_from_bits64<A>(wp_ld_gpu(q + 1));
        return true;
    }
};

/* The tile's exclusive prefix P_tile-1, by one whole warp for a tile > 0 that has published its
 * aggregate (scan.cu's wp_scan_lookback, over pairs): a window is the W = 32 * K tiles below `top` (lane
 * l, slot k: distance 32k + l); it waits until the window holds a prefix with every nearer tile
 * published, or every tile published and no prefix, then stashes the window and moves one back. The
 * result is the left fold P_j + A_j+1 + .. + A_tile-1 — exactly P_tile-1 of the chain P_i = P_i-1 + A_i,
 * whichever j it found — the same in every lane. */
template <typename A, class Op>
WP_DEV wp_kv<A> wp_bykey_lookback(const wp_data_params &p, unsigned long long tile, wp_kv_op<A, Op> op,
                                  wp_kv<A> *stash) {
    typedef wp_kv<A> kv;
    typedef wp_kv_status<A> status;
    constexpr int K = WP_BYKEY_LANE_TILES, W = 32 * K, WINDOWS = WP_BYKEY_DEPTH / W;
    const int lane = wp_lane();
    long long top = (long long)tile - 1;
    int win = 0;
    for (;;) {
        kv v[K];
        bool ready[K], pre[K];
#pragma unroll
        for (int k = 0; k < K; k++) {
            v[k] = wp_zero<kv>();
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
        }
        kv *s = stash + win * W;
#pragma unroll
        for (int k = 0; k < K; k++) s[32 * k + lane] = v[k];
        __syncwarp();
        if (dp >= 0) {
            kv acc = s[dp];
            for (int d = dp - 1; d >= 0; d--) acc = op(acc, s[d]);
            for (int w = win - 1; w >= 0; w--)
                for (int d = W - 1; d >= 0; d--) acc = op(acc, stash[w * W + d]);
            return acc;
        }
        if (win < WINDOWS - 1) { /* all aggregates: keep them, look further back */
            win++;
            top -= W;
        } /* else the stash is full: poll this window again until a prefix shows up */
    }
}

/* The shared-memory transpose of a warp's 32 * VECS 16-byte vectors (scan.cu's layout): thread t's
 * vector v sits at t * VECS + (v ^ f(t)), so both the blocked and the striped accesses hit 8 distinct
 * 16-byte bank groups per quarter warp. */
template <int VECS> WP_DEV int wp_bykey_slot(int c) {
    const int t = c / VECS, v = c % VECS;
    const int f = VECS >= 8 ? (t & 7) : ((t / (8 / VECS)) & (VECS - 1));
    return t * VECS + (v ^ f);
}

/* A thread's ITEMS consecutive elements of an array of W (raw words): a full warp of a staged block
 * loads its 32 * ITEMS elements as striped 16-byte vectors and transposes them through ws (scan.cu's
 * layout); a full thread of a larger block loads its own vectors; else one element at a time (0 past n). */
template <typename W, int ITEMS, bool STAGED>
WP_DEV void wp_bykey_load(const W *in, unsigned long long base, unsigned long long wbase, bool warp_full, int cnt,
                          uint4 *ws, int lane, W (&x)[ITEMS]) {
    constexpr int VECS = ITEMS * (int)sizeof(W) / 16, PER_VEC = 16 / (int)sizeof(W);
    if (STAGED && warp_full) {
        const uint4 *src = (const uint4 *)(in + wbase);
        uint4 r[VECS];
#pragma unroll
        for (int k = 0; k < VECS; k++) r[k] = __ldg(src + 32 * k + lane);
        __syncwarp(); /* the lanes are done reading ws's previous contents */
#pragma unroll
        for (int k = 0; k < VECS; k++) ws[wp_bykey_slot<VECS>(32 * k + lane)] = r[k];
        __syncwarp();
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            const uint4 q = ws[wp_bykey_slot<VECS>(lane * VECS + v)];
            memcpy(&x[v * PER_VEC], &q, 16);
        }
    } else if (!STAGED && cnt == ITEMS) {
#pragma unroll
        for (int v = 0; v < VECS; v++) {
            const uint4 q = __ldg((const uint4 *)(in + base) + v);
            memcpy(&x[v * PER_VEC], &q, 16);
        }
    } else {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) x[j] = j < cnt ? __ldg(in + base + j) : (W)0;
    }
}

template <int BYTES> struct wp_key_word;
template <> struct wp_key_word<4> { typedef unsigned type; };
template <> struct wp_key_word<8> { typedef unsigned long long type; };

/* The raw word a value of T loads as (f16/bf16 through their bits). */
template <typename T> struct wp_val_word { typedef typename wp_raw<T>::word type; };
#ifdef WP_NEED_FP16
template <> struct wp_val_word<__half> { typedef unsigned short type; };
template <> struct wp_val_word<__nv_bfloat16> { typedef unsigned short type; };
#endif

template <typename T, typename A, int BLOCK, int KEYBYTES, class Op>
WP_DEV void wp_reduce_by_key_run(const wp_data_params &p, const unsigned long long tile) {
    typedef typename wp_key_word<KEYBYTES>::type K;
    typedef typename wp_val_word<T>::type VW;
    typedef wp_kv<A> kv;
    typedef wp_kv_status<A> status;
    constexpr int ITEMS = WP_BYKEY_ITEMS, WARPS = BLOCK / 32;
    constexpr int STAGE = (int)(sizeof(K) > sizeof(VW) ? sizeof(K) : sizeof(VW)); /* vectors per thread */
    constexpr unsigned long long TILE = (unsigned long long)BLOCK * ITEMS;
    constexpr bool STAGED = BLOCK * STAGE * 16 <= WP_BYKEY_STAGE_MAX;
    static_assert(sizeof(VW) == sizeof(T), "values load as their raw words");
    __shared__ uint4 stage[STAGED ? BLOCK * STAGE : 1];
    __shared__ kv totals[WARPS];
    __shared__ kv stash[WP_BYKEY_DEPTH];
    __shared__ kv prefix_sh;
    __shared__ bool has_prefix_sh;
    wp_kv_op<A, Op> kop;
    Op op;
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const unsigned long long n = p.n;
    const unsigned long long base = tile * TILE + (unsigned long long)t * ITEMS;
    const unsigned long long wbase = tile * TILE + (unsigned long long)w * 32 * ITEMS;
    const bool warp_full = wbase + 32ull * ITEMS <= n; /* the same in every lane */
    const int cnt = base + ITEMS <= n ? ITEMS : (base < n ? (int)(n - base) : 0);
    const K *keys = (const K *)p.aux;
    uint4 *ws = stage + (STAGED ? w * 32 * STAGE : 0);
    K k[ITEMS];
    VW xw[ITEMS];
    wp_bykey_load<K, ITEMS, STAGED>(keys, base, wbase, warp_full, cnt, ws, lane, k);
    wp_bykey_load<VW, ITEMS, STAGED>((const VW *)p.in, base, wbase, warp_full, cnt, ws, lane, xw);

    /* run starts: the first element, and every key unlike the one before it */
    const K up = __shfl_up_sync(WP_FULL_MASK, k[ITEMS - 1], 1);
    K before = up;
    if (lane == 0 && base > 0 && base < n) before = __ldg(keys + base - 1);
    unsigned heads = 0;
    if (cnt > 0 && (base == 0 || k[0] != before)) heads = 1u;
#pragma unroll
    for (int j = 1; j < ITEMS; j++)
        if (j < cnt && k[j] != k[j - 1]) heads |= 1u << j;

    /* 1. the thread's pair */
    kv mine;
    mine.runs = (unsigned long long)__popc(heads);
    mine.v = wp_convert<A>(wp_raw<T>::value(xw[0]));
#pragma unroll
    for (int j = 1; j < ITEMS; j++) {
        const A xj = wp_convert<A>(wp_raw<T>::value(xw[j]));
        if (j < cnt) mine.v = (heads >> j) & 1u ? xj : op(mine.v, xj);
    }
    if (cnt == 0) mine = wp_zero<kv>();

    /* 2. the block scan of the pairs */
    kv inc = mine;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const kv left = wp_kv_shfl_up(inc, o);
        if (lane >= o) inc = kop(left, inc);
    }
    if (lane == 31) totals[w] = inc;
    __syncthreads();
    const kv left1 = wp_kv_shfl_up(inc, 1);
    kv texcl = left1;
    bool thas = lane > 0;
    if (w > 0) {
        kv wpre = totals[0];
        for (int q = 1; q < w; q++) wpre = kop(wpre, totals[q]);
        texcl = thas ? kop(wpre, left1) : wpre;
        thas = true;
    }

    /* 3. the tile's prefix: publish A_i at once, look back for P_i-1, publish P_i */
    if (w == 0) {
        kv tile_agg = totals[0];
#pragma unroll
        for (int q = 1; q < WARPS; q++) tile_agg = kop(tile_agg, totals[q]);
        kv excl = wp_zero<kv>();
        if (tile == 0) {
            if (lane == 0) status::publish(p, 0, WP_TILE_PREFIX, tile_agg);
        } else {
            if (lane == 0) status::publish(p, tile, WP_TILE_AGGREGATE, tile_agg);
            excl = wp_bykey_lookback<A, Op>(p, tile, kop, stash);
            if (lane == 0) status::publish(p, tile, WP_TILE_PREFIX, kop(excl, tile_agg));
        }
        if (lane == 0) {
            prefix_sh = excl;
            has_prefix_sh = tile > 0;
        }
    }
    __syncthreads();
    if (cnt == 0) return;

    /* 4. the walk: write each run's key at its start, its value where the next one starts */
    bool has = has_prefix_sh;
    kv pre = prefix_sh;
    if (thas) {
        pre = has ? kop(pre, texcl) : texcl;
        has = true;
    }
    T *out_v = (T *)p.out;
    K *out_k = (K *)p.seed;
    unsigned long long run = has ? pre.runs : 0; /* runs started before this element */
    A r = pre.v;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        if (j >= cnt) break;
        const A xj = wp_convert<A>(wp_raw<T>::value(xw[j]));
        if ((heads >> j) & 1u) {
            if (has) out_v[run - 1] = wp_convert<T>(r);
            out_k[run] = __ldg(keys + base + j); /* keys are not kept past the heads: rare, cached */
            run++;
            r = xj;
        } else {
            r = op(r, xj);
        }
        has = true;
    }
    if (base + cnt == n) {
        out_v[run - 1] = wp_convert<T>(r);
        *(unsigned long long *)p.counter = run;
    }
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int KEYBYTES, class Op>
__global__ void __launch_bounds__(BLOCK) wp_reduce_by_key(wp_data_params p) {
    wp_grid_entry();
    wp_reduce_by_key_run<T, A, BLOCK, KEYBYTES, Op>(p, blockIdx.x);
}
