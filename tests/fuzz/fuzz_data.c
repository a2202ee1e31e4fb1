/* fuzz_data.c — the fast "data" reader (server/api/jsonval.h: wp_json_find_top_key, wp_json_scan_array),
 * which /v1/reduce and /v1/scan use instead of cJSON for long lists, checked against cJSON on any text:
 * the first byte picks a type, the rest is the text.
 *  - A list the scanner accepts is valid JSON to cJSON, with the same number of values and, value by
 *    value, the bits cJSON + wp_json_to_bits give (f32 numbers: the double rounded to float, as
 *    /v1/reduce reads them), never more than wp_json_array_cap of them, ending at its ']'; read into a
 *    buffer of its own (wp_json_scan_array_new, what /v1/reduce calls), the same verdict and values.
 *  - The "data" key it finds in an object is where cJSON's first "data" member starts, when the text
 *    is an object cJSON reads (the same value); a type hint is a short string. */
#include "api/jsonval.h"
#include "fuzz.h"
#include "kernels/data.h"

/* The bits cJSON's reading of one value gives as /v1/reduce reads it; false when it refuses. */
static bool cjson_bits(const cJSON *v, wp_type t, uint64_t *bits) {
    wp_err err = {0};
    if (cJSON_IsNumber(v) && t == WP_F32) {
        *bits = wp_f32_bits((float)v->valuedouble);
        return true;
    }
    if (wp_json_to_bits(v, t, "data", bits, &err)) {
        fz_check_err(&err);
        return false;
    }
    return true;
}

static void scan_list(const char *text, size_t n, wp_type t) {
    uint64_t cap = wp_json_array_cap(n), count = 0;
    size_t used = 0;
    uint8_t *out = malloc((size_t)cap * wp_type_size(t));
    if (!out) abort();
    void *fresh = NULL; /* into a buffer of its own: the same verdict, values and length */
    uint64_t fresh_count = 0;
    size_t fresh_used = 0;
    const bool ok = wp_json_scan_array(text, n, t, out, cap, &count, &used);
    if (wp_json_scan_array_new(text, n, t, &fresh, &fresh_count, &fresh_used) != ok ||
        (ok && (fresh_count != count || fresh_used != used || memcmp(fresh, out, (size_t)count * wp_type_size(t)))))
        abort();
    free(fresh);
    if (ok) {
        if (used > n || used < 2 || count > cap || text[used - 1] != ']') abort();
        cJSON *list = cJSON_ParseWithLength(text, used);
        if (!cJSON_IsArray(list) || (uint64_t)cJSON_GetArraySize(list) != count) abort();
        uint64_t i = 0, bits;
        for (const cJSON *v = list->child; v; v = v->next, i++)
            if (!cjson_bits(v, t, &bits) || bits != wp_data_load(t, out, i)) abort();
        cJSON_Delete(list);
    }
    free(out);
}

static void find_key(const char *text, size_t n) {
    size_t at = 0;
    char hint[16];
    if (!wp_json_find_top_key(text, n, "data", "type", &at, hint, sizeof hint)) return;
    if (at > n || !memchr(hint, 0, sizeof hint)) abort(); /* n: nothing after the colon (callers check) */
    cJSON *o = cJSON_ParseWithLength(text, n);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "data");
    if (cJSON_IsObject(o) && d) { /* the value at `at` reads as cJSON's "data" */
        const char *end = NULL;
        cJSON *v = cJSON_ParseWithLengthOpts(text + at, n - at, &end, 0);
        if (!v) abort();
        /* printed, not cJSON_Compare: that looks members up by name, so an object with a repeated key
         * differs from its own copy ({"data":{"x":1,"x":2}}, found in CI) */
        char *pv = cJSON_PrintUnformatted(v), *pd = cJSON_PrintUnformatted(d);
        if (!pv || !pd || strcmp(pv, pd)) abort();
        cJSON_free(pv), cJSON_free(pd);
        cJSON_Delete(v);
    }
    cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    wp_type t = (wp_type)(data[0] % WP_TYPE_COUNT);
    char *text = fz_text(data + 1, size - 1);
    scan_list(text, size - 1, t);
    find_key(text, size - 1);
    free(text);
    return 0;
}
