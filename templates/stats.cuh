/* stats.cuh — the statistics and norms of device_reduce ("op": mean, var, std, norm1, norm2, norminf,
 * count_nonzero): accumulators, their make and combine functors, and the kernels wp_device_stats and
 * wp_device_stats_batch. They run device_reduce's own pass (wp_device_reduce_run of reduce.cu: same
 * tiles, same order, same tickets) over another accumulator, as argmin/argmax run it over wp_argval.
 * VARIANT picks the accumulator (WP_SACC_*, wp_abi.h); the host (kernels/stats.h) turns the
 * accumulator into the answer, and kernels/stats.c emulates these functors operation for operation.
 * Every accumulator is double (count_nonzero: an unsigned 64-bit count), whatever the element type:
 * no element's square overflows or underflows a double except f64's, which norm2 scales as LAPACK's
 * dnrm2 does (Blue's three sums). Included at the end of reduce.cu. */
#ifndef WP_STATS_CUH
#define WP_STATS_CUH

/* Count, shift and the shifted sums: the elements folded are c values x with sum(x - k) = s1 and
 * sum((x - k)^2) = s2. One element is {1, x, -0, -0}. A thread adds each next element to its shifted
 * sums (its first element is the shift: two adds and a multiply, no division); threads, blocks and
 * parts meet by Chan's pairwise update written for shifted sums: b's sums move to a's shift. The shift
 * is always an element, never a rounded mean, so the error depends on how far elements lie from the
 * mean in standard deviations, not on the data's offset (docs/semantics.md). */
struct wp_moments {
    double c, k, s1, s2;
};
/* norm2: the sums of squares of the medium, big (scaled by WP_NRM2_SBIG) and small (scaled by
 * WP_NRM2_SSML) magnitudes; for types narrower than f64 only med is used (unscaled squares fit). */
struct wp_sqsum {
    double med, big, small;
};
/* norm1, norminf: a double; count_nonzero: an unsigned long long. */
struct wp_sabs {
    double v;
};
struct wp_scount {
    unsigned long long v;
};

/* LAPACK 3.10 dnrm2's constants for double (radix 2, 53 digits, exponents -1021..1024). */
#define WP_NRM2_TSML 0x1p-511
#define WP_NRM2_TBIG 0x1p486
#define WP_NRM2_SSML 0x1p537
#define WP_NRM2_SBIG 0x1p-538

/* Element -> double, exactly as kernels/types.c's wp_value_to_double (halves through float). */
template <typename T> WP_DEV double wp_stat_f64(T x) { return (double)x; }
template <typename T> WP_DEV bool wp_stat_nonzero(T x) { return x != (T)0; }
#ifdef WP_NEED_FP16
template <> WP_DEV double wp_stat_f64<__half>(__half x) { return (double)__half2float(x); }
template <> WP_DEV double wp_stat_f64<__nv_bfloat16>(__nv_bfloat16 x) { return (double)__bfloat162float(x); }
/* by the bits: anything but +0 and -0 (NaN too) */
template <> WP_DEV bool wp_stat_nonzero<__half>(__half x) { return (__half_as_ushort(x) & 0x7fffu) != 0; }
template <> WP_DEV bool wp_stat_nonzero<__nv_bfloat16>(__nv_bfloat16 x) {
    return (__bfloat16_as_ushort(x) & 0x7fffu) != 0;
}
#endif

template <typename T> struct wp_stat_is_f64 {
    static const bool value = false;
};
template <> struct wp_stat_is_f64<double> {
    static const bool value = true;
};

/* ---- makes: one element as an accumulator ---- */
template <typename T> struct wp_make_moments {
    typedef wp_moments acc;
    static WP_DEV wp_moments run(T x, unsigned long long) {
        wp_moments m;
        m.c = 1.0;
        m.k = wp_stat_f64(x);
        m.s1 = -0.0; /* -0 + d is d: adding an element to a thread's sums folds to two adds */
        m.s2 = -0.0;
        return m;
    }
};
template <typename T> struct wp_make_sqsum {
    typedef wp_sqsum acc;
    static WP_DEV wp_sqsum run(T x, unsigned long long) {
        wp_sqsum q;
        const double v = wp_stat_f64(x);
        if constexpr (wp_stat_is_f64<T>::value) { /* f64: scaled, LAPACK's thresholds */
            const double ax = fabs(v);
            const bool big = ax > WP_NRM2_TBIG, small = ax < WP_NRM2_TSML;
            const double y = ax * (big ? WP_NRM2_SBIG : small ? WP_NRM2_SSML : 1.0), yy = y * y;
            q.med = big || small ? 0.0 : yy;
            q.big = big ? yy : 0.0;
            q.small = small ? yy : 0.0;
        } else {
            q.med = v * v;
            q.big = -0.0;
            q.small = -0.0;
        }
        return q;
    }
};
template <typename T> struct wp_make_abs {
    typedef wp_sabs acc;
    static WP_DEV wp_sabs run(T x, unsigned long long) {
        wp_sabs a;
        a.v = fabs(wp_stat_f64(x));
        return a;
    }
};
template <typename T> struct wp_make_nonzero {
    typedef wp_scount acc;
    static WP_DEV wp_scount run(T x, unsigned long long) {
        wp_scount n;
        n.v = wp_stat_nonzero(x) ? 1ull : 0ull;
        return n;
    }
};

/* ---- combines (kernels/stats.h has the same on the host) ---- */
struct wp_op_moments {
    WP_DEV wp_moments operator()(wp_moments a, wp_moments b) const {
        wp_moments r;
        if (b.c == 1.0) { /* one element (always so in a thread's fold): into a's shifted sums */
            const double d = b.k - a.k;
            r.c = a.c + 1.0;
            r.k = a.k;
            r.s1 = a.s1 + d;
            r.s2 = a.s2 + d * d;
            return r;
        }
        if (a.c == 0.0) return b;
        if (b.c == 0.0) return a;
        /* b's sums moved to a's shift (both shifts are elements: d is about the data's spread) */
        const double d = b.k - a.k;
        r.c = a.c + b.c;
        r.k = a.k;
        r.s1 = a.s1 + (b.s1 + b.c * d);
        r.s2 = a.s2 + (b.s2 + d * (2.0 * b.s1 + b.c * d));
        return r;
    }
};
struct wp_op_sqsum {
    WP_DEV wp_sqsum operator()(wp_sqsum a, wp_sqsum b) const {
        wp_sqsum r;
        r.med = a.med + b.med;
        r.big = a.big + b.big;
        r.small = a.small + b.small;
        return r;
    }
};
struct wp_op_abssum {
    WP_DEV wp_sabs operator()(wp_sabs a, wp_sabs b) const {
        wp_sabs r;
        r.v = a.v + b.v;
        return r;
    }
};
struct wp_op_absmax { /* a NaN wins (numpy's max), else the larger */
    WP_DEV wp_sabs operator()(wp_sabs a, wp_sabs b) const {
        if (a.v != a.v) return a;
        if (b.v != b.v) return b;
        return b.v > a.v ? b : a;
    }
};
struct wp_op_count {
    WP_DEV wp_scount operator()(wp_scount a, wp_scount b) const {
        wp_scount r;
        r.v = a.v + b.v;
        return r;
    }
};

/* ---- what the generic pass needs of an accumulator: a zero, shuffles (by 64-bit words) ---- */
#define WP_STAT_ACC_TRAITS(S)                                                                                          \
    template <> struct wp_zero_of<S> {                                                                                 \
        static WP_DEV S get() {                                                                                        \
            S z;                                                                                                       \
            memset(&z, 0, sizeof z);                                                                                   \
            return z;                                                                                                  \
        }                                                                                                              \
    };                                                                                                                 \
    template <int W> WP_DEV S wp_any_shfl_down(S v, int o) {                                                           \
        unsigned long long *w = (unsigned long long *)&v;                                                              \
        _Pragma("unroll") for (int k = 0; k < (int)(sizeof(S) / 8); k++) w[k] =                                        \
            wp_warp_shfl_down<unsigned long long, W, WP_FULL_MASK>(w[k], o);                                           \
        return v;                                                                                                      \
    }                                                                                                                  \
    template <int W> WP_DEV S wp_any_shfl_xor(S v, int o) {                                                            \
        unsigned long long *w = (unsigned long long *)&v;                                                              \
        _Pragma("unroll") for (int k = 0; k < (int)(sizeof(S) / 8); k++) w[k] =                                        \
            wp_warp_shfl_xor<unsigned long long, W, WP_FULL_MASK>(w[k], o);                                            \
        return v;                                                                                                      \
    }
WP_STAT_ACC_TRAITS(wp_moments)
WP_STAT_ACC_TRAITS(wp_sqsum)
WP_STAT_ACC_TRAITS(wp_sabs)
WP_STAT_ACC_TRAITS(wp_scount)

/* VARIANT (WP_SACC_*) -> make and combine. */
template <typename T, int VARIANT> struct wp_stat_kind;
template <typename T> struct wp_stat_kind<T, WP_SACC_MOMENTS> {
    typedef wp_make_moments<T> make;
    typedef wp_op_moments op;
};
template <typename T> struct wp_stat_kind<T, WP_SACC_ABS_SUM> {
    typedef wp_make_abs<T> make;
    typedef wp_op_abssum op;
};
template <typename T> struct wp_stat_kind<T, WP_SACC_SQ_SUM> {
    typedef wp_make_sqsum<T> make;
    typedef wp_op_sqsum op;
};
template <typename T> struct wp_stat_kind<T, WP_SACC_ABS_MAX> {
    typedef wp_make_abs<T> make;
    typedef wp_op_absmax op;
};
template <typename T> struct wp_stat_kind<T, WP_SACC_NONZERO> {
    typedef wp_make_nonzero<T> make;
    typedef wp_op_count op;
};

/* Threads per SM the launch bounds ask for, by accumulator (NVRTC's -Xptxas=-v, BLOCK 512, sm_90): the
 * moments (8 registers of state beside 16 of loads) and norm2's three sums need 64 and 54 registers to
 * spill nothing: 1024 threads, 64 KiB of loads in flight per SM; at 40 both spill. The one-word ones fit
 * 32, as device_reduce's own: 2048 threads. */
#define WP_STATS_THREADS_PER_SM(VARIANT) ((VARIANT) == WP_SACC_MOMENTS || (VARIANT) == WP_SACC_SQ_SUM ? 1024 : 2048)
#define WP_STATS_MIN_BLOCKS(BLOCK, VARIANT)                                                                            \
    ((BLOCK) >= 64 ? WP_STATS_THREADS_PER_SM(VARIANT) / (BLOCK) : WP_STATS_THREADS_PER_SM(VARIANT) / 64)

/* kernel<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op> like every data kernel; A and Op are unused (the
 * accumulator and combine come from VARIANT). */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK, WP_STATS_MIN_BLOCKS(BLOCK, VARIANT)) wp_device_stats(wp_data_params p) {
    typedef wp_stat_kind<T, VARIANT> K;
    wp_grid_wait();
    wp_device_reduce_run<T, BLOCK, STRAT, typename K::op, typename K::make>(p, blockIdx.x, gridDim.x,
                                                                            typename K::op());
}
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK, WP_STATS_MIN_BLOCKS(BLOCK, VARIANT)) wp_device_stats_batch(wp_data_params p) {
    typedef wp_stat_kind<T, VARIANT> K;
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_device_reduce_run<T, BLOCK, STRAT, typename K::op, typename K::make>(q, bid, G, typename K::op());
}

#endif
