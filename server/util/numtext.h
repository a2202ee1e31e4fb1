/* numtext.h — binary floating-point numbers and integers to and from decimal text, fast and exact.
 * Out: the shortest decimal that reads back (round to nearest, ties to even) to the same value, by
 * Schubfach (Giulietti 2020), for any IEEE binary format up to 64 bits (f64, f32, f16, bf16), written
 * as printf's "%.{P}g" writes it with P the number of digits, so the text is the one a loop over
 * rising precisions stops at, and only ever shorter. In: a decimal significand and exponent to the
 * correctly rounded double by Eisel-Lemire, as strtod gives it. Integers: decimal text without printf.
 *
 * Threads: every function is reentrant (the tables are constant). */
#ifndef WP_NUMTEXT_H
#define WP_NUMTEXT_H

#include <stdbool.h>
#include <stdint.h>

/* The room wp_num_format_g and wp_num_float_text need: their text is at most 25 bytes with its NUL
 * ("-2.2250738585072014e-308"), but they copy digits in fixed-size blocks that may write further. */
#define WP_NUM_TEXT_MAX 48

/* An IEEE binary format: its stored fraction bits and exponent bits (f64 52/11, f32 23/8, f16 10/5,
 * bf16 7/8). */
typedef struct {
    int frac_bits, exp_bits;
} wp_num_format;
extern const wp_num_format wp_num_f64, wp_num_f32, wp_num_f16, wp_num_bf16;

/* The shortest decimal digits * 10^exp10 that rounds back to the positive finite value of the format
 * with these bits (sign ignored; not zero); the closest such when several have as few digits (ties to
 * an even last digit). digits has no trailing zeros. */
typedef struct {
    uint64_t digits;
    int exp10;
} wp_num_decimal;
wp_num_decimal wp_num_shortest(const wp_num_format *f, uint64_t bits);

/* digits * 10^exp10 (0 < digits < 10^17, no trailing zeros), a '-' first when neg, as "%.{P}g" prints
 * it with P the digit count: fixed notation when -4 <= the decimal exponent < P, else d.ddde[+-]XX.
 * Returns the length; buf gets a NUL after it and needs WP_NUM_TEXT_MAX bytes. */
int wp_num_format_g(char *buf, bool neg, wp_num_decimal d);

/* A value of the format as shortest "%.{P}g" text ("0" and "-0" for zeros) into buf (WP_NUM_TEXT_MAX
 * bytes). Returns the length, or -1 for NaN and infinities (buf untouched). */
int wp_num_float_text(char *buf, const wp_num_format *f, uint64_t bits);

/* The correctly rounded double of w * 10^e10 (w < 10^19), as strtod reads it: *out gets its bits and
 * the result is true; false (rarely) when this cannot tell — past 10^±308, or when w stands for more
 * digits (inexact: the true significand lies between w and w + 1) that round two ways — then the
 * caller asks strtod. */
bool wp_num_decimal_to_f64(uint64_t w, int e10, bool inexact, uint64_t *out);

/* Decimal text of v into buf (room for 21 bytes: the digits are stored eight at a time), NUL-terminated;
 * returns its length. */
int wp_num_u64_text(char *buf, uint64_t v);
int wp_num_i64_text(char *buf, int64_t v);

#endif
