/* jsonparse.h — a request body read into a cJSON tree fast: the same tree cJSON_ParseWithLengthOpts
 * builds, in one allocation rather than two a member (a small body's cJSON parse was a fifth of its
 * handler, most of it malloc and free).
 *
 * wp_json_parse_fast takes a JSON object in the plain grammar clients send: RFC 8259 numbers, strings
 * without escapes, true, false, null, nesting up to max_depth. Anything else it declines (NULL), and
 * the caller parses with cJSON, which then gives the tree or the error it always gave: a text it takes
 * gives exactly cJSON's tree (types, values, valueint, keys, order, the first child's prev link), so
 * what a handler reads does not depend on which parser read it.
 *
 * The tree is freed with cJSON_Delete as any other: its root is the allocation, marked
 * cJSON_IsReference so that cJSON_Delete frees only it. Read such a tree; never detach, replace or
 * delete a member of it, nor add one (a body is read, never edited, in every handler).
 *
 * Threads: reentrant; no state. */
#ifndef WP_JSONPARSE_H
#define WP_JSONPARSE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* text[0..n) as a JSON object, *end just past its closing '}' (as cJSON's return_parse_end); NULL
 * when the text is outside the plain grammar, nested deeper than max_depth, or memory ran out. */
cJSON *wp_json_parse_fast(const char *text, size_t n, int max_depth, const char **end);

#endif
