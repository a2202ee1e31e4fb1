/* jsonval.c — typed values to and from JSON, one at a time (see jsonval.h for the rules): their bits
 * from a cJSON value, a number or a string; their text (the f16 and bf16 texts as tables); and where a
 * body's "data" list starts. Long lists of them are jsonlist.c's. */
#include "jsonval.h"
#include "util/json.h"
#include "util/jsonout.h"
#include "util/numtext.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
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
        const cJSON *b = wp_json_get(v, "bits");
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
int wp_json_float_text(wp_type t, uint64_t bits, char *buf) {
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

/* f16 and bf16 have 65,536 values each: their texts are a table (2 x 1 MiB, built on first use from
 * wp_json_float_text, so the same bytes), each NUL-padded with its length in the last byte. */
static wp_json_half_text half_texts[2][65536];
static pthread_once_t half_once[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
static void build_half(int which) {
    const wp_type t = which ? WP_BF16 : WP_F16;
    for (uint32_t bits = 0; bits < 65536; bits++) {
        char text[WP_NUM_TEXT_MAX], *entry = half_texts[which][bits];
        const int n = wp_json_float_text(t, bits, text); /* at most 11 bytes ("-Infinity") */
        memcpy(entry, text, (size_t)n + 1);
        entry[WP_JSON_HALF_TEXT - 1] = (char)n;
    }
}
static void build_f16(void) { build_half(0); }
static void build_bf16(void) { build_half(1); }

const wp_json_half_text *wp_json_half_texts(wp_type t) {
    const int which = t == WP_BF16;
    pthread_once(&half_once[which], which ? build_bf16 : build_f16);
    return half_texts[which];
}

/* One value's text into buf (WP_JSON_VALUE_MAX bytes), NUL-terminated; returns its length. */
_Static_assert(WP_JSON_VALUE_MAX >= WP_NUM_TEXT_MAX, "a float's text is written in place");
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
    case WP_F16:
    case WP_BF16: {
        const char *entry = wp_json_half_texts(t)[bits & 0xFFFF];
        memcpy(buf, entry, WP_JSON_HALF_TEXT);
        return entry[WP_JSON_HALF_TEXT - 1];
    }
    default:
        return wp_json_float_text(t, bits, buf);
    }
}

int wp_json_value_text(wp_type t, uint64_t bits, char *buf) { return value_text(t, bits, buf); }

void wp_json_bits_text(wp_type t, uint64_t bits, char *buf, size_t n) {
    char text[WP_JSON_VALUE_MAX];
    const int len = value_text(t, bits, text);
    if ((size_t)len >= n) { /* never with the callers' 48 bytes */
        if (n) buf[0] = 0;
        return;
    }
    memcpy(buf, text, (size_t)len + 1);
}

/* As raw JSON text: cJSON prints a raw item by copying it, where a number item costs a printf, a
 * scanf and a locale look-up — most of a /v1/warp response's time. */
cJSON *wp_json_from_bits(wp_type t, uint64_t bits) {
    char buf[48];
    wp_json_bits_text(t, bits, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

/* ---- the "data" key of a body (jsonval.h) ---- */

static inline bool json_space(char c) { return (unsigned char)c <= 32; } /* what cJSON skips */

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
