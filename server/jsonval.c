/* jsonval.c — typed values to and from JSON (see jsonval.h for the rules). */
#include "jsonval.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
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
    if (wp_type_is_int(t)) {
        if (cJSON_IsString(v)) return parse_int_text(v->valuestring, t, field, out, err);
        if (!cJSON_IsNumber(v))
            return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number (or a string for 64-bit values)", field);
        double d = v->valuedouble;
        if (d != floor(d)) return WP_FAIL(err, 400, "bad_value", field, "%s: %g is not an integer", field, d);
        if (fabs(d) > 9007199254740992.0)
            return WP_FAIL(err, 400, "precision_loss", field, "%s: %g is beyond 2^53; send 64-bit integers as strings",
                           field, d);
        char buf[32];
        snprintf(buf, sizeof buf, "%.0f", d);
        return parse_int_text(buf, t, field, out, err);
    }
    if (cJSON_IsNumber(v)) return float_from_double(t, v->valuedouble, out);
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
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
        return WP_FAIL(err, 400, "bad_value", field, "%s: \"%.40s\" is not a number, \"NaN\" or \"[-]Infinity\"", field,
                       s);
    }
    return WP_FAIL(err, 400, "wrong_type", field, "%s must be a number", field);
}

/* Shortest "%.*g" that reads back to the same value in the type. */
static cJSON *float_json(wp_type t, uint64_t bits) {
    double d = wp_value_to_double(t, bits);
    if (isnan(d)) return cJSON_CreateString("NaN");
    if (isinf(d)) return cJSON_CreateString(d > 0 ? "Infinity" : "-Infinity");
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        uint64_t back;
        if (t == WP_F32)
            back = wp_f32_bits(strtof(buf, NULL));
        else
            back = wp_value_from_double(t, strtod(buf, NULL));
        if (back == bits) break;
    }
    if (!strcmp(buf, "-0")) snprintf(buf, sizeof buf, "-0.0");
    return cJSON_CreateRaw(buf);
}

cJSON *wp_json_from_bits(wp_type t, uint64_t bits) {
    char buf[32];
    switch (t) {
    case WP_I32:
        return cJSON_CreateNumber((double)(int32_t)(uint32_t)bits);
    case WP_U32:
        return cJSON_CreateNumber((double)(uint32_t)bits);
    case WP_I64:
        snprintf(buf, sizeof buf, "%" PRId64, (int64_t)bits);
        return cJSON_CreateString(buf);
    case WP_U64:
        snprintf(buf, sizeof buf, "%" PRIu64, bits);
        return cJSON_CreateString(buf);
    default:
        return float_json(t, bits);
    }
}

int wp_json_int(const cJSON *v, const char *field, long long lo, long long hi, long long *out, wp_err *err) {
    if (!cJSON_IsNumber(v)) return WP_FAIL(err, 400, "wrong_type", field, "%s must be an integer", field);
    double d = v->valuedouble;
    if (d != floor(d)) return WP_FAIL(err, 400, "bad_value", field, "%s: %g is not an integer", field, d);
    if (d < (double)lo || d > (double)hi)
        return WP_FAIL(err, 400, "out_of_range", field, "%s: %g is outside %lld..%lld", field, d, lo, hi);
    *out = (long long)d;
    return 0;
}

int wp_json_only(const cJSON *obj, const char *prefix, const char *const *allowed, wp_err *err) {
    for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next) {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (it->string && !strcmp(it->string, *a)) ok = true;
        if (!ok) {
            char field[64];
            snprintf(field, sizeof field, "%s%.40s", prefix, it->string ? it->string : "?");
            return WP_FAIL(err, 400, "unknown_field", field, "unknown field \"%s\"", field);
        }
    }
    return 0;
}

int wp_json_depth(const char *text, size_t n) {
    int depth = 0, max = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"')
            in_str = true;
        else if (c == '[' || c == '{') {
            if (++depth > max) max = depth;
        } else if (c == ']' || c == '}')
            depth--;
    }
    return max;
}
