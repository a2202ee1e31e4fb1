// wp_ops.cuh — the device half of server/expr.h: element arithmetic and the operator functors.
// Every rule here mirrors the host evaluator in server/expr.c bit for bit (tests/unit/ops_gpu_check.sh
// compares them on a GPU); change both or neither.
//  - integers: two's complement wrap-around (math done in the unsigned type), x/0 = x%0 = 0,
//    MIN/-1 = MIN, MIN%-1 = 0, shift counts modulo the width, >> arithmetic on signed types,
//    abs(MIN) = MIN, comparisons give 1/0 in the type, sel tests c != 0.
//  - f32/f64: IEEE round-to-nearest through __fadd_rn & co (never contracted into an FMA, whatever
//    --fmad says); a NaN result is the canonical 0x7fffffff / 0x7fffffffffffffff; neg and abs
//    flip/clear the sign bit only. min/max ignore a NaN operand unless both are, and on a tie
//    (+0 vs -0) the first operand wins. Do not compile with --use_fast_math or -ftz=true.
//  - __half/__nv_bfloat16 compute in float (wp_calc) and round once at the end (wp_from_calc).
// Compiles under NVRTC (C++17) and nvcc; define WP_NEED_FP16 to get the 16-bit float types.
#ifndef WP_OPS_CUH
#define WP_OPS_CUH

#ifdef WP_NEED_FP16
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#define WP_DEV __device__ __forceinline__

// ---- calc type: what an element is computed in ----
template <typename T> struct wp_calc { typedef T type; };
template <typename T> WP_DEV T wp_to_calc(T v) { return v; }
template <typename T> WP_DEV T wp_from_calc(typename wp_calc<T>::type c) { return c; }

#ifdef WP_NEED_FP16
template <> struct wp_calc<__half> { typedef float type; };
template <> struct wp_calc<__nv_bfloat16> { typedef float type; };
WP_DEV float wp_to_calc(__half v) { return __half2float(v); }
WP_DEV float wp_to_calc(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> WP_DEV __half wp_from_calc<__half>(float c) { return __float2half_rn(c); }
template <> WP_DEV __nv_bfloat16 wp_from_calc<__nv_bfloat16>(float c) { return __float2bfloat16_rn(c); }
#endif

// ---- integers: T the type, U its unsigned twin, BITS its width ----
#define WP_INT_HELPERS(T, U, BITS)                                                                                     \
    WP_DEV T wp_add(T a, T b) { return (T)((U)a + (U)b); }                                                             \
    WP_DEV T wp_sub(T a, T b) { return (T)((U)a - (U)b); }                                                             \
    WP_DEV T wp_mul(T a, T b) { return (T)((U)a * (U)b); }                                                             \
    WP_DEV T wp_neg(T a) { return (T)((U)0 - (U)a); }                                                                  \
    WP_DEV T wp_not(T a) { return (T) ~(U)a; }                                                                         \
    WP_DEV T wp_and(T a, T b) { return (T)((U)a & (U)b); }                                                             \
    WP_DEV T wp_or(T a, T b) { return (T)((U)a | (U)b); }                                                              \
    WP_DEV T wp_xor(T a, T b) { return (T)((U)a ^ (U)b); }                                                             \
    WP_DEV T wp_shl(T a, T b) { return (T)((U)a << ((U)b & (U)(BITS - 1))); }                                          \
    WP_DEV T wp_shr(T a, T b) { return (T)(a >> (int)((U)b & (U)(BITS - 1))); /* arithmetic when T is signed */ }      \
    WP_DEV T wp_lt(T a, T b) { return (T)(a < b ? 1 : 0); }                                                            \
    WP_DEV T wp_le(T a, T b) { return (T)(a <= b ? 1 : 0); }                                                           \
    WP_DEV T wp_gt(T a, T b) { return (T)(a > b ? 1 : 0); }                                                            \
    WP_DEV T wp_ge(T a, T b) { return (T)(a >= b ? 1 : 0); }                                                           \
    WP_DEV T wp_eq(T a, T b) { return (T)(a == b ? 1 : 0); }                                                           \
    WP_DEV T wp_ne(T a, T b) { return (T)(a != b ? 1 : 0); }                                                           \
    WP_DEV T wp_sel(T c, T x, T y) { return c != (T)0 ? x : y; }                                                       \
    WP_DEV T wp_min(T a, T b) { return b < a ? b : a; }                                                                \
    WP_DEV T wp_max(T a, T b) { return a < b ? b : a; }

#define WP_SIGNED_HELPERS(T, U)                                                                                        \
    WP_DEV T wp_div(T a, T b) { return b == (T)0 ? (T)0 : b == (T)-1 ? wp_neg(a) : (T)(a / b); }                       \
    WP_DEV T wp_mod(T a, T b) { return (b == (T)0 || b == (T)-1) ? (T)0 : (T)(a % b); }                                \
    WP_DEV T wp_abs(T a) { return a < (T)0 ? wp_neg(a) : a; }

#define WP_UNSIGNED_HELPERS(T)                                                                                         \
    WP_DEV T wp_div(T a, T b) { return b == (T)0 ? (T)0 : (T)(a / b); }                                                \
    WP_DEV T wp_mod(T a, T b) { return b == (T)0 ? (T)0 : (T)(a % b); }                                                \
    WP_DEV T wp_abs(T a) { return a; }

WP_INT_HELPERS(int, unsigned, 32)
WP_SIGNED_HELPERS(int, unsigned)
WP_INT_HELPERS(unsigned, unsigned, 32)
WP_UNSIGNED_HELPERS(unsigned)
WP_INT_HELPERS(long long, unsigned long long, 64)
WP_SIGNED_HELPERS(long long, unsigned long long)
WP_INT_HELPERS(unsigned long long, unsigned long long, 64)
WP_UNSIGNED_HELPERS(unsigned long long)

// ---- floats: F the type, I its bit twin, SIGN its sign bit, INF the bits of +inf, QNAN the canonical NaN ----
WP_DEV unsigned wp_fbits(float x) { return __float_as_uint(x); }
WP_DEV float wp_ffrom(unsigned u) { return __uint_as_float(u); }
WP_DEV unsigned long long wp_fbits(double x) { return (unsigned long long)__double_as_longlong(x); }
WP_DEV double wp_ffrom(unsigned long long u) { return __longlong_as_double((long long)u); }

#define WP_FLOAT_HELPERS(F, I, SIGN, INF, QNAN, ADD, SUB, MUL, DIV)                                                    \
    /* bit tests: immune to fast-math assumptions about NaN */                                                         \
    WP_DEV bool wp_isnan(F x) { return (wp_fbits(x) & ~(I)SIGN) > (I)INF; }                                            \
    WP_DEV F wp_canon(F r) { return wp_isnan(r) ? wp_ffrom((I)QNAN) : r; }                                             \
    WP_DEV F wp_add(F a, F b) { return wp_canon(ADD(a, b)); }                                                          \
    WP_DEV F wp_sub(F a, F b) { return wp_canon(SUB(a, b)); }                                                          \
    WP_DEV F wp_mul(F a, F b) { return wp_canon(MUL(a, b)); }                                                          \
    WP_DEV F wp_div(F a, F b) { return wp_canon(DIV(a, b)); }                                                          \
    WP_DEV F wp_neg(F a) { return wp_ffrom((I)(wp_fbits(a) ^ (I)SIGN)); }                                              \
    WP_DEV F wp_abs(F a) { return wp_ffrom((I)(wp_fbits(a) & ~(I)SIGN)); }                                             \
    WP_DEV F wp_lt(F a, F b) { return a < b ? (F)1 : (F)0; }                                                           \
    WP_DEV F wp_le(F a, F b) { return a <= b ? (F)1 : (F)0; }                                                          \
    WP_DEV F wp_gt(F a, F b) { return a > b ? (F)1 : (F)0; }                                                           \
    WP_DEV F wp_ge(F a, F b) { return a >= b ? (F)1 : (F)0; }                                                          \
    WP_DEV F wp_eq(F a, F b) { return a == b ? (F)1 : (F)0; }                                                          \
    WP_DEV F wp_ne(F a, F b) { return a != b ? (F)1 : (F)0; }                                                          \
    WP_DEV F wp_sel(F c, F x, F y) { return c != (F)0 ? x : y; }                                                       \
    /* b when a is NaN, else a when b is NaN (no comparison holds), else the larger/smaller, a on a tie:   \
       two compares (the NaN test is a != a) and one select. */                                            \
    WP_DEV F wp_min(F a, F b) { return (b < a || a != a) ? b : a; }                                                    \
    WP_DEV F wp_max(F a, F b) { return (a < b || a != a) ? b : a; }

WP_FLOAT_HELPERS(float, unsigned, 0x80000000u, 0x7f800000u, 0x7fffffffu, __fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn)
WP_FLOAT_HELPERS(double, unsigned long long, 0x8000000000000000ull, 0x7ff0000000000000ull, 0x7fffffffffffffffull,
                 __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn)

// ---- builtin functors: one operation in the calc type, one rounding back ----
#define WP_BUILTIN(NAME, HELPER)                                                                                       \
    template <typename T> struct NAME {                                                                                \
        WP_DEV T operator()(T a, T b) const { return wp_from_calc<T>(HELPER(wp_to_calc(a), wp_to_calc(b))); }          \
    };

WP_BUILTIN(wp_op_sum, wp_add)
WP_BUILTIN(wp_op_prod, wp_mul)
WP_BUILTIN(wp_op_min, wp_min)
WP_BUILTIN(wp_op_max, wp_max)
WP_BUILTIN(wp_op_and, wp_and) // integer types only
WP_BUILTIN(wp_op_or, wp_or)
WP_BUILTIN(wp_op_xor, wp_xor)

#undef WP_BUILTIN
#undef WP_FLOAT_HELPERS
#undef WP_SIGNED_HELPERS
#undef WP_UNSIGNED_HELPERS
#undef WP_INT_HELPERS

#endif
