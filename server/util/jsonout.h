/* jsonout.h — JSON text out, fast: a cJSON tree printed to exactly the bytes cJSON_PrintUnformatted
 * gives (cJSON 1.7.15's rules: numbers as %1.15g unless that does not read back, then %1.17g; NaN
 * and infinities as null; strings escaped as cJSON escapes them;
 * raw items copied), without cJSON's printf + sscanf + locale look-up per number; and integers to
 * decimal text without printf. Every response body goes through here: a tree through http_resp.c's
 * wp_resp_json, or text written with the wp_jtext writers below (the reduce, scan and warp answers).
 *
 * Threads: every function is reentrant; a tree must not change while it is printed. */
#ifndef WP_JSONOUT_H
#define WP_JSONOUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
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

/* A whole answer as text, in the bytes wp_json_print gives for the equivalent tree, without building
 * it. Every value writer puts the ',' a value needs (none after '{', '[', ':' or ','), so an object
 * is: wp_jtext_open(t, '{'), pairs (wp_jtext_key + a value, or the q* writers below), wp_jtext_close(t, '}').
 * Numbers print as a cJSON number item prints (NaN and infinities: null). */
void wp_jtext_open(wp_jtext *t, char c);  /* '{' or '[' */
void wp_jtext_close(wp_jtext *t, char c); /* '}' or ']' */
void wp_jtext_key(wp_jtext *t, const char *key);
void wp_jtext_num(wp_jtext *t, double v);
void wp_jtext_sval(wp_jtext *t, const char *s);              /* a string value; NULL: null */
void wp_jtext_text(wp_jtext *t, const char *json, size_t n); /* a value already JSON text */
bool wp_jtext_json(wp_jtext *t, const cJSON *item);          /* a tree; false where cJSON refuses it */
bool wp_jtext_members(wp_jtext *t, const cJSON *obj);        /* an object's pairs, into the open object */
/* Pairs with a key known when compiling: WP_JKEY("name") gives its text "name": and that text's
 * length, so the key costs one copy of a known length (a small answer's thirty keys were a tenth of
 * its handler). The name must be a string literal of plain characters: no '"', '\\' or control
 * character (nothing to escape); a key made at run time goes through wp_jtext_key. */
#define WP_JKEY(k) ("\"" k "\":"), (sizeof(k) + 2)
static inline void wp_jtext_qkey(wp_jtext *t, const char *q, size_t n) {
    if (t->n && !t->failed) { /* the ',' before it, as wp_jtext_key puts it */
        const char c = t->p[t->n - 1];
        if (c != '{' && c != '[' && c != ':' && c != ',') wp_jtext_add(t, ",", 1);
    }
    wp_jtext_add(t, q, n);
}
void wp_jtext_qnum(wp_jtext *t, const char *q, size_t n, double v);      /* "key":v */
void wp_jtext_qstr(wp_jtext *t, const char *q, size_t n, const char *s); /* "key":"s"; s NULL: no pair, as cJSON */
void wp_jtext_qbool(wp_jtext *t, const char *q, size_t n, bool v);
void wp_jtext_qnull(wp_jtext *t, const char *q, size_t n);
void wp_jtext_qnum_or_null(wp_jtext *t, const char *q, size_t n, bool has, double v); /* v, or null (no measure) */
void wp_jtext_qobj(wp_jtext *t, const char *q, size_t n); /* "key":{ ... closed by wp_jtext_close(t, '}') */
/* The text, NUL-terminated (*len its length) and the builder emptied; NULL when an allocation
 * failed (or a tree was refused), the builder freed. */
char *wp_jtext_take(wp_jtext *t, size_t *len);

/* Decimal text of v into buf (room for 21 bytes), NUL-terminated; returns its length. */
int wp_json_fmt_i64(char *buf, int64_t v);
int wp_json_fmt_u64(char *buf, uint64_t v);

#endif
