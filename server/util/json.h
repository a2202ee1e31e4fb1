/* json.h — JSON helpers that know no element types: the text before parsing (depth, trailing bytes),
 * members looked up, fields of a parsed object (integers, booleans, unknown keys) and constant-key
 * adders. Typed values are api/jsonval.h's. Owns: nothing mutable; any thread. */
#ifndef WP_JSON_H
#define WP_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "common.h"

/* After a JSON value that cJSON_ParseWithLengthOpts ended at `end` (NULL: at text + n), where the
 * first byte that is not whitespace (RFC 8259: space, tab, CR, LF) lies, or n when there is none: a
 * JSON text is one value, so a body or file with such a byte is refused. */
size_t wp_json_trailing(const char *text, size_t n, const char *end);
/* cJSON_GetObjectItemCaseSensitive's answer (the first member named key; NULL for none, a NULL obj or
 * key, or at a member without a name), a byte compared before each strcmp: a request's parse looks up
 * dozens of optional keys, most of them absent. */
static inline cJSON *wp_json_get(const cJSON *obj, const char *key) {
    if (!obj || !key) return NULL;
    for (cJSON *c = obj->child; c && c->string; c = c->next)
        if (c->string[0] == key[0] && !strcmp(c->string, key)) return c;
    return NULL;
}
/* Body nesting depth (arrays/objects) without parsing; used to refuse deep JSON before cJSON. */
int wp_json_depth(const char *text, size_t n);

/* The optional boolean `name` of obj into *out (false when absent); anything but true/false is a 400
 * "wrong_type" naming the field. */
int wp_json_bool(const cJSON *obj, const char *name, bool *out, wp_err *err);
/* Adds `name` (a constant: a string literal, or text that outlives obj) to obj: the number v, or null
 * when it has none (a step that was not measured). */
void wp_json_add_number_or_null(cJSON *obj, const char *name, bool has, double v);
/* cJSON_Add{Number,String,Bool,Object}ToObject for a constant key (a string literal, or text that
 * outlives obj): the key is not copied, a malloc and a free fewer per field of a response. The value
 * is copied as cJSON copies it. Each returns the new item, or NULL (out of memory: obj unchanged). */
cJSON *wp_json_num_k(cJSON *obj, const char *key, double v);
cJSON *wp_json_str_k(cJSON *obj, const char *key, const char *v);
cJSON *wp_json_bool_k(cJSON *obj, const char *key, bool v);
cJSON *wp_json_obj_k(cJSON *obj, const char *key);
cJSON *wp_json_int_raw(long long v); /* an integer as a raw item */
/* A JSON integer that must fit int32 (or a range). */
int wp_json_int(const cJSON *v, const char *field, long long lo, long long hi, long long *out, wp_err *err);
/* Fails with 400 "unknown_field" naming the first key of obj that is not in `allowed` (NULL-ended). */
int wp_json_only(const cJSON *obj, const char *prefix, const char *const *allowed, wp_err *err);

#endif
