// ops_compile_check.cu — compile-only check of templates/wp_ops.cuh: every builtin functor on every
// type, and two functors exactly as kernels/expr.c emits them (one using every integer helper, one
// every helper allowed on floats). No GPU needed:
//   nvcc -std=c++17 -arch=sm_90 -cubin -DWP_NEED_FP16 -Itemplates -x cu tests/unit/ops_compile_check.cu -o /dev/null
// (also without -DWP_NEED_FP16, which drops the 16-bit types). tests/unit/test_ops_nvrtc.c does the
// same through NVRTC; tests/unit/ops_gpu_check.sh runs the functors on a GPU against the host.
#include "wp_ops.cuh"

namespace int_expr { // 'a < b ? min(a, b) : max(abs(-a), ~b) + (a*b - a/b) % 3 ^ (a << 2 | b >> 1) & ...'
struct wp_op_expr {
    template <typename T> __device__ T operator()(T a_, T b_) const {
        typedef typename wp_calc<T>::type C;
        const C a = wp_to_calc(a_), b = wp_to_calc(b_);
        (void)a;
        (void)b;
        return wp_from_calc<T>(wp_sel(
            wp_lt(a, b), wp_min(a, b),
            wp_xor(wp_add(wp_max(wp_abs(wp_neg(a)), wp_not(b)), wp_mod(wp_sub(wp_mul(a, b), wp_div(a, b)), (C)0x3ull)),
                   wp_and(wp_or(wp_shl(a, (C)0x2ull), wp_shr(b, (C)0x1ull)),
                          wp_add(wp_add(wp_sub(wp_add(wp_le(a, b), wp_ge(a, b)), wp_mul(wp_gt(a, b), wp_eq(a, b))),
                                        wp_ne(a, b)),
                                 (C)0x10ull)))));
    }
};
} // namespace int_expr

namespace any_expr { // 'a < b ? min(a, b) : max(abs(-a), b) + (a*b - a/b) * 3 - (a <= b) + ... + 0x10 + 0.25'
struct wp_op_expr {
    template <typename T> __device__ T operator()(T a_, T b_) const {
        typedef typename wp_calc<T>::type C;
        const C a = wp_to_calc(a_), b = wp_to_calc(b_);
        (void)a;
        (void)b;
        return wp_from_calc<T>(wp_sel(
            wp_lt(a, b), wp_min(a, b),
            wp_add(wp_add(wp_add(wp_sub(wp_add(wp_sub(wp_add(wp_max(wp_abs(wp_neg(a)), b),
                                                             wp_mul(wp_sub(wp_mul(a, b), wp_div(a, b)), (C)0x3ull)),
                                                      wp_le(a, b)),
                                               wp_ge(a, b)),
                                        wp_mul(wp_gt(a, b), wp_eq(a, b))),
                                 wp_ne(a, b)),
                          (C)0x10ull),
                   (C)0x1p-2)));
    }
};
} // namespace any_expr

template <typename T, class Op> __global__ void apply(const T *a, const T *b, T *out) {
    unsigned i = threadIdx.x;
    out[i] = Op()(a[i], b[i]);
}

template <typename T> void all_ops() {
    (void)apply<T, wp_op_sum<T>>;
    (void)apply<T, wp_op_prod<T>>;
    (void)apply<T, wp_op_min<T>>;
    (void)apply<T, wp_op_max<T>>;
    (void)apply<T, any_expr::wp_op_expr>;
}

template <typename T> void int_ops() {
    all_ops<T>();
    (void)apply<T, wp_op_and<T>>;
    (void)apply<T, wp_op_or<T>>;
    (void)apply<T, wp_op_xor<T>>;
    (void)apply<T, int_expr::wp_op_expr>;
}

void instantiate_everything() {
    int_ops<int>();
    int_ops<unsigned>();
    int_ops<long long>();
    int_ops<unsigned long long>();
    all_ops<float>();
    all_ops<double>();
#ifdef WP_NEED_FP16
    all_ops<__half>();
    all_ops<__nv_bfloat16>();
#endif
}
