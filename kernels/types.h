/* types.h — the element types warpd knows and how one value is held on the host.
 * A value travels as its raw bits in a uint64_t, zero-extended (an i32 -1 is 0x00000000ffffffff,
 * an f16 1.0 is 0x3c00). Shuffles move bits; arithmetic goes through the helpers below. */
#ifndef WP_TYPES_H
#define WP_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { WP_I32, WP_U32, WP_I64, WP_U64, WP_F32, WP_F64, WP_F16, WP_BF16, WP_TYPE_COUNT } wp_type;

#define WP_TBIT(t) (1u << (t))
#define WP_T_INT (WP_TBIT(WP_I32) | WP_TBIT(WP_U32) | WP_TBIT(WP_I64) | WP_TBIT(WP_U64))
#define WP_T_FLOAT (WP_TBIT(WP_F32) | WP_TBIT(WP_F64) | WP_TBIT(WP_F16) | WP_TBIT(WP_BF16))
#define WP_T_ALL (WP_T_INT | WP_T_FLOAT)
#define WP_T_32 (WP_TBIT(WP_I32) | WP_TBIT(WP_U32))

const char *wp_type_name(wp_type t); /* "i32" ... */
int wp_type_parse(const char *s);    /* wp_type or -1 */
size_t wp_type_size(wp_type t);      /* bytes: 4 4 8 8 4 8 2 2 */
const char *wp_type_cxx(wp_type t);  /* "int", "unsigned", "long long", "unsigned long long",
                                        "float", "double", "__half", "__nv_bfloat16" */
bool wp_type_is_int(wp_type t);
bool wp_type_is_signed(wp_type t); /* i32, i64 */
bool wp_type_is_float(wp_type t);
uint64_t wp_type_bitmask(wp_type t); /* all-ones of the type's width */

/* f16/bf16 <-> f32, round to nearest even, NaN kept quiet, as the CUDA intrinsics do. */
float wp_f16_to_f32(uint16_t h);
uint16_t wp_f32_to_f16(float f);
float wp_bf16_to_f32(uint16_t h);
uint16_t wp_f32_to_bf16(float f);

/* Raw bits <-> C values. */
static inline float wp_bits_f32(uint64_t b) {
    union {
        uint32_t u;
        float f;
    } v = {(uint32_t)b};
    return v.f;
}
static inline double wp_bits_f64(uint64_t b) {
    union {
        uint64_t u;
        double f;
    } v = {b};
    return v.f;
}
static inline uint64_t wp_f32_bits(float f) {
    union {
        float f;
        uint32_t u;
    } v = {f};
    return v.u;
}
static inline uint64_t wp_f64_bits(double f) {
    union {
        double f;
        uint64_t u;
    } v = {f};
    return v.u;
}

/* Sign-extends i32/i64 bits to int64 and widens every other type exactly to double. */
double wp_value_to_double(wp_type t, uint64_t bits);
int64_t wp_value_to_i64(wp_type t, uint64_t bits); /* integers only */
/* Converts a double to the type (round to nearest even for floats, truncation for ints). */
uint64_t wp_value_from_double(wp_type t, double v);
/* Numeric comparison of two values of type t: -1, 0, 1; 2 when unordered (a NaN). */
int wp_value_cmp(wp_type t, uint64_t a, uint64_t b);

#endif
