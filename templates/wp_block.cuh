/* wp_block.cuh — the group and block layer (CUB's WarpReduce/BlockReduce/BlockScan) that the
 * data-parallel kernels (reduce.cu, scan.cu, stencil.cu, generate.cu) build on, over the warp layer
 * of wp_warp.cuh. A "group" is GROUP consecutive threads: a warp segment (GROUP <= 32) or the block.
 *
 * Every function here follows one combining order, written down in docs/semantics.md ("Data-parallel
 * families") and mirrored by kernels/reduce.c and kernels/scan.c, so the emulator gives the same bits:
 *  - tree(valid): for o = P/2 .. 1 (P a power of two >= valid), slot i < o takes op(v[i], v[i+o]) when
 *    i + o < valid. Only the first `valid` slots hold values; the result is slot 0.
 *  - Hillis-Steele scan: for o = 1, 2, 4, ..: slot i >= o takes op(v[i-o], v[i]).
 * Strategies (WP_STRAT_*, wp_abi.h) pick where the tree runs: shuffles, shared or global memory,
 * the sm_80 redux instructions, or atomics (the one order that is not fixed). */
#ifndef WP_BLOCK_CUH
#define WP_BLOCK_CUH

#include "wp_warp.cuh"

#define WP_FULL_MASK 0xffffffffu

/* ---- conversions between the element type T and the accumulator type A ---------------------- */

template <typename A, typename T> struct wp_cvt {
    static WP_DEV A run(T x) { return (A)x; }
};
template <typename T> struct wp_cvt<T, T> {
    static WP_DEV T run(T x) { return x; }
};
#ifdef WP_NEED_FP16
template <> struct wp_cvt<float, __half> {
    static WP_DEV float run(__half x) { return __half2float(x); }
};
template <> struct wp_cvt<__half, float> {
    static WP_DEV __half run(float x) { return __float2half_rn(x); }
};
template <> struct wp_cvt<float, __nv_bfloat16> {
    static WP_DEV float run(__nv_bfloat16 x) { return __bfloat162float(x); }
};
template <> struct wp_cvt<__nv_bfloat16, float> {
    static WP_DEV __nv_bfloat16 run(float x) { return __float2bfloat16_rn(x); }
};
#endif
template <typename A, typename T> WP_DEV A wp_convert(T x) { return wp_cvt<A, T>::run(x); }

/* Raw bits of A in a 64-bit word (zero-extended), and back. */
template <typename A> WP_DEV unsigned long long wp_bits64(A v) { return (unsigned long long)wp_raw<A>::bits(v); }
template <typename A> WP_DEV A wp_from_bits64(unsigned long long b) {
    return wp_raw<A>::value((typename wp_raw<A>::word)b);
}

/* ---- argmin / argmax values: a value and the index of its element ----------------------------- */

template <typename A> struct wp_argval {
    A v;
    long long i;
};
template <typename A> WP_DEV bool wp_arg_isnan(A) { return false; }
WP_DEV bool wp_arg_isnan(float x) { return wp_isnan(x); }
WP_DEV bool wp_arg_isnan(double x) { return wp_isnan(x); }

/* A total order, so the winner never depends on the combining order: a NaN loses to any number
 * (all NaN: the first NaN wins), equal values (+0 and -0 too) go to the smaller index. */
template <typename A, bool MAX> struct wp_op_arg {
    WP_DEV wp_argval<A> operator()(wp_argval<A> a, wp_argval<A> b) const {
        const bool an = wp_arg_isnan(a.v), bn = wp_arg_isnan(b.v);
        if (an != bn) return an ? b : a;
        if (!an) {
            if (MAX ? b.v < a.v : a.v < b.v) return a;
            if (MAX ? a.v < b.v : b.v < a.v) return b;
        }
        return a.i <= b.i ? a : b;
    }
};

/* A value of any accumulator with all bits zero (what an empty slot holds). */
template <typename A> struct wp_zero_of {
    static WP_DEV A get() { return wp_raw<A>::value(0); }
};
template <typename A> struct wp_zero_of<wp_argval<A> > {
    static WP_DEV wp_argval<A> get() {
        wp_argval<A> z;
        z.v = wp_raw<A>::value(0);
        z.i = 0;
        return z;
    }
};
template <typename A> WP_DEV A wp_zero() { return wp_zero_of<A>::get(); }

/* ---- shuffles of any accumulator (argvals move as two shuffles) ------------------------------ */

template <int W, typename A> WP_DEV A wp_any_shfl_down(A v, int o) { return wp_warp_shfl_down<A, W, WP_FULL_MASK>(v, o); }
template <int W, typename A> WP_DEV A wp_any_shfl_xor(A v, int o) { return wp_warp_shfl_xor<A, W, WP_FULL_MASK>(v, o); }
template <int W, typename A> WP_DEV A wp_any_shfl_up(A v, int o) { return wp_warp_shfl_up<A, W, WP_FULL_MASK>(v, o); }
template <int W, typename A> WP_DEV A wp_any_shfl(A v, int src) { return wp_warp_shfl<A, W, WP_FULL_MASK>(v, src); }
template <int W, typename A> WP_DEV wp_argval<A> wp_any_shfl_down(wp_argval<A> v, int o) {
    v.v = wp_warp_shfl_down<A, W, WP_FULL_MASK>(v.v, o);
    v.i = wp_warp_shfl_down<long long, W, WP_FULL_MASK>(v.i, o);
    return v;
}
template <int W, typename A> WP_DEV wp_argval<A> wp_any_shfl_xor(wp_argval<A> v, int o) {
    v.v = wp_warp_shfl_xor<A, W, WP_FULL_MASK>(v.v, o);
    v.i = wp_warp_shfl_xor<long long, W, WP_FULL_MASK>(v.i, o);
    return v;
}

/* ---- memory-model helpers for the grid-level handoffs (ticket, tile status) ------------------ */

WP_DEV unsigned wp_ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
WP_DEV void wp_st_release(unsigned *p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/* A load that reads the device-coherent copy (L2), never a stale L1 line: whole words of A. */
template <typename A> WP_DEV A wp_ld_gpu(const A *p) {
    A r;
    if constexpr (sizeof(A) % 8 == 0) {
        for (int k = 0; k < (int)(sizeof(A) / 8); k++) {
            unsigned long long w;
            asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"((const unsigned long long *)p + k) : "memory");
            ((unsigned long long *)&r)[k] = w;
        }
    } else if constexpr (sizeof(A) == 4) {
        unsigned w;
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(w) : "l"(p) : "memory");
        r = wp_raw<A>::value((typename wp_raw<A>::word)w);
    } else {
        unsigned short w;
        asm volatile("ld.relaxed.gpu.global.u16 %0, [%1];" : "=h"(w) : "l"(p) : "memory");
        r = wp_raw<A>::value((typename wp_raw<A>::word)w);
    }
    return r;
}

/* ---- atomics: combine v into *addr (global or shared) with op; the order is whatever it is ---- */

template <int BYTES> struct wp_word_of;
template <> struct wp_word_of<2> { typedef unsigned short type; };
template <> struct wp_word_of<4> { typedef unsigned type; };
template <> struct wp_word_of<8> { typedef unsigned long long type; };

template <typename A, class Op> struct wp_atomic {
    static WP_DEV void combine(A *addr, A v, Op op) { /* compare-and-swap on the value's bits */
        typedef typename wp_word_of<sizeof(A)>::type W;
        W *w = (W *)addr;
        W old = *(volatile W *)w, assumed;
        do {
            assumed = old;
            const A cur = wp_raw<A>::value((typename wp_raw<A>::word)assumed);
            old = atomicCAS(w, assumed, (W)wp_raw<A>::bits(op(cur, v)));
        } while (old != assumed);
    }
};
/* Hardware atomics where the instruction does exactly what the functor does. */
#define WP_ATOMIC_HW(OP, T, CALL, CAST)                                                                                \
    template <> struct wp_atomic<T, OP<T> > {                                                                          \
        static WP_DEV void combine(T *addr, T v, OP<T>) { CALL((CAST *)addr, (CAST)v); }                               \
    };
WP_ATOMIC_HW(wp_op_sum, int, atomicAdd, int)
WP_ATOMIC_HW(wp_op_sum, unsigned, atomicAdd, unsigned)
WP_ATOMIC_HW(wp_op_sum, long long, atomicAdd, unsigned long long)
WP_ATOMIC_HW(wp_op_sum, unsigned long long, atomicAdd, unsigned long long)
WP_ATOMIC_HW(wp_op_sum, float, atomicAdd, float)
WP_ATOMIC_HW(wp_op_sum, double, atomicAdd, double)
WP_ATOMIC_HW(wp_op_min, int, atomicMin, int)
WP_ATOMIC_HW(wp_op_min, unsigned, atomicMin, unsigned)
WP_ATOMIC_HW(wp_op_min, long long, atomicMin, long long)
WP_ATOMIC_HW(wp_op_min, unsigned long long, atomicMin, unsigned long long)
WP_ATOMIC_HW(wp_op_max, int, atomicMax, int)
WP_ATOMIC_HW(wp_op_max, unsigned, atomicMax, unsigned)
WP_ATOMIC_HW(wp_op_max, long long, atomicMax, long long)
WP_ATOMIC_HW(wp_op_max, unsigned long long, atomicMax, unsigned long long)
WP_ATOMIC_HW(wp_op_and, int, atomicAnd, int)
WP_ATOMIC_HW(wp_op_and, unsigned, atomicAnd, unsigned)
WP_ATOMIC_HW(wp_op_and, long long, atomicAnd, unsigned long long)
WP_ATOMIC_HW(wp_op_and, unsigned long long, atomicAnd, unsigned long long)
WP_ATOMIC_HW(wp_op_or, int, atomicOr, int)
WP_ATOMIC_HW(wp_op_or, unsigned, atomicOr, unsigned)
WP_ATOMIC_HW(wp_op_or, long long, atomicOr, unsigned long long)
WP_ATOMIC_HW(wp_op_or, unsigned long long, atomicOr, unsigned long long)
WP_ATOMIC_HW(wp_op_xor, int, atomicXor, int)
WP_ATOMIC_HW(wp_op_xor, unsigned, atomicXor, unsigned)
WP_ATOMIC_HW(wp_op_xor, long long, atomicXor, unsigned long long)
WP_ATOMIC_HW(wp_op_xor, unsigned long long, atomicXor, unsigned long long)
#undef WP_ATOMIC_HW
template <typename A, class Op> WP_DEV void wp_atomic_combine(A *addr, A v, Op op) { wp_atomic<A, Op>::combine(addr, v, op); }

/* ---- warp trees: lane 0 of each W-lane segment gets tree(valid) of the segment ---------------- */

/* shfl_down and shfl_xor give lane 0 the same pairs (lane 0 + o == lane 0 ^ o at every level). */
template <typename A, int W, int STRAT, class Op> WP_DEV A wp_warp_tree(A v, int valid, Op op) {
    const int l = wp_lane() & (W - 1);
#pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) {
        if constexpr (STRAT == WP_STRAT_SHFL_XOR) {
            const A other = wp_any_shfl_xor<W>(v, o);
            if ((l ^ o) < valid) v = op(v, other);
        } else {
            const A other = wp_any_shfl_down<W>(v, o);
            if (l + o < valid) v = op(v, other);
        }
    }
    return v;
}

/* The sm_80 redux over the segment's first `valid` lanes (only i32/u32 with sum min max and or xor:
 * the order cannot matter there). */
template <typename A, int W, class Op> WP_DEV A wp_warp_redux_valid(A v, int valid, Op) {
    const int lane = wp_lane(), l = lane & (W - 1);
    if (valid <= 0) return v;
    const unsigned seg_bits = valid >= 32 ? WP_FULL_MASK : ((1u << valid) - 1u);
    if (l < valid) v = wp_redux_sync<Op>::run(seg_bits << (lane - l), v);
    return v;
}

template <typename A, int W, int STRAT, class Op> WP_DEV A wp_warp_reduce_valid(A v, int valid, Op op) {
    if constexpr (STRAT == WP_STRAT_REDUX) return wp_warp_redux_valid<A, W, Op>(v, valid, op);
    else return wp_warp_tree<A, W, STRAT, Op>(v, valid, op);
}

/* ---- group reduce: the group's first thread gets the result ----------------------------------
 * v: this thread's value; valid: how many of the group's threads (a prefix) hold one. shared: at
 * least BLOCK slots of A; gmem: this block's BLOCK slots of global scratch (gmem strategy); ident:
 * the operator's identity (atomic strategy). Every thread of the block must call it (it syncs). */
template <typename A, int GROUP, int BLOCK, int STRAT, class Op>
WP_DEV A wp_group_reduce(A v, int valid, Op op, A *shared, A *gmem, A ident) {
    static_assert(GROUP >= 1 && GROUP <= BLOCK && (GROUP & (GROUP - 1)) == 0, "GROUP must be a power of two <= BLOCK");
    static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two 32..1024");
    const int t = threadIdx.x, l = t & (GROUP - 1);
    if constexpr (STRAT == WP_STRAT_SMEM || STRAT == WP_STRAT_GMEM) {
        A *slots = STRAT == WP_STRAT_SMEM ? shared : gmem;
        slots[t] = v;
        __syncthreads();
#pragma unroll 1
        for (int o = GROUP / 2; o > 0; o >>= 1) {
            if (l < o && l + o < valid) slots[t] = op(slots[t], slots[t + o]);
            __syncthreads();
        }
        const A r = slots[t];
        __syncthreads();
        return r;
    } else if constexpr (STRAT == WP_STRAT_ATOMIC) {
        A *slot = &shared[t / GROUP];
        if (l == 0) *slot = ident;
        __syncthreads();
        if constexpr (GROUP <= 32) {
            if (l < valid) wp_atomic_combine(slot, v, op);
        } else {
            const int lane = wp_lane(), w = t / 32;
            const A r = wp_warp_tree<A, 32, WP_STRAT_SHFL_DOWN, Op>(v, valid - 32 * w, op);
            if (lane == 0 && 32 * w < valid) wp_atomic_combine(slot, r, op);
        }
        __syncthreads();
        const A r = *slot;
        __syncthreads();
        return r;
    } else if constexpr (GROUP <= 32) {
        return wp_warp_reduce_valid<A, GROUP, STRAT, Op>(v, valid, op);
    } else { /* shuffles or redux per warp, then the same over the warps' results in warp 0 */
        /* the second tree runs over GROUP / 32 lanes: lane 0 gets the same pairs as over 32 (no lane
         * past the warps' count ever joins), in fewer shuffle levels */
        constexpr int WARPS = GROUP / 32;
        const int lane = wp_lane(), w = t / 32;
        const int warp_valid = valid - 32 * w;
        const A r = wp_warp_reduce_valid<A, 32, STRAT, Op>(v, warp_valid < 32 ? warp_valid : 32, op);
        if (lane == 0) shared[w] = r;
        __syncthreads();
        A total = r;
        if (w == 0) {
            const int warps_valid = (valid + 31) / 32;
            total = wp_warp_reduce_valid<A, WARPS, STRAT, Op>(lane < warps_valid ? shared[lane] : wp_zero<A>(), warps_valid, op);
        }
        __syncthreads();
        return total;
    }
}

/* ---- group scans (inclusive, Hillis-Steele) --------------------------------------------------- */

template <typename A, int W, class Op> WP_DEV A wp_warp_scan_hs(A v, Op op) {
    const int l = wp_lane() & (W - 1);
#pragma unroll
    for (int o = 1; o < W; o <<= 1) {
        const A left = wp_any_shfl_up<W>(v, o);
        if (l >= o) v = op(left, v);
    }
    return v;
}

/* Inclusive scan of the group. shfl_up: per warp, then the warps' totals scanned in warp 0 and
 * each warp w > 0 takes op(total of warps < w, v). smem: Hillis-Steele over the group in shared
 * memory. Threads past the data may hold anything: they only ever feed later threads. */
template <typename A, int GROUP, int BLOCK, int STRAT, class Op> WP_DEV A wp_group_scan(A v, Op op, A *shared) {
    const int t = threadIdx.x, l = t & (GROUP - 1);
    if constexpr (STRAT == WP_STRAT_SMEM) {
        shared[t] = v;
        __syncthreads();
#pragma unroll 1
        for (int o = 1; o < GROUP; o <<= 1) {
            const A left = l >= o ? shared[t - o] : v;
            __syncthreads();
            if (l >= o) shared[t] = v = op(left, v);
            __syncthreads();
        }
        return v;
    } else if constexpr (GROUP <= 32) {
        return wp_warp_scan_hs<A, GROUP, Op>(v, op);
    } else {
        constexpr int WARPS = GROUP / 32;
        const int lane = wp_lane(), w = t / 32;
        v = wp_warp_scan_hs<A, 32, Op>(v, op);
        if (lane == 31) shared[w] = v;
        __syncthreads();
        if (w == 0) {
            A total = lane < WARPS ? shared[lane] : wp_zero<A>();
            total = wp_warp_scan_hs<A, 32, Op>(total, op);
            if (lane < WARPS) shared[lane] = total;
        }
        __syncthreads();
        if (w > 0) v = op(shared[w - 1], v);
        __syncthreads();
        return v;
    }
}

/* The value of the previous thread of the group (garbage for the group's first thread). */
template <typename A, int GROUP, int BLOCK, class Op> WP_DEV A wp_group_prev(A v, A *shared) {
    if constexpr (GROUP <= 32) {
        return wp_any_shfl_up<GROUP>(v, 1);
    } else {
        const int t = threadIdx.x;
        shared[t] = v;
        __syncthreads();
        const A prev = (t & (GROUP - 1)) ? shared[t - 1] : v;
        __syncthreads();
        return prev;
    }
}

/* ---- logical warps of any width (CUB's LOGICAL_WARP_THREADS 1..32) ------------------------------
 * A width W that is not a power of two cannot tile the warp's shuffle segments, so each warp holds
 * PER_WARP = 32 / W whole logical warps on lanes 0 .. LANES - 1; its last 32 mod W lanes hold none (they
 * still take part in every shuffle and barrier, with l = 0 and nothing valid). l is the lane within the
 * logical warp, valid how many of its lanes (a prefix) hold an element. The order is CUB's for logical
 * warps (docs/semantics.md, kernels/reduce.c wp_remu_tree_up): reduce, for o = 1, 2, 4, .. < W lane l
 * takes op(v[l], v[l+o]) when l + o < valid (the result in lane 0); scan, Hillis-Steele as at every
 * width. shfl_down/shfl_up read lane +- o of the whole warp, which is in the same logical warp whenever
 * the condition holds. shfl_xor is refused for these widths (kernels/spec.c): xor partners leave the group. */
template <int W> struct wp_lw {
    static constexpr int PER_WARP = 32 / W;
    static constexpr int LANES = PER_WARP * W;
};

template <typename A, int W, int BLOCK, int STRAT, class Op>
WP_DEV A wp_lw_reduce(A v, int l, int valid, Op op, A *shared, A *gmem, A ident) {
    static_assert(W >= 1 && W < 32 && (W & (W - 1)) != 0, "wp_lw_reduce: a width that is not a power of two");
    const int t = threadIdx.x, lane = wp_lane();
    if constexpr (STRAT == WP_STRAT_SMEM || STRAT == WP_STRAT_GMEM) {
        A *slots = STRAT == WP_STRAT_SMEM ? shared : gmem; /* slot t + o is in t's logical warp when used */
        slots[t] = v;
        __syncthreads();
#pragma unroll
        for (int o = 1; o < W; o <<= 1) { /* lane 0 reads only multiples of 2o: no slot read and written at once */
            if ((l & (2 * o - 1)) == 0 && l + o < valid) slots[t] = op(slots[t], slots[t + o]);
            __syncthreads();
        }
        const A r = slots[t];
        __syncthreads();
        return r;
    } else if constexpr (STRAT == WP_STRAT_ATOMIC) {
        const bool holds = lane < wp_lw<W>::LANES;
        A *slot = &shared[(t / 32) * wp_lw<W>::PER_WARP + (holds ? lane / W : 0)];
        if (holds && l == 0) *slot = ident;
        __syncthreads();
        if (holds && l < valid) wp_atomic_combine(slot, v, op);
        __syncthreads();
        const A r = *slot;
        __syncthreads();
        return r;
    } else if constexpr (STRAT == WP_STRAT_REDUX) { /* i32/u32 builtins: the order cannot matter */
        if (l < valid) v = wp_redux_sync<Op>::run(((1u << valid) - 1u) << (lane - l), v);
        return v;
    } else {
#pragma unroll
        for (int o = 1; o < W; o <<= 1) {
            const A other = wp_any_shfl_down<32>(v, o);
            if (l + o < valid) v = op(v, other);
        }
        return v;
    }
}

/* Inclusive scan of each logical warp (lanes past valid may hold anything: they only feed later lanes). */
template <typename A, int W, int STRAT, class Op> WP_DEV A wp_lw_scan(A v, int l, Op op, A *shared) {
    if constexpr (STRAT == WP_STRAT_SMEM) {
        const int t = threadIdx.x;
        shared[t] = v;
        __syncthreads();
#pragma unroll
        for (int o = 1; o < W; o <<= 1) {
            const A left = l >= o ? shared[t - o] : v;
            __syncthreads();
            if (l >= o) shared[t] = v = op(left, v);
            __syncthreads();
        }
        return v;
    } else {
#pragma unroll
        for (int o = 1; o < W; o <<= 1) {
            const A left = wp_any_shfl_up<32>(v, o);
            if (l >= o) v = op(left, v);
        }
        return v;
    }
}

/* ---- blocks of any size (CUB's BlockReduce/BlockScan take any block size) ------------------------
 * block_reduce / block_scan with a group of G threads, G not a power of two of at least 32: the group
 * runs in a block of WP_ROUND32(G) threads, whose threads G.. hold nothing (valid 0). The order is the
 * block combine of docs/semantics.md, as for a power of two: tree per warp of 32 (valid lanes first), then
 * tree over the warps' results; smem/gmem one tree over the group; scans Hillis-Steele per warp, then over
 * the warps' totals. A shuffle tree or scan of fewer than 32 runs in a segment of P = the power of two
 * >= its count: lane 0 (a scan's first lanes) gets the same pairs as over exactly the count. */
#define WP_ROUND32(G) (((G) + 31) / 32 * 32)
template <int X> struct wp_pow2_ceil {
    static constexpr int value = 2 * wp_pow2_ceil<(X + 1) / 2>::value;
};
template <> struct wp_pow2_ceil<1> { static constexpr int value = 1; };
template <int G> struct wp_is_pow2_block { static constexpr bool value = G >= 32 && (G & (G - 1)) == 0; };

/* valid: the group's count for its threads, 0 for threads G..; the result in thread 0. */
template <typename A, int G, int STRAT, class Op>
WP_DEV A wp_anyblock_reduce(A v, int valid, Op op, A *shared, A *gmem, A ident) {
    constexpr int P = wp_pow2_ceil<G>::value;
    const int t = threadIdx.x, lane = wp_lane(), w = t / 32;
    if constexpr (STRAT == WP_STRAT_SMEM || STRAT == WP_STRAT_GMEM) {
        A *slots = STRAT == WP_STRAT_SMEM ? shared : gmem;
        slots[t] = v;
        __syncthreads();
#pragma unroll 1
        for (int o = P / 2; o > 0; o >>= 1) {
            if (t < o && t + o < valid) slots[t] = op(slots[t], slots[t + o]);
            __syncthreads();
        }
        const A r = slots[t];
        __syncthreads();
        return r;
    } else if constexpr (STRAT == WP_STRAT_ATOMIC) {
        if (t == 0) shared[0] = ident;
        __syncthreads();
        if constexpr (G <= 32) {
            if (t < valid) wp_atomic_combine(shared, v, op);
        } else {
            const A r = wp_warp_tree<A, 32, WP_STRAT_SHFL_DOWN, Op>(v, valid - 32 * w, op);
            if (lane == 0 && 32 * w < valid) wp_atomic_combine(shared, r, op);
        }
        __syncthreads();
        const A r = shared[0];
        __syncthreads();
        return r;
    } else if constexpr (G < 32) {
        return wp_warp_reduce_valid<A, P, STRAT, Op>(v, valid, op);
    } else {
        constexpr int WP2 = wp_pow2_ceil<(G + 31) / 32>::value;
        const int warp_valid = valid - 32 * w;
        const A r = wp_warp_reduce_valid<A, 32, STRAT, Op>(v, warp_valid < 32 ? warp_valid : 32, op);
        if (lane == 0) shared[w] = r;
        __syncthreads();
        A total = r;
        if (w == 0) {
            const int warps_valid = (valid + 31) / 32;
            total = wp_warp_reduce_valid<A, WP2, STRAT, Op>(lane < warps_valid ? shared[lane] : wp_zero<A>(), warps_valid, op);
        }
        __syncthreads();
        return total;
    }
}

/* Inclusive scan of the group; *prev gets the previous thread's inclusive value (garbage in thread 0). */
template <typename A, int G, int STRAT, class Op> WP_DEV A wp_anyblock_scan(A v, Op op, A *shared, A *prev) {
    constexpr int P = wp_pow2_ceil<G>::value;
    const int t = threadIdx.x;
    if constexpr (STRAT == WP_STRAT_SMEM) {
        shared[t] = v;
        __syncthreads();
#pragma unroll 1
        for (int o = 1; o < G; o <<= 1) {
            const A left = t >= o ? shared[t - o] : v;
            __syncthreads();
            if (t >= o) shared[t] = v = op(left, v);
            __syncthreads();
        }
    } else if constexpr (G < 32) {
        v = wp_warp_scan_hs<A, P, Op>(v, op);
    } else {
        constexpr int WARPS = (G + 31) / 32;
        const int lane = wp_lane(), w = t / 32;
        v = wp_warp_scan_hs<A, 32, Op>(v, op);
        if (lane == 31) shared[w] = v;
        __syncthreads();
        if (w == 0) {
            A total = lane < WARPS ? shared[lane] : wp_zero<A>();
            total = wp_warp_scan_hs<A, 32, Op>(total, op);
            if (lane < WARPS) shared[lane] = total;
        }
        __syncthreads();
        if (w > 0) v = op(shared[w - 1], v);
        __syncthreads();
    }
    shared[t] = v;
    __syncthreads();
    *prev = t ? shared[t - 1] : v;
    __syncthreads();
    return v;
}

/* ---- packed element loads/stores: 16-byte vectors ------------------------------------------- */

template <typename T> struct wp_vec {
    enum { N = 16 / sizeof(T) };
};
template <typename T> WP_DEV void wp_load_vec(const T *base, unsigned long long vec, T (&x)[16 / sizeof(T)]) {
    const uint4 w = wp_ldg((const uint4 *)base + vec);
    memcpy(x, &w, 16);
}

/* ---- batched launches (server/batch_reduce.c) -------------------------------------------------
 * One grid runs many jobs of one kernel: p.in holds a table of p.n parameter blocks, p.aux p.n + 1
 * block starts (job j owns blocks first[j] .. first[j+1] - 1). Block b gets its job's parameters in
 * q and its grid size in G, and returns its block index within the job: the job then runs exactly
 * as it does alone as that block of a G-block grid. */
WP_DEV unsigned wp_batch_job(const wp_data_params &p, wp_data_params &q, unsigned &G) {
    const unsigned *first = (const unsigned *)p.aux;
    const unsigned b = blockIdx.x;
    unsigned lo = 0, hi = (unsigned)p.n; /* first[lo] <= b < first[hi] */
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (first[mid] <= b)
            lo = mid;
        else
            hi = mid;
    }
    q = ((const wp_data_params *)p.in)[lo];
    G = first[lo + 1] - first[lo];
    return b - first[lo];
}

#endif
