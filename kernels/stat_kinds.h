/* stat_kinds.h — the statistics and norms device_reduce knows (WP_STAT_*), their names and the
 * accumulator each folds (WP_SACC_*, wp_abi.h): the words data.c's plans and stats.c's arithmetic
 * share. Header only, so data.c can size a statistic's partials without needing stats.c, which
 * needs data.c (its loads and its emulated grid). Any thread; nothing here keeps state. */
#ifndef WP_STAT_KINDS_H
#define WP_STAT_KINDS_H

#include "wp_abi.h"

typedef enum {
    WP_STAT_NONE = 0, /* a plain operator (sum, max, ...) */
    WP_STAT_MEAN,
    WP_STAT_VAR,
    WP_STAT_STD,
    WP_STAT_NORM1,
    WP_STAT_NORM2,
    WP_STAT_NORMINF,
    WP_STAT_COUNT_NONZERO,
    WP_STAT_KINDS
} wp_stat;

/* The names (inline: the spec's key and checks use them on every job's way, kernels/spec.c). */
static inline const char *wp_stat_name(int stat) { /* "var" */
    static const char *const names[WP_STAT_KINDS] = {"none",  "mean",  "var",     "std",
                                                     "norm1", "norm2", "norminf", "count_nonzero"};
    return stat >= 0 && stat < WP_STAT_KINDS ? names[stat] : "none";
}
static inline const char *wp_stat_acc_name(int sacc) { /* the kernel key's op: "moments", "abs_sum", ... */
    static const char *const names[] = {"none", "moments", "abs_sum", "sq_sum", "abs_max", "nonzero"};
    return sacc >= WP_SACC_MOMENTS && sacc <= WP_SACC_NONZERO ? names[sacc] : "none";
}

/* WP_SACC_*: what a statistic's kernel folds. */
static inline int wp_stat_acc(int stat) {
    return stat == WP_STAT_MEAN || stat == WP_STAT_VAR || stat == WP_STAT_STD ? WP_SACC_MOMENTS
           : stat == WP_STAT_NORM1                                            ? WP_SACC_ABS_SUM
           : stat == WP_STAT_NORM2                                            ? WP_SACC_SQ_SUM
           : stat == WP_STAT_NORMINF                                          ? WP_SACC_ABS_MAX
                                                                              : WP_SACC_NONZERO;
}

#endif
