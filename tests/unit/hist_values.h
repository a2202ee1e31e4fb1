/* hist_values.h — adversarial inputs for the histogram family (kernels/hist.h), shared by
 * tests/unit/test_hist.c (the emulator's two binnings against a plain search) and
 * tests/gpu/test_gpu_hist.c (cuda against emu): every edge (or a sample of them), the values one raw
 * bit step either side of each (in the input type), the range's ends, -0.0, +0.0, NaN, +-inf,
 * denormals, the type's extremes, and pseudo-random values around the range. */
#ifndef WP_HIST_VALUES_H
#define WP_HIST_VALUES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/hist.h"

static uint64_t hv_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* x as the raw bits of type t (floats rounded to nearest; integers clamped, then truncated). */
static uint64_t hv_bits(wp_type t, double x) {
    switch (t) {
    case WP_F32:
        return wp_f32_bits((float)x);
    case WP_F16:
        return wp_f32_to_f16((float)x);
    case WP_BF16:
        return wp_f32_to_bf16((float)x);
    case WP_F64:
        return wp_f64_bits(x);
    case WP_I32:
        return (uint32_t)(int32_t)(x != x              ? 0
                                   : x < -2147483648.0 ? -2147483648.0
                                   : x > 2147483647.0  ? 2147483647.0
                                                       : x);
    case WP_U32:
        return (uint32_t)(x != x || x < 0 ? 0 : x > 4294967295.0 ? 4294967295.0 : x);
    case WP_I64:
        return (uint64_t)(int64_t)(x != x ? 0 : x < -9.2e18 ? -9.2e18 : x > 9.2e18 ? 9.2e18 : x);
    default:
        return (uint64_t)(x != x || x < 0 ? 0 : x > 1.8e19 ? 1.8e19 : x);
    }
}

/* Fills out (room for cap) with h's adversarial values of h->type; returns how many. */
static uint64_t hv_fill(const wp_hist *h, uint64_t *out, uint64_t cap, uint64_t random, uint64_t seed) {
    const wp_type t = h->type;
    const uint64_t mask = wp_type_bitmask(t);
    uint64_t n = 0, step = h->bins > 256 ? h->bins / 256 : 1;
#define HV_PUT(b)                                                                                                      \
    do {                                                                                                               \
        if (n < cap) out[n++] = (b)&mask;                                                                              \
    } while (0)
    for (uint64_t i = 0; i <= h->bins; i += (i + step > h->bins && i != h->bins) ? h->bins - i : step) {
        const uint64_t b = hv_bits(t, wp_hist_edge(h, i));
        HV_PUT(b);
        HV_PUT(b + 1);
        HV_PUT(b - 1);
        if (i == h->bins) break;
    }
    const double specials[] = {h->lo, h->hi, -0.0,   0.0,    NAN,     INFINITY, -INFINITY, 1e-45, -1e-45,
                               1e-40, 6e-8,  1e-310, 3.4e38, -3.4e38, 65504,    1e300,     -1e300};
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) HV_PUT(hv_bits(t, specials[k]));
    const double w = h->hi - h->lo;
    for (uint64_t k = 0; k < random; k++) {
        const double u = (double)(hv_rand(&seed) >> 11) * 0x1p-53;
        HV_PUT(hv_bits(t, h->lo - 0.1 * w + 1.2 * w * u));
    }
#undef HV_PUT
    return n;
}

/* Packs raw bits into a packed array of type t (the input layout). */
static void hv_pack(wp_type t, const uint64_t *bits, uint64_t n, void *packed) {
    for (uint64_t i = 0; i < n; i++) wp_data_store(t, packed, i, bits[i]);
}

#endif
