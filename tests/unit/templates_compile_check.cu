/* templates_compile_check.cu — compiles every template kernel for every type it allows, at a few
 * widths and masks, so a template change that breaks an instantiation fails here and not in NVRTC.
 *   nvcc -std=c++17 -arch=sm_90 -cubin -I kernels -I templates [-DWP_NEED_FP16] tests/unit/templates_compile_check.cu
 * Without WP_NEED_FP16 it also proves the other types build without cuda_fp16.h. */
#include "allreduce.cu"
#include "match.cu"
#include "redux.cu"
#include "shfl.cu"
#include "vote.cu"

/* One kernel K<T, W, M> (explicit instantiation). */
#define WP_INST(K, T, W, M) template __global__ void K<T, W, M>(wp_warp_params);
#define WP_INST_OP(K, T, W, M, OP) template __global__ void K<T, W, M, OP<T> >(wp_warp_params);

/* Every width 1..32 with the full mask, plus partial masks at 16 and 8. */
#define WP_WIDTHS(K, T)                                                                                \
    WP_INST(K, T, 1, 0xffffffffu) WP_INST(K, T, 2, 0xffffffffu) WP_INST(K, T, 4, 0xffffffffu)         \
    WP_INST(K, T, 8, 0xffffffffu) WP_INST(K, T, 16, 0xffffffffu) WP_INST(K, T, 32, 0xffffffffu)       \
    WP_INST(K, T, 16, 0x0000ffffu) WP_INST(K, T, 8, 0x55555555u) WP_INST(K, T, 32, 0x80000001u)

#define WP_SHUFFLES(T)                                                                                 \
    WP_WIDTHS(wp_shfl, T) WP_WIDTHS(wp_shfl_up, T) WP_WIDTHS(wp_shfl_down, T) WP_WIDTHS(wp_shfl_xor, T) \
    WP_WIDTHS(wp_swap, T)
#define WP_VOTES(T)                                                                                    \
    WP_WIDTHS(wp_vote_all, T) WP_WIDTHS(wp_vote_any, T) WP_WIDTHS(wp_vote_uni, T) WP_WIDTHS(wp_ballot, T) \
    WP_WIDTHS(wp_activemask, T)
#define WP_MATCHES(T) WP_WIDTHS(wp_match_any, T) WP_WIDTHS(wp_match_all, T)

#define WP_ALLREDUCE_W(T, W, M, OP) WP_INST_OP(wp_warp_allreduce, T, W, M, OP)
#define WP_ALLREDUCE_ARITH(T)                                                                          \
    WP_ALLREDUCE_W(T, 32, 0xffffffffu, wp_op_sum) WP_ALLREDUCE_W(T, 16, 0xffffffffu, wp_op_prod)      \
    WP_ALLREDUCE_W(T, 8, 0x00ff00ffu, wp_op_min) WP_ALLREDUCE_W(T, 1, 0xffffffffu, wp_op_max)         \
    WP_ALLREDUCE_W(T, 2, 0xffffffffu, wp_op_sum)
#define WP_ALLREDUCE_BITS(T)                                                                           \
    WP_ALLREDUCE_W(T, 32, 0xffffffffu, wp_op_and) WP_ALLREDUCE_W(T, 4, 0xffffffffu, wp_op_or)         \
    WP_ALLREDUCE_W(T, 16, 0x0000ffffu, wp_op_xor)

#define WP_REDUX(T, OP)                                                                                \
    WP_INST_OP(wp_redux, T, 32, 0xffffffffu, OP) WP_INST_OP(wp_redux, T, 16, 0xffffffffu, OP)         \
    WP_INST_OP(wp_redux, T, 4, 0x0f0f0f0fu, OP) WP_INST_OP(wp_redux, T, 1, 0xffffffffu, OP)
#define WP_REDUX_ALL(T)                                                                                \
    WP_REDUX(T, wp_op_sum) WP_REDUX(T, wp_op_min) WP_REDUX(T, wp_op_max) WP_REDUX(T, wp_op_and)       \
    WP_REDUX(T, wp_op_or) WP_REDUX(T, wp_op_xor)

typedef long long wp_i64;
typedef unsigned long long wp_u64;

WP_SHUFFLES(int) WP_SHUFFLES(unsigned) WP_SHUFFLES(wp_i64) WP_SHUFFLES(wp_u64) WP_SHUFFLES(float) WP_SHUFFLES(double)
WP_VOTES(int) WP_VOTES(unsigned) WP_VOTES(wp_i64) WP_VOTES(wp_u64) WP_VOTES(float) WP_VOTES(double)
WP_MATCHES(int) WP_MATCHES(unsigned) WP_MATCHES(wp_i64) WP_MATCHES(wp_u64) WP_MATCHES(float) WP_MATCHES(double)
WP_REDUX_ALL(int) WP_REDUX_ALL(unsigned)
WP_ALLREDUCE_ARITH(int) WP_ALLREDUCE_ARITH(unsigned) WP_ALLREDUCE_ARITH(wp_i64) WP_ALLREDUCE_ARITH(wp_u64)
WP_ALLREDUCE_ARITH(float) WP_ALLREDUCE_ARITH(double)
WP_ALLREDUCE_BITS(int) WP_ALLREDUCE_BITS(unsigned) WP_ALLREDUCE_BITS(wp_i64) WP_ALLREDUCE_BITS(wp_u64)

#ifdef WP_NEED_FP16
WP_SHUFFLES(__half) WP_SHUFFLES(__nv_bfloat16)
WP_VOTES(__half) WP_VOTES(__nv_bfloat16)
WP_ALLREDUCE_ARITH(__half) WP_ALLREDUCE_ARITH(__nv_bfloat16)
#endif
