/* wp_common.cuh — what every warp-primitive kernel shares: the parameter block (wp_abi.h), raw bits of
 * a value in an 8-byte slot, vote predicates, tile masks, and the prologue rules of docs/semantics.md
 * (threads past n or inactive return at the top; active non-members do not call the primitive).
 * Compiles with NVRTC (headers given by name) and with nvcc -I kernels -I templates.
 * f16/bf16 exist only when WP_NEED_FP16 is defined; every other type compiles without cuda_fp16.h. */
#ifndef WP_COMMON_CUH
#define WP_COMMON_CUH

#include "wp_abi.h"

#ifdef WP_NEED_FP16
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#define WP_WARP_SIZE 32

/* ---- programmatic dependent launch -------------------------------------------------------------
 * Every data kernel (wp_data_params) starts with wp_grid_wait: griddepcontrol.wait returns once the
 * kernel before it in the stream has finished and its writes are visible. Nothing is read or written
 * before it, so the kernel may be launched with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
 * (WP_LAUNCH_OVERLAP). wp_grid_launch_next (launch_dependents) lets the next kernel be scheduled once
 * every block has passed it, so that its blocks already sit in their wait when this grid ends: no
 * launch gap between the two. wp_grid_entry does both at once, for kernels with nothing to gain from
 * a later signal. Launched without the attribute, both instructions do nothing. sm_90 and later. */
__device__ __forceinline__ void wp_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void wp_grid_launch_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wp_grid_entry() {
    wp_grid_wait();
    wp_grid_launch_next();
}

/* A load of input the kernel only reads: __ldg, the read-only path. In a resident build
 * (templates/wp_resident.cuh, -DWP_RESIDENT) a plain load: a resident's input changes between its jobs,
 * which the read-only path (and a compiler told the memory is read-only) may not see. */
template <typename V> __device__ __forceinline__ V wp_ldg(const V *p) {
#ifdef WP_RESIDENT
    return *p;
#else
    return __ldg(p);
#endif
}

/* ---- compile-time checks ---------------------------------------------------------------------- */

/* Used inside every WIDTH template, so a bad width fails at instantiation with this message. */
#define WP_CHECK_WIDTH(W) \
    static_assert((W) >= 1 && (W) <= WP_WARP_SIZE && ((W) & ((W)-1)) == 0, "WIDTH must be a power of two 1..32")

/* ---- raw bits ---------------------------------------------------------------------------------
 * wp_raw<T>::word is the unsigned word a shuffle moves (32 bits for types up to 4 bytes, 64 above);
 * bits()/value() reinterpret without converting, so NaN payloads, -0 and f16 bits survive. */

template <typename T> struct wp_raw; /* only the types below exist */

template <> struct wp_raw<int> {
    typedef unsigned word;
    static __device__ __forceinline__ word bits(int v) { return (unsigned)v; }
    static __device__ __forceinline__ int value(word b) { return (int)b; }
};
template <> struct wp_raw<unsigned> {
    typedef unsigned word;
    static __device__ __forceinline__ word bits(unsigned v) { return v; }
    static __device__ __forceinline__ unsigned value(word b) { return b; }
};
template <> struct wp_raw<long long> {
    typedef unsigned long long word;
    static __device__ __forceinline__ word bits(long long v) { return (unsigned long long)v; }
    static __device__ __forceinline__ long long value(word b) { return (long long)b; }
};
template <> struct wp_raw<unsigned long long> {
    typedef unsigned long long word;
    static __device__ __forceinline__ word bits(unsigned long long v) { return v; }
    static __device__ __forceinline__ unsigned long long value(word b) { return b; }
};
template <> struct wp_raw<float> {
    typedef unsigned word;
    static __device__ __forceinline__ word bits(float v) { return __float_as_uint(v); }
    static __device__ __forceinline__ float value(word b) { return __uint_as_float(b); }
};
template <> struct wp_raw<double> {
    typedef unsigned long long word;
    static __device__ __forceinline__ word bits(double v) { return (unsigned long long)__double_as_longlong(v); }
    static __device__ __forceinline__ double value(word b) { return __longlong_as_double((long long)b); }
};
#ifdef WP_NEED_FP16
template <> struct wp_raw<__half> {
    typedef unsigned word;
    static __device__ __forceinline__ word bits(__half v) { return (unsigned)__half_as_ushort(v); }
    static __device__ __forceinline__ __half value(word b) { return __ushort_as_half((unsigned short)b); }
};
template <> struct wp_raw<__nv_bfloat16> {
    typedef unsigned word;
    static __device__ __forceinline__ word bits(__nv_bfloat16 v) { return (unsigned)__bfloat16_as_ushort(v); }
    static __device__ __forceinline__ __nv_bfloat16 value(word b) {
        return __ushort_as_bfloat16((unsigned short)b);
    }
};
#endif

/* ---- slots: 8 bytes of raw bits, zero-extended (wp_abi.h) ------------------------------------- */

template <typename T> __device__ __forceinline__ T wp_slot_load(unsigned long long slot_addr, int i) {
    const unsigned long long *slots = (const unsigned long long *)slot_addr;
    return wp_raw<T>::value((typename wp_raw<T>::word)slots[i]); /* keeps the low bits */
}
template <typename T> __device__ __forceinline__ void wp_slot_store(unsigned long long slot_addr, int i, T v) {
    unsigned long long *slots = (unsigned long long *)slot_addr;
    slots[i] = (unsigned long long)wp_raw<T>::bits(v); /* word is unsigned: zero-extends */
}
__device__ __forceinline__ void wp_slot_store_word(unsigned long long slot_addr, int i, unsigned long long w) {
    ((unsigned long long *)slot_addr)[i] = w;
}
__device__ __forceinline__ void wp_src_store(const wp_warp_params &p, int t, int v) { ((int *)p.src)[t] = v; }
__device__ __forceinline__ int wp_arg_load(const wp_warp_params &p, int t) { return ((const int *)p.arg)[t]; }

/* ---- predicates: x compared with constants a, b (raw bits in T) --------------------------------
 * Integers compare in their own type (signed or not); f32 as float, f64 as double, f16/bf16 as
 * float. C comparisons already give NaN the contract's answers (false except ne and nonzero). */

template <typename T> struct wp_pred_cmp {
    typedef T type;
    static __device__ __forceinline__ T of(T v) { return v; }
};
#ifdef WP_NEED_FP16
template <> struct wp_pred_cmp<__half> {
    typedef float type;
    static __device__ __forceinline__ float of(__half v) { return __half2float(v); }
};
template <> struct wp_pred_cmp<__nv_bfloat16> {
    typedef float type;
    static __device__ __forceinline__ float of(__nv_bfloat16 v) { return __bfloat162float(v); }
};
#endif

template <typename T> __device__ __forceinline__ bool wp_pred_eval(T value, const wp_warp_params &p) {
    typedef wp_pred_cmp<T> C;
    typedef typename C::type U;
    const U x = C::of(value);
    const U a = C::of(wp_raw<T>::value((typename wp_raw<T>::word)p.pred_a));
    const U b = C::of(wp_raw<T>::value((typename wp_raw<T>::word)p.pred_b));
    switch (p.pred_kind) {
    case WP_PRED_NONZERO: return x != U(0);
    case WP_PRED_GT: return x > a;
    case WP_PRED_GE: return x >= a;
    case WP_PRED_LT: return x < a;
    case WP_PRED_LE: return x <= a;
    case WP_PRED_EQ: return x == a;
    case WP_PRED_NE: return x != a;
    case WP_PRED_BETWEEN: return a < x && x < b;
    default: return false; /* as the emulator: an unknown kind holds nowhere */
    }
}

/* ---- lanes, segments, tiles ------------------------------------------------------------------- */

/* The lane's index into the arrays: one block alone; a grid of whole-warp requests when jobs are batched
 * (server/batch_warp.c), each warp belonging to one request, so a warp sees what it sees alone. */
__device__ __forceinline__ int wp_thread() { return (int)(blockIdx.x * blockDim.x + threadIdx.x); }
__device__ __forceinline__ int wp_lane() { return (int)(threadIdx.x & (WP_WARP_SIZE - 1)); }

/* First lane of the lane's width-W segment (tile). */
template <int WIDTH> __device__ __forceinline__ int wp_segment_base(int lane) {
    WP_CHECK_WIDTH(WIDTH);
    return lane & ~(WIDTH - 1);
}

/* WIDTH low bits: 0xffffffff >> (32 - W) avoids the undefined 1u << 32. */
template <int WIDTH> __device__ __forceinline__ unsigned wp_tile_low_bits() {
    return 0xffffffffu >> (WP_WARP_SIZE - WIDTH);
}
/* The lanes of this lane's tile, as warp bits. */
template <int WIDTH> __device__ __forceinline__ unsigned wp_tile_bits(int lane) {
    return wp_tile_low_bits<WIDTH>() << wp_segment_base<WIDTH>(lane);
}
/* TILED families: the member mask a lane passes to the primitive (MASK restricted to its tile). */
template <int WIDTH, unsigned MASK> __device__ __forceinline__ unsigned wp_tile_mask(int lane) {
    return MASK & wp_tile_bits<WIDTH>(lane);
}
/* TILED families: a warp-wide mask result made tile-relative (bit 0 = the tile's first lane). */
template <int WIDTH> __device__ __forceinline__ unsigned wp_tile_relative(unsigned warp_mask, int lane) {
    return (warp_mask >> wp_segment_base<WIDTH>(lane)) & wp_tile_low_bits<WIDTH>();
}

__device__ __forceinline__ bool wp_in_mask(unsigned mask, int lane) { return (mask >> lane) & 1u; }

/* ---- prologue ----------------------------------------------------------------------------------
 * Kernels open with `if (!wp_thread_runs(p, t)) return;` (past n or inactive: exits, so it never
 * blocks a *_sync), then `if (!wp_in_mask(MASK, lane)) return;` (active non-member: does not call). */

__device__ __forceinline__ bool wp_thread_runs(const wp_warp_params &p, int t) {
    return t < p.n && ((const unsigned char *)p.active)[t] != 0;
}

/* The lanes of this thread's warp that pass the prologue, as the host sees them. */
__device__ __forceinline__ unsigned wp_running_lanes(const wp_warp_params &p, int t) {
    const int warp_base = t & ~(WP_WARP_SIZE - 1);
    unsigned m = 0;
    for (int l = 0; l < WP_WARP_SIZE; l++)
        if (wp_thread_runs(p, warp_base + l)) m |= 1u << l;
    return m;
}

#endif
