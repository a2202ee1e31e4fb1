/* jsonval.h — one typed value to and from JSON, as DESIGN.md §4 says: 64-bit integers as strings
 * (numbers accepted only where a double holds them exactly), NaN and infinities as "NaN",
 * "Infinity", "-Infinity", floats printed with the fewest digits that read back to the same bits
 * (-0 kept), and {"bits":"0x..."} for an exact bit pattern (NaN payloads). */
#ifndef WP_JSONVAL_H
#define WP_JSONVAL_H

#include <cjson/cJSON.h>

#include "kernels/types.h"
#include "util/common.h"
#include "util/json.h"
#include "util/jsonout.h"

int wp_json_to_bits(const cJSON *v, wp_type t, const char *field, uint64_t *out, wp_err *err);
/* Its two halves, for readers that have the number or the string without a cJSON node. */
int wp_json_number_to_bits(double d, wp_type t, const char *field, uint64_t *out, wp_err *err);
int wp_json_string_to_bits(const char *s, wp_type t, const char *field, uint64_t *out, wp_err *err);

/* ---- large arrays of values without a cJSON node per value (jsonlist.c) ----
 * A "data" list of 10^6 numbers costs cJSON a node each; these read it in place instead, giving the
 * bits that cJSON + wp_json_to_bits give for the same text (numbers through strtod's correctly rounded
 * double, as cJSON reads them; strings as wp_json_string_to_bits reads them). They decline (return
 * false) anything they do not follow exactly — then the caller parses with cJSON, which also makes
 * every error message what it always was. */

/* The value of the first key `key` of the top-level object, found without parsing: *value_at is the
 * offset of its first byte. When `hint` is given, the string value of the first key `hint` that comes
 * before `key` is copied to hint_value ("" when there is none, or it is not a short plain string).
 * false: no such key, or a key with an escape sequence or a NUL byte before it (cJSON would decode that
 * name, or end it at the NUL). */
bool wp_json_find_top_key(const char *text, size_t n, const char *key, const char *hint, size_t *value_at,
                          char *hint_value, size_t hint_cap);

/* Reads the JSON array that starts at text[0] ('['), whitespace as cJSON skips it, as packed values of
 * type t (wp_data_store layout) into out, which has room for cap values: numbers, and strings without
 * escapes. *count gets the number of values, *used the bytes the array took (to its ']'). false when
 * the array holds anything else (objects, lists, literals, escapes), a value wp_json_to_bits refuses,
 * more than cap values, or is not valid JSON. wp_json_array_cap(n) values always fit n bytes. */
bool wp_json_scan_array(const char *text, size_t n, wp_type t, void *out, uint64_t cap, uint64_t *count, size_t *used);
static inline uint64_t wp_json_array_cap(size_t n) { return (uint64_t)n / 2 + 1; }
/* The same into a new buffer (malloc'd, *out; NULL when false) of the values read, not of the most the
 * text could hold (a long list's pieces are read into buffers of their own, then copied into it). */
bool wp_json_scan_array_new(const char *text, size_t n, wp_type t, void **out, uint64_t *count, size_t *used);
cJSON *wp_json_from_bits(wp_type t, uint64_t bits); /* a raw item: printing it is a copy */
/* The JSON text of one value (as wp_json_from_bits prints it); buf of 48 bytes is always enough. */
void wp_json_bits_text(wp_type t, uint64_t bits, char *buf, size_t n);
/* The same text written at buf, which has WP_JSON_VALUE_MAX bytes of room (NUL-terminated); its length. */
#define WP_JSON_VALUE_MAX 48
int wp_json_value_text(wp_type t, uint64_t bits, char *buf);
/* Its parts, for the list writer (jsonlist.c). A float's text (f32, f64, f16, bf16) at buf, which has
 * WP_NUM_TEXT_MAX bytes of room (util/numtext.h), NUL-terminated; returns its length. */
int wp_json_float_text(wp_type t, uint64_t bits, char *buf);
/* Every f16 (or bf16) value's text by its bits, built on first use: NUL-padded, the length in the
 * last byte. */
#define WP_JSON_HALF_TEXT 16
typedef char wp_json_half_text[WP_JSON_HALF_TEXT];
const wp_json_half_text *wp_json_half_texts(wp_type t);
/* n packed values of type t (wp_data_store layout) as the JSON list "[v,v,...]", each value's text as
 * wp_json_bits_text's, appended to out without a cJSON node per value (a long list printed on several
 * threads, the first part straight into out); false when out of memory. out gets room for the longest
 * texts the type has: its capacity may be a few times the text (the pages past it are never touched). */
bool wp_json_append_values(wp_jtext *out, wp_type t, const void *data, uint64_t n);
/* The same list as one raw item (what cJSON_AddArrayToObject + wp_json_from_bits per value prints, byte
 * for byte); NULL when out of memory. */
cJSON *wp_json_values_raw(wp_type t, const void *data, uint64_t n);

#endif
