/* fuzz_json.c — libFuzzer harness for server/util/jsonparse.c (every request body's first parse): any
 * bytes; where the fast parse takes them, cJSON_ParseWithLengthOpts must give the same tree (every
 * field its parser sets, the first child's prev link, the end), and the tree must free with
 * cJSON_Delete. What it declines is cJSON's to read, as before. */
#include "fuzz.h"
#include "util/jsonparse.h"

static bool same(const cJSON *a, const cJSON *b) {
    for (; a || b; a = a->next, b = b->next) {
        if (!a || !b || (a->type & 0xff) != (b->type & 0xff) || a->valueint != b->valueint ||
            memcmp(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble) != 0)
            return false;
        if (!a->string != !b->string || (a->string && strcmp(a->string, b->string)) ||
            !a->valuestring != !b->valuestring || (a->valuestring && strcmp(a->valuestring, b->valuestring)))
            return false;
        if (!a->child != !b->child || (a->child && !same(a->child, b->child))) return false;
        if (a->child) { /* the first child's prev is the last one in both */
            const cJSON *la = a->child, *lb = b->child;
            while (la->next) la = la->next, lb = lb->next;
            if (a->child->prev != la || b->child->prev != lb) return false;
        }
        if ((a->next && a->next->prev != a) || (b->next && b->next->prev != b)) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *e1 = NULL, *e2 = NULL;
    const int depth = size ? 2 + data[0] % 64 : 64; /* the limit too: declined past it, taken within */
    cJSON *fast = wp_json_parse_fast(text, size, depth, &e1);
    if (!fast) return 0;
    cJSON *ref = cJSON_ParseWithLengthOpts(text, size, &e2, 0);
    if (!ref || !cJSON_IsObject(ref) || !same(fast, ref) || e1 != e2) abort();
    cJSON_Delete(ref);
    cJSON_Delete(fast);
    return 0;
}
