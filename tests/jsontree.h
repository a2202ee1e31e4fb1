/* jsontree.h — what test_jsonparse (tests/unit) and the fuzz harness fuzz_json (tests/fuzz) compare: two
 * cJSON trees alike in every field cJSON's parser sets, links included. Header only. */
#ifndef WP_TEST_JSONTREE_H
#define WP_TEST_JSONTREE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <string.h>

/* a and b (and their next siblings) alike: types, valueint, valuedouble's bits, keys, strings, children;
 * each next's prev is its sibling, and a list's first child's prev is its last child. */
static inline bool wp_test_json_same(const cJSON *a, const cJSON *b) {
    for (; a || b; a = a->next, b = b->next) {
        if (!a || !b || (a->type & 0xff) != (b->type & 0xff) || a->valueint != b->valueint ||
            memcmp(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble) != 0)
            return false;
        if (!a->string != !b->string || (a->string && strcmp(a->string, b->string)) ||
            !a->valuestring != !b->valuestring || (a->valuestring && strcmp(a->valuestring, b->valuestring)))
            return false;
        if (!a->child != !b->child || (a->child && !wp_test_json_same(a->child, b->child))) return false;
        if (a->child) {
            const cJSON *la = a->child, *lb = b->child;
            while (la->next) la = la->next, lb = lb->next;
            if (a->child->prev != la || b->child->prev != lb) return false;
        }
        if ((a->next && a->next->prev != a) || (b->next && b->next->prev != b)) return false;
    }
    return true;
}

#endif
