/* base64.h — RFC 4648 base64 (standard alphabet, padding optional on input) for the "data_b64" forms
 * of the API: little-endian element bytes travel as base64 text inside JSON. */
#ifndef WP_BASE64_H
#define WP_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Checks text (n characters) and gives its decoded length; 400 "bad_base64" naming `field`. */
int wp_b64_check(const char *s, size_t n, const char *field, size_t *out_len, wp_err *err);
/* Decodes checked text into out (out_len bytes, from wp_b64_check). */
void wp_b64_decode(const char *s, uint8_t *out, size_t out_len);
/* Encodes n bytes as a malloc'd NUL-terminated string; NULL when out of memory. */
char *wp_b64_encode(const uint8_t *p, size_t n);

#endif
