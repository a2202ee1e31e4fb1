/* t.h — the unit-test harness: CHECK macros and a closing "N passed, N failed" line per program.
 * Each test program calls t_done() last and exits with its status. */
#ifndef WP_T_H
#define WP_T_H

#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;
static const char *t_case = "";

#define T_CASE(name) (t_case = (name))
#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (cond)                                                                                                      \
            t_pass++;                                                                                                  \
        else {                                                                                                         \
            t_fail++;                                                                                                  \
            fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, t_case, #cond);                               \
        }                                                                                                              \
    } while (0)
#define CHECKF(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (cond)                                                                                                      \
            t_pass++;                                                                                                  \
        else {                                                                                                         \
            t_fail++;                                                                                                  \
            fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, t_case, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

static inline int t_done(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, t_pass, t_fail);
    return t_fail ? 1 : 0;
}

#endif
