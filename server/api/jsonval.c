/* jsonval.c — typed values to and from JSON (see jsonval.h for the rules). */
#include "jsonval.h"
#include "util/jsonout.h"
#include "util/numtext.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_int_text(const char *s, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    errno = 0;
    char *end = NULL;
    bool neg = s[0] == '-';
    if (!*s) return WP_FAIL(err, 400, "bad_value", field, "%s: empty string is not a number", field);
    if (wp_type_is_signed(t)) {
        long long v = strtoll(s, &end, 0);
        if (errno || *end)
            return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a %s", field, s, wp_type_name(t));
        if (t == WP_I32 && (v < INT32_MIN || v > INT32_MAX))
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %lld does not fit i32", field, v);
        *out = (uint64_t)v & wp_type_bitmask(t);
        return 0;
    }
    if (neg) return WP_FAIL(err, 400, "out_of_range", field, "%s: %.40s is negative for %s", field, s, wp_type_name(t));
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a %s", field, s, wp_type_name(t));
    if (t == WP_U32 && v > UINT32_MAX)
        return WP_FAIL(err, 400, "out_of_range", field, "%s: %llu does not fit u32", field, v);
    *out = v;
    return 0;
}

static int float_from_double(wp_type t, double d, uint64_t *out) {
    *out = wp_value_from_double(t, d);
    return 0;
}

int wp_json_number_to_bits(double d, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (!wp_type_is_int(t)) return float_from_double(t, d, out);
    if (d != floor(d)) return WP_FAIL(err, 400, "bad_value", field, "%s: %g is not an integer", field, d);
    if (fabs(d) > 9007199254740992.0)
        return WP_FAIL(err, 400, "precision_loss", field, "%s: %g is beyond 2^53; send 64-bit integers as strings",
                       field, d);
    /* What parse_int_text makes of "%.0f" — the exact digits of a whole double within 2^53 — without
     * printing them; a negative value (or -0) for an unsigned type takes that path for its message. */
    if (wp_type_is_signed(t)) {
        long long v = (long long)d;
        if (t == WP_I32 && (v < INT32_MIN || v > INT32_MAX))
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %lld does not fit i32", field, v);
        *out = (uint64_t)v & wp_type_bitmask(t);
        return 0;
    }
    if (!signbit(d)) {
        unsigned long long v = (unsigned long long)d;
        if (t == WP_U32 && v > UINT32_MAX)
            return WP_FAIL(err, 400, "out_of_range", field, "%s: %llu does not fit u32", field, v);
        *out = v;
        return 0;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.0f", d);
    return parse_int_text(buf, t, field, out, err);
}

int wp_json_string_to_bits(const char *s, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (wp_type_is_int(t)) return parse_int_text(s, t, field, out, err);
    if (!strcmp(s, "NaN")) return float_from_double(t, NAN, out);
    if (!strcmp(s, "Infinity") || !strcmp(s, "+Infinity")) return float_from_double(t, INFINITY, out);
    if (!strcmp(s, "-Infinity")) return float_from_double(t, -INFINITY, out);
    char *end = NULL;
    errno = 0;
    if (t == WP_F32) { /* strtof rounds once, straight to float */
        float f = strtof(s, &end);
        if (*s && !*end) {
            *out = wp_f32_bits(f);
            return 0;
        }
    } else {
        double d = strtod(s, &end);
        if (*s && !*end) return float_from_double(t, d, out);
    }
    return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a number, \"NaN\" or \"[-]Infinity\"", field, s);
}

int wp_json_to_bits(const cJSON *v, wp_type t, const char *field, uint64_t *out, wp_err *err) {
    if (cJSON_IsObject(v)) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "bits");
        if (!cJSON_IsString(b) || cJSON_GetArraySize(v) != 1)
            return WP_FAIL(err, 400, "bad_value", field, "%s: an object value must be {\"bits\":\"0x...\"}", field);
        char *end = NULL;
        errno = 0;
        unsigned long long bits = strtoull(b->valuestring, &end, 16);
        if (errno || *end || (bits & ~wp_type_bitmask(t)))
            return WP_FAIL(err, 400, "bad_value", field, "%s: bits \"%.40s\" is not a %zu-byte hex pattern", field,
                           b->valuestring, wp_type_size(t));
        *out = bits;
        return 0;
    }
    if (cJSON_IsString(v)) return wp_json_string_to_bits(v->valuestring, t, field, out, err);
    if (cJSON_IsNumber(v)) return wp_json_number_to_bits(v->valuedouble, t, field, out, err);
    if (wp_type_is_int(t))
        return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number (or a string for 64-bit values)", field);
    return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number", field);
}

/* The shortest "%.{P}g" that reads back to the same value in the type (util/numtext.c: the text a loop
 * over rising precisions stopped at, or shorter); -0 kept as -0.0; NaN and infinities as strings. */
static int float_text(wp_type t, uint64_t bits, char *buf) {
    const wp_num_format *f = t == WP_F64   ? &wp_num_f64
                             : t == WP_F32 ? &wp_num_f32
                             : t == WP_F16 ? &wp_num_f16
                                           : &wp_num_bf16;
    int n = wp_num_float_text(buf, f, bits);
    if (n == 2 && buf[0] == '-' && buf[1] == '0') n = (memcpy(buf, "-0.0", 5), 4);
    if (n >= 0) return n;
    double d = wp_value_to_double(t, bits);
    const char *s = isnan(d) ? "\"NaN\"" : d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    n = (int)strlen(s);
    memcpy(buf, s, (size_t)n + 1);
    return n;
}

/* One value's text into buf (WP_JSON_VALUE_MAX bytes), NUL-terminated; returns its length. */
#define WP_JSON_VALUE_MAX 48
static inline int value_text(wp_type t, uint64_t bits, char *buf) {
    int n;
    switch (t) { /* integers without printf: a /v1/warp answer has a few hundred of them */
    case WP_I32:
        return wp_json_fmt_i64(buf, (int32_t)(uint32_t)bits);
    case WP_U32:
        return wp_json_fmt_u64(buf, (uint32_t)bits);
    case WP_I64: /* 64-bit integers are strings (DESIGN.md §4) */
    case WP_U64:
        buf[0] = '"';
        n = 1 + (t == WP_I64 ? wp_json_fmt_i64(buf + 1, (int64_t)bits) : wp_json_fmt_u64(buf + 1, bits));
        memcpy(buf + n, "\"", 2);
        return n + 1;
    default:
        return float_text(t, bits, buf);
    }
}

void wp_json_bits_text(wp_type t, uint64_t bits, char *buf, size_t n) {
    char text[WP_JSON_VALUE_MAX];
    const int len = value_text(t, bits, text);
    if ((size_t)len >= n) { /* never with the callers' 48 bytes */
        if (n) buf[0] = 0;
        return;
    }
    memcpy(buf, text, (size_t)len + 1);
}

bool wp_json_append_values(wp_jtext *out, wp_type t, const void *data, uint64_t n) {
    const size_t size = wp_type_size(t);
    const uint8_t *at = data;
    wp_jtext_add(out, "[", 1);
    for (uint64_t i = 0; i < n; i++, at += size) {
        char *p = wp_jtext_room(out, WP_JSON_VALUE_MAX + 1);
        if (!p) return false;
        uint64_t bits; /* wp_data_store's layout: packed native words */
        if (size == 4) {
            uint32_t w;
            memcpy(&w, at, 4);
            bits = w;
        } else if (size == 8) {
            memcpy(&bits, at, 8);
        } else {
            uint16_t h;
            memcpy(&h, at, 2);
            bits = h;
        }
        *p = ',';
        out->n += (size_t)value_text(t, bits, p + (i > 0)) + (i > 0);
    }
    wp_jtext_add(out, "]", 1);
    return !out->failed;
}

cJSON *wp_json_values_raw(wp_type t, const void *data, uint64_t n) {
    wp_jtext text = {0};
    /* a first guess at the size (f64's are about 20 bytes); it grows by doubling from there */
    if (!wp_jtext_room(&text, (size_t)n * (wp_type_size(t) * 2 + 4) + 2)) return NULL;
    if (!wp_json_append_values(&text, t, data, n)) {
        free(text.p);
        return NULL;
    }
    return wp_jtext_raw(&text);
}

/* As raw JSON text: cJSON prints a raw item by copying it, where a number item costs a printf, a
 * scanf and a locale look-up — most of a /v1/warp response's time. */
cJSON *wp_json_from_bits(wp_type t, uint64_t bits) {
    char buf[48];
    wp_json_bits_text(t, bits, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

/* ---- large arrays in place (jsonval.h) ---- */

static inline bool json_space(char c) { return (unsigned char)c <= 32; } /* what cJSON skips */
static inline bool is_digit(char c) { return (unsigned char)(c - '0') < 10; }
static inline bool number_char(char c) { /* what cJSON copies into a number before strtod */
    return is_digit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

bool wp_json_find_top_key(const char *s, size_t n, const char *key, const char *hint, size_t *value_at,
                          char *hint_value, size_t hint_cap) {
    size_t key_len = strlen(key), hint_len = hint ? strlen(hint) : 0, i = 0;
    bool hint_seen = false;
    if (hint_value && hint_cap) hint_value[0] = 0;
    while (i < n && json_space(s[i])) i++;
    if (i >= n || s[i] != '{') return false;
    int depth = 0;
    while (i < n) {
        char c = s[i];
        if (c != '"') {
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth <= 0)
                return false;
            i++;
            continue;
        }
        size_t start = ++i;
        bool escaped = false; /* an escape, or a NUL byte (cJSON's name ends there): cJSON decides */
        while (i < n && s[i] != '"') {
            if (s[i] == '\\')
                escaped = true, i++;
            else if (!s[i])
                escaped = true;
            i++;
        }
        if (i >= n) return false;
        size_t len = i++ - start, j = i;
        if (depth != 1) continue;
        while (j < n && json_space(s[j])) j++;
        if (j >= n || s[j] != ':') continue; /* a value, not a key */
        if (escaped) return false;
        for (j++; j < n && json_space(s[j]);) j++;
        if (len == key_len && !memcmp(s + start, key, len)) {
            *value_at = j;
            return true;
        }
        if (hint && !hint_seen && len == hint_len && !memcmp(s + start, hint, len)) {
            hint_seen = true;
            size_t k = j + 1;
            while (k < n && s[k] != '"' && s[k] != '\\' && k - j - 1 < hint_cap) k++;
            if (hint_value && j < n && s[j] == '"' && k < n && s[k] == '"' && k - j - 1 < hint_cap) {
                memcpy(hint_value, s + j + 1, k - j - 1);
                hint_value[k - j - 1] = 0;
            }
        }
        i = j;
    }
    return false;
}

/* 10^0 .. 10^22: every one exact in a double. */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* One number as cJSON reads it: the run of number_char (at most 63 of them) through strtod, which must
 * take the whole run (else cJSON stops inside it and the array is invalid). Returns the run's length,
 * or 0 when cJSON would not read exactly one number here. The value is strtod's: a mantissa of at most
 * 19 digits within 2^53 and a power of ten within 10^±22 are both exact doubles, so one multiplication
 * or division rounds once, correctly, as strtod does (Clinger's fast path); the rest is rounded by
 * Eisel-Lemire (util/numtext.c), also correctly, and what it cannot tell (past 10^±308, or more than 19
 * digits that round two ways) calls strtod. */
static size_t scan_number(const char *p, const char *end, double *out) {
    const char *s = p;
    bool neg = *s == '-';
    if (neg) s++;
    uint64_t w = 0;
    int digits = 0, e10 = 0;
    bool any = false, exact = true;
    for (; s < end && is_digit(*s); s++) {
        any = true;
        if (w == 0 && *s == '0') continue;
        if (digits < 19)
            w = w * 10 + (uint64_t)(*s - '0'), digits++;
        else
            e10++, exact = exact && *s == '0';
    }
    if (s < end && *s == '.') {
        for (s++; s < end && is_digit(*s); s++) {
            any = true;
            if (w == 0 && *s == '0') {
                e10--;
                continue;
            }
            if (digits < 19)
                w = w * 10 + (uint64_t)(*s - '0'), digits++, e10--;
            else
                exact = exact && *s == '0';
        }
    }
    if (!any) return 0;
    if (s < end && (*s == 'e' || *s == 'E')) {
        const char *q = s + 1;
        bool eneg = false;
        if (q < end && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (q >= end || !is_digit(*q)) return 0; /* strtod stops before the 'e' */
        int ev = 0;
        for (; q < end && is_digit(*q); q++)
            if (ev < 100000) ev = ev * 10 + (*q - '0');
        e10 += eneg ? -ev : ev;
        s = q;
    }
    size_t len = (size_t)(s - p);
    if ((s < end && number_char(*s)) || len > 63) return 0;
    double d;
    uint64_t bits;
    if (w == 0)
        d = 0.0;
    else if (exact && w <= (1ull << 53) && e10 >= -22 && e10 <= 22)
        d = e10 < 0 ? (double)w / exact_pow10[-e10] : (double)w * exact_pow10[e10];
    else if (wp_num_decimal_to_f64(w, e10, !exact, &bits))
        d = wp_bits_f64(bits);
    else {
        char buf[64];
        memcpy(buf, p, len);
        buf[len] = 0;
        *out = strtod(buf, NULL);
        return len;
    }
    *out = neg ? -d : d;
    return len;
}

static inline void store_bits(void *base, size_t size, uint64_t i, uint64_t bits) {
    if (size == 4)
        ((uint32_t *)base)[i] = (uint32_t)bits;
    else if (size == 8)
        ((uint64_t *)base)[i] = bits;
    else
        ((uint16_t *)base)[i] = (uint16_t)bits;
}

#define WP_SCAN_STRING_MAX 128 /* longer strings (never a number) are left to cJSON */

bool wp_json_scan_array(const char *text, size_t n, wp_type t, void *out, uint64_t cap, uint64_t *count, size_t *used) {
    const char *p = text, *end = text + n;
    const size_t size = wp_type_size(t);
    const bool f32 = t == WP_F32;
    uint64_t i = 0;
    if (p >= end || *p != '[') return false;
    for (p++; p < end && json_space(*p);) p++;
    if (p < end && *p == ']') {
        *count = 0;
        *used = (size_t)(p + 1 - text);
        return true;
    }
    for (;;) {
        if (p >= end || i >= cap) return false;
        uint64_t bits;
        if (*p == '-' || is_digit(*p)) {
            double d;
            size_t len = scan_number(p, end, &d);
            if (!len) return false;
            p += len;
            if (f32)
                bits = wp_f32_bits((float)d);
            else if (wp_json_number_to_bits(d, t, "data", &bits, NULL))
                return false;
        } else if (*p == '"') {
            const char *q = p + 1;
            while (q < end && *q != '"' && *q != '\\' && q - p <= WP_SCAN_STRING_MAX) q++;
            if (q >= end || *q != '"') return false;
            char buf[WP_SCAN_STRING_MAX + 1];
            memcpy(buf, p + 1, (size_t)(q - p - 1));
            buf[q - p - 1] = 0;
            if (wp_json_string_to_bits(buf, t, "data", &bits, NULL)) return false;
            p = q + 1;
        } else {
            return false; /* objects, lists, literals, or not JSON */
        }
        store_bits(out, size, i++, bits);
        while (p < end && json_space(*p)) p++;
        if (p < end && *p == ',') {
            for (p++; p < end && json_space(*p);) p++;
            continue;
        }
        if (p < end && *p == ']') break;
        return false;
    }
    *count = i;
    *used = (size_t)(p + 1 - text);
    return true;
}
