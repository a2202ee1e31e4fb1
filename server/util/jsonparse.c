/* jsonparse.c — owns the fast read of a request body into a cJSON tree (jsonparse.h). Two passes of
 * one recursive-descent reader over the text: the first checks the grammar and counts the nodes and
 * the string bytes, the second fills one block of that size (the nodes, then the strings). Every
 * rule that decides a value follows cJSON 1.7.15's parser: whitespace is any byte up to 32, a number
 * is read by strtod (a whole number of up to 15 digits is exact without it), valueint saturates at
 * INT_MAX and INT_MIN, true's valueint is 1, and a list's first child's prev is its last child.
 * strtod is given the text's '.', where cJSON puts the locale's decimal point: the same while
 * LC_NUMERIC is "C", as in warpd, which never calls setlocale. */
#include "jsonparse.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CJSON_NUMBER_MAX 63 /* cJSON reads at most 63 bytes of a number */
#define CJSON_NESTING 1000  /* CJSON_NESTING_LIMIT */

typedef struct {
    const unsigned char *p, *end;
    int depth, max_depth;
    size_t nodes, bytes;        /* counted (first pass) or taken (second) */
    size_t node_cap, bytes_cap; /* second pass: what the first counted (never passed: the same text) */
    cJSON *node;                /* second pass: the block's nodes, then its strings */
    char *str;
} reader;

static bool read_value(reader *r, cJSON *item);

static inline void skip_space(reader *r) {
    while (r->p < r->end && *r->p <= 32) r->p++;
}
static inline bool at(const reader *r, unsigned char c) { return r->p < r->end && *r->p == c; }
static inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
/* a byte cJSON would take into a number's text */
static inline bool number_byte(unsigned char c) {
    return is_digit(c) || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.';
}

/* The next node (zeroed), or NULL in the counting pass (and, never, past the block: the caller's text
 * changed between the passes; the pass then fails on the NULL rather than write past it). */
static cJSON *take_node(reader *r) {
    const size_t i = r->nodes++;
    if (!r->node || i >= r->node_cap) return NULL;
    memset(&r->node[i], 0, sizeof r->node[i]);
    return &r->node[i];
}

/* A string at '"' without escapes, copied verbatim (control bytes too, as cJSON copies them). */
static bool read_string(reader *r, char **out) {
    const unsigned char *s = r->p + 1, *q = s;
    while (q < r->end && *q != '"' && *q != '\\') q++;
    if (q == r->end || *q != '"') return false; /* unterminated, or an escape: cJSON reads it */
    const size_t n = (size_t)(q - s);
    if (r->str && r->bytes_cap - r->bytes < n + 1) return false; /* never: as take_node */
    if (r->str) {
        memcpy(r->str, s, n);
        r->str[n] = 0;
        *out = r->str;
        r->str += n + 1;
    }
    r->bytes += n + 1;
    r->p = q + 1;
    return true;
}

/* The digits at p, at least one; returns past them or NULL. */
static const unsigned char *digits(const unsigned char *p, const unsigned char *end) {
    if (p == end || !is_digit(*p)) return NULL;
    while (p < end && is_digit(*p)) p++;
    return p;
}

/* The number's value as strtod reads its text (a whole number of up to 15 digits exactly, without it). */
static double number_value(const unsigned char *s, size_t len, bool whole) {
    const bool neg = *s == '-';
    if (whole && len - neg <= 15) {
        uint64_t u = 0;
        for (size_t i = neg; i < len; i++) u = u * 10 + (uint64_t)(s[i] - '0');
        return neg ? -(double)u : (double)u; /* "-0" is -0.0, as strtod gives */
    }
    char text[CJSON_NUMBER_MAX + 1];
    memcpy(text, s, len);
    text[len] = 0;
    return strtod(text, NULL);
}

/* An RFC 8259 number, which must not run on into bytes cJSON would read as more of it. */
static bool read_number(reader *r, cJSON *item) {
    const unsigned char *s = r->p, *p = s + (*s == '-');
    bool whole = true;
    if (p < r->end && *p == '0')
        p++;
    else if (!(p = digits(p, r->end)))
        return false;
    if (p < r->end && *p == '.' && (whole = false, !(p = digits(p + 1, r->end)))) return false;
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        whole = false;
        p++;
        if (p < r->end && (*p == '+' || *p == '-')) p++;
        if (!(p = digits(p, r->end))) return false;
    }
    const size_t len = (size_t)(p - s);
    if ((p < r->end && number_byte(*p)) || len > CJSON_NUMBER_MAX) return false;
    r->p = p;
    if (!item) return true;
    const double d = number_value(s, len, whole);
    item->type = cJSON_Number;
    item->valuedouble = d;
    item->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    return true;
}

static bool read_word(reader *r, const char *w, size_t n, cJSON *item, int type, int valueint) {
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0) return false;
    r->p += n;
    if (item) item->type = type, item->valueint = valueint;
    return true;
}

/* A member's or element's node, linked after *last (a list's first child's prev: its last, as cJSON). */
static void link_child(cJSON **head, cJSON **last, cJSON *child) {
    if (!*head)
        *head = child;
    else
        (*last)->next = child, child->prev = *last;
    *last = child;
}

/* One member: "key" : value. */
static bool read_member(reader *r, cJSON **head, cJSON **last) {
    cJSON *child = take_node(r);
    if (r->node && !child) return false;
    char *key = NULL;
    if (!at(r, '"') || !read_string(r, &key)) return false;
    skip_space(r);
    if (!at(r, ':')) return false;
    r->p++;
    skip_space(r);
    if (!read_value(r, child)) return false;
    if (child) child->string = key, link_child(head, last, child);
    return true;
}

static bool read_element(reader *r, cJSON **head, cJSON **last) {
    cJSON *child = take_node(r);
    if (r->node && !child) return false;
    if (!read_value(r, child)) return false;
    if (child) link_child(head, last, child);
    return true;
}

/* An object or a list at its opening byte: members or elements, separated by ',', then `close`. */
static bool read_container(reader *r, cJSON *item, bool object) {
    const unsigned char close = object ? '}' : ']';
    if (++r->depth > r->max_depth) return false;
    r->p++;
    skip_space(r);
    cJSON *head = NULL, *last = NULL;
    if (!at(r, close)) {
        for (;;) {
            if (!(object ? read_member(r, &head, &last) : read_element(r, &head, &last))) return false;
            skip_space(r);
            if (!at(r, ',')) break;
            r->p++;
            skip_space(r);
        }
        if (!at(r, close)) return false;
    }
    r->p++;
    r->depth--;
    if (item) {
        if (head) head->prev = last;
        item->type = object ? cJSON_Object : cJSON_Array;
        item->child = head;
    }
    return true;
}

static bool read_value(reader *r, cJSON *item) {
    if (r->p == r->end) return false;
    switch (*r->p) {
    case '{':
        return read_container(r, item, true);
    case '[':
        return read_container(r, item, false);
    case '"': {
        char *s = NULL;
        if (!read_string(r, &s)) return false;
        if (item) item->type = cJSON_String, item->valuestring = s;
        return true;
    }
    case 't':
        return read_word(r, "true", 4, item, cJSON_True, 1);
    case 'f':
        return read_word(r, "false", 5, item, cJSON_False, 0);
    case 'n':
        return read_word(r, "null", 4, item, cJSON_NULL, 0);
    default:
        return (*r->p == '-' || is_digit(*r->p)) && read_number(r, item);
    }
}

/* One pass over the object at the text's start (after whitespace); true when it is in the grammar. */
static bool read_root(reader *r, const char *text, size_t n, cJSON *root) {
    r->p = (const unsigned char *)text;
    r->end = r->p + n;
    r->depth = 0;
    r->nodes = r->bytes = 0;
    skip_space(r);
    if (!at(r, '{')) return false; /* a byte-order mark, another root: cJSON's */
    take_node(r);
    return read_container(r, root, true);
}

cJSON *wp_json_parse_fast(const char *text, size_t n, int max_depth, const char **end) {
    reader r = {.max_depth = max_depth < CJSON_NESTING ? max_depth : CJSON_NESTING};
    if (!text || !read_root(&r, text, n, NULL)) return NULL;
    const size_t nodes = r.nodes, bytes = r.bytes;
    if (nodes > (SIZE_MAX - bytes) / sizeof(cJSON)) return NULL;
    cJSON *block = malloc(nodes * sizeof(cJSON) + bytes);
    if (!block) return NULL;
    r.node = block;
    r.node_cap = nodes;
    r.str = (char *)(block + nodes);
    r.bytes_cap = bytes;
    if (!read_root(&r, text, n, block) || r.nodes != nodes || r.bytes != bytes) { /* never: the same text twice */
        free(block);
        return NULL;
    }
    block->type |= cJSON_IsReference; /* cJSON_Delete frees the block, not its members one by one */
    if (end) *end = (const char *)r.p;
    return block;
}
