/* json.c — JSON helpers that know no element types (json.h). */
#include "json.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "jsonout.h"

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

size_t wp_json_trailing(const char *text, size_t n, const char *end) {
    size_t at = end ? (size_t)(end - text) : n;
    while (at < n && text[at] && strchr(" \t\r\n", text[at])) at++;
    return at;
}

cJSON *wp_json_int_raw(long long v) {
    char buf[24];
    wp_json_fmt_i64(buf, (int64_t)v);
    return cJSON_CreateRaw(buf);
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
        for (const char *const *a = allowed; *a && !ok && it->string; a++)
            ok = it->string[0] == (*a)[0] && !strcmp(it->string, *a); /* a byte first: most keys differ there */
        if (!ok) {
            char field[64];
            snprintf(field, sizeof field, "%s%.40s", prefix, it->string ? it->string : "?");
            return WP_FAIL(err, 400, "unknown_field", field, "unknown field \"%s\"", field);
        }
    }
    return 0;
}

static cJSON *add_k(cJSON *obj, const char *key, cJSON *item) {
    if (item && cJSON_AddItemToObjectCS(obj, key, item)) return item;
    cJSON_Delete(item);
    return NULL;
}
void wp_json_add_number_or_null(cJSON *obj, const char *name, bool has, double v) {
    add_k(obj, name, has ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}
cJSON *wp_json_num_k(cJSON *obj, const char *key, double v) { return add_k(obj, key, cJSON_CreateNumber(v)); }
cJSON *wp_json_str_k(cJSON *obj, const char *key, const char *v) { return add_k(obj, key, cJSON_CreateString(v)); }
cJSON *wp_json_bool_k(cJSON *obj, const char *key, bool v) { return add_k(obj, key, cJSON_CreateBool(v)); }
cJSON *wp_json_obj_k(cJSON *obj, const char *key) { return add_k(obj, key, cJSON_CreateObject()); }

int wp_json_bool(const cJSON *obj, const char *name, bool *out, wp_err *err) {
    const cJSON *v = wp_json_get(obj, name);
    *out = false;
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return WP_FAIL(err, 400, "wrong_type", name, "%s must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}
