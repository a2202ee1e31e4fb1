/* fuzz_json.c — libFuzzer harness for server/util/jsonparse.c (every request body's first parse): any
 * bytes; where the fast parse takes them, cJSON_ParseWithLengthOpts must give the same tree (every
 * field its parser sets, the first child's prev link, the end), and the tree must free with
 * cJSON_Delete. What it declines is cJSON's to read, as before. */
#include "fuzz.h"
#include "tests/jsontree.h"
#include "util/jsonparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *e1 = NULL, *e2 = NULL;
    const int depth = size ? 2 + data[0] % 64 : 64; /* the limit too: declined past it, taken within */
    cJSON *fast = wp_json_parse_fast(text, size, depth, &e1);
    if (!fast) return 0;
    cJSON *ref = cJSON_ParseWithLengthOpts(text, size, &e2, 0);
    if (!ref || !cJSON_IsObject(ref) || !wp_test_json_same(fast, ref) || e1 != e2) abort();
    cJSON_Delete(ref);
    cJSON_Delete(fast);
    return 0;
}
