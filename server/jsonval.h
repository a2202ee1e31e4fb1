/* jsonval.h — one typed value to and from JSON, as DESIGN.md §4 says: 64-bit integers as strings
 * (numbers accepted only where a double holds them exactly), NaN and infinities as "NaN",
 * "Infinity", "-Infinity", floats printed with the fewest digits that read back to the same bits
 * (-0 kept), and {"bits":"0x..."} for an exact bit pattern (NaN payloads). */
#ifndef WP_JSONVAL_H
#define WP_JSONVAL_H

#include <cjson/cJSON.h>

#include "../kernels/types.h"
#include "common.h"

int wp_json_to_bits(const cJSON *v, wp_type t, const char *field, uint64_t *out, wp_err *err);
cJSON *wp_json_from_bits(wp_type t, uint64_t bits);
/* A JSON integer that must fit int32 (or a range). */
int wp_json_int(const cJSON *v, const char *field, long long lo, long long hi, long long *out, wp_err *err);
/* Fails with 400 "unknown_field" naming the first key of obj that is not in `allowed` (NULL-ended). */
int wp_json_only(const cJSON *obj, const char *prefix, const char *const *allowed, wp_err *err);
/* Body nesting depth (arrays/objects) without parsing; used to refuse deep JSON before cJSON. */
int wp_json_depth(const char *text, size_t n);

#endif
