/* fuzz_expr.c — libFuzzer harness for kernels/expr.c: any bytes, parsed for every type; what parses
 * is re-parsed from its canonical text (when that fits the input limit), emitted as C++, copied and evaluated on a few
 * values; and as a map (wp_map_parse: x and y), re-parsed from its canonical text and written as a functor.
 * Built and run by make fuzz / make test (tests/fuzz/run.sh, with tests/fuzz/expr.dict). */
#include <stdlib.h>
#include <string.h>

#include "kernels/expr.h"

static const uint64_t probe_values[] = {0,      1,      0x80000000u,           0xffffffffu, 0x7fc00000u,
                                        0x3c00, 0x7e00, 0x8000000000000000ull, ~0ull,       0x7ff8000000000001ull};

static void exercise(const char *text, wp_type t) {
    wp_op op, again, dup;
    wp_err err = {0};
    if (wp_op_parse(text, t, "op", &op, &err)) {
        if (err.status != 400 || strcmp(err.field, "op") != 0) abort();
        return;
    }
    /* The canonical text parses again to itself, unless it grew past the input limit. */
    if (strlen(op.text) > WP_EXPR_MAX_LEN) {
        wp_op_free(&op);
        return;
    }
    if (wp_op_parse(op.text, t, "op", &again, &err) || strcmp(again.text, op.text) != 0) abort();
    if (wp_op_copy(&dup, &op)) abort();
    char type_name[128], definition[16384];
    if (wp_op_cxx(&op, t, type_name, sizeof type_name, definition, sizeof definition)) abort();
    for (size_t i = 0; i < WP_ARRAY_LEN(probe_values); i++)
        for (size_t j = 0; j < WP_ARRAY_LEN(probe_values); j += 3) {
            uint64_t r = wp_op_apply(&op, t, probe_values[i], probe_values[j]);
            if (r != wp_op_apply(&again, t, probe_values[i], probe_values[j])) abort();
            if (r != wp_op_apply(&dup, t, probe_values[i], probe_values[j])) abort();
            if (r & ~wp_type_bitmask(t)) abort();
        }
    uint64_t id;
    if (wp_op_identity(&op, t, &id) && (id & ~wp_type_bitmask(t))) abort();
    wp_op_free(&dup);
    wp_op_free(&again);
    wp_op_free(&op);
}

/* The same bytes as a map (x, and y when has_y): parses to itself again, and its functor is written. */
static void exercise_map(const char *text, wp_type t, bool has_y) {
    wp_op map, again;
    wp_err err = {0};
    if (wp_map_parse(text, t, has_y, "map", &map, &err)) {
        if (err.status != 400 || strcmp(err.field, "map") != 0) abort();
        return;
    }
    if (!has_y && wp_map_uses_y(&map)) abort();
    char definition[16384];
    if (wp_map_cxx(&map, definition, sizeof definition)) abort();
    if (strlen(map.text) <= WP_EXPR_MAX_LEN) {
        if (wp_map_parse(map.text, t, true, "map", &again, &err) || strcmp(again.text, map.text) != 0) abort();
        if (wp_op_apply(&map, t, probe_values[1], probe_values[2]) !=
            wp_op_apply(&again, t, probe_values[1], probe_values[2]))
            abort();
        wp_op_free(&again);
    }
    wp_op_free(&map);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    for (int t = 0; t < WP_TYPE_COUNT; t++) exercise(text, (wp_type)t);
    exercise_map(text, size & 1 ? WP_I64 : WP_F32, size & 2); /* one map per input: the harness keeps its pace */
    free(text);
    return 0;
}
