/* numtext_impl.h — what numtext.c and its generated tables (numtext_pow5.c) share. */
#ifndef WP_NUMTEXT_IMPL_H
#define WP_NUMTEXT_IMPL_H

#include <stdint.h>

#define WP_POW5_PARSE_MIN (-342)
#define WP_POW5_PARSE_MAX 308
#define WP_POW10_PRINT_MIN (-292)
#define WP_POW10_PRINT_MAX 326

extern const uint64_t wp_pow5_parse[WP_POW5_PARSE_MAX - WP_POW5_PARSE_MIN + 1][2];
extern const uint64_t wp_pow10_print[WP_POW10_PRINT_MAX - WP_POW10_PRINT_MIN + 1][2];

#endif
