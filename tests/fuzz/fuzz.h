/* fuzz.h — what every libFuzzer harness in tests/fuzz/ shares: the input as a NUL-terminated string,
 * and the rule for an error a client caused: a well-formed 4xx naming a field. Harnesses that drive
 * the daemon's handlers add fuzz_app.h. tests/fuzz/run.sh runs them (make fuzz, make test). */
#ifndef WP_FUZZ_H
#define WP_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/common.h"

/* A malloc'd NUL-terminated copy of data (embedded NULs kept: strlen may be shorter than n). */
static inline char *fz_text(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    if (n) memcpy(s, data, n);
    s[n] = 0;
    return s;
}

/* The error was filled as a client-facing one: status 4xx, a code and a message, NUL-terminated. */
static inline void fz_check_err(const wp_err *e) {
    if (!e->code || !*e->code || !e->msg[0]) abort();
    if (e->status < 400 || e->status > 499) abort();
    if (!memchr(e->field, 0, sizeof e->field) || !memchr(e->msg, 0, sizeof e->msg)) abort();
}

#endif
