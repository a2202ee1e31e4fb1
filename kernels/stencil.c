/* stencil.c — CPU references of stencil (templates/stencil.cu) and generate (templates/generate.cu).
 * stencil: out[i] = weights[0]*in[i-R] + ... + weights[2R]*in[i+R], folded left to right in the
 * accumulator type (each product and sum rounded once), 0 where the window leaves the array.
 * generate: wp_generate_value, the same counter-based values the kernel makes. */
#include <math.h>

#include "data.h"
#include "spec.h"

void wp_emu_stencil(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    wp_type t = s->type, acc = wp_data_acc_type(s);
    wp_op add = {.kind = WP_OP_SUM}, mul = {.kind = WP_OP_PROD};
    const int r = s->data.radius;
    const void *in = (const void *)(uintptr_t)p->in;
    void *out = (void *)(uintptr_t)p->out;
    uint64_t w[2 * WP_STENCIL_MAX_RADIUS + 1];
    for (int k = 0; k <= 2 * r; k++) w[k] = wp_value_from_double(acc, p->weights[k]);
    for (uint64_t i = 0; i < p->n; i++) {
        if (i < (uint64_t)r || i + (uint64_t)r >= p->n) {
            wp_data_store(t, out, i, 0);
            continue;
        }
        uint64_t sum = 0;
        for (int k = 0; k <= 2 * r; k++) {
            uint64_t x = wp_data_to_acc(t, acc, wp_data_load(t, in, i - (uint64_t)r + (uint64_t)k));
            uint64_t term = wp_op_apply(&mul, acc, w[k], x);
            sum = k == 0 ? term : wp_op_apply(&add, acc, sum, term);
        }
        wp_data_store(t, out, i, wp_data_from_acc(t, acc, sum));
    }
}

static uint64_t splitmix(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t wp_generate_value(wp_type t, int kind, uint64_t seed, uint64_t constant_bits, uint64_t i) {
    if (kind == WP_GEN_CONSTANT) return constant_bits & wp_type_bitmask(t);
    uint64_t h = kind == WP_GEN_RANDOM ? splitmix(seed, i) : 0;
    if (wp_type_is_int(t)) return (kind == WP_GEN_RANDOM ? h % 1000 : i) & wp_type_bitmask(t);
    if (t == WP_F64) return wp_f64_bits(kind == WP_GEN_RANDOM ? (double)(h >> 11) * 0x1p-53 : (double)i);
    float f = kind == WP_GEN_RANDOM ? (float)(h >> 40) * 0x1p-24f : (float)i; /* f16/bf16 round from f32 */
    if (t == WP_F16) return wp_f32_to_f16(f);
    if (t == WP_BF16) return wp_f32_to_bf16(f);
    return wp_f32_bits(f);
}

void wp_emu_generate(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    void *out = (void *)(uintptr_t)p->out;
    for (uint64_t i = 0; i < p->n; i++) /* element i is element aux + i of the sequence (a shard's start) */
        wp_data_store(s->type, out, i, wp_generate_value(s->type, p->kind, p->seed, p->init, p->aux + i));
}
