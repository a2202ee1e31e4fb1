/* jsonout.h — JSON text out, fast: a cJSON tree printed to exactly the bytes cJSON_PrintUnformatted
 * gives (cJSON 1.7.15's rules: numbers as %1.15g unless that does not read back, then %1.17g; NaN
 * and infinities as null; strings escaped as cJSON escapes them;
 * raw items copied), without cJSON's printf + sscanf + locale look-up per number; and integers to
 * decimal text without printf. Every response body goes through here (http_resp.c's wp_resp_json).
 *
 * Threads: every function is reentrant; a tree must not change while it is printed. */
#ifndef WP_JSONOUT_H
#define WP_JSONOUT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The tree as a NUL-terminated malloc'd string (*len, when given, its length); NULL when out of
 * memory or the tree holds what cJSON would refuse to print (an invalid item, a raw item without
 * text) — as cJSON_PrintUnformatted returns NULL then. */
char *wp_json_print(const cJSON *item, size_t *len);

/* JSON text built piece by piece (a value type: zero it to start, on the stack), for responses whose
 * hundreds of small values would each cost a cJSON node: wp_jtext_raw hands the text over as one
 * raw item. A failed allocation is remembered and makes wp_jtext_raw return NULL. */
typedef struct {
    char *p;
    size_t n, cap;
    int failed;
} wp_jtext;
void wp_jtext_put(wp_jtext *t, const char *s, size_t n); /* text as it is */
/* The same, inline while it fits (a warp answer appends a few hundred short pieces); else the call. */
static inline void wp_jtext_add(wp_jtext *t, const char *s, size_t n) {
    if (t->n + n < t->cap) { /* room for the terminator too, as wp_jtext_put keeps */
        memcpy(t->p + t->n, s, n);
        t->n += n;
    } else {
        wp_jtext_put(t, s, n);
    }
}
void wp_jtext_str(wp_jtext *t, const char *s); /* a JSON string, escaped as cJSON escapes */
/* Room for n more bytes at t->p + t->n, for writing text in place (then add its length to t->n); NULL
 * when the allocation fails (remembered). */
char *wp_jtext_room(wp_jtext *t, size_t n);
/* A raw item of the text, which it takes over without a copy (a list of 10^6 values is megabytes);
 * empties the builder. NULL when an allocation failed (the text is freed then). */
cJSON *wp_jtext_raw(wp_jtext *t);

/* Decimal text of v into buf (room for 21 bytes), NUL-terminated; returns its length. */
int wp_json_fmt_i64(char *buf, int64_t v);
int wp_json_fmt_u64(char *buf, uint64_t v);

#endif
