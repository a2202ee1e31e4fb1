/* sha256.h — SHA-256 (FIPS 180-4), for cache keys and the disk store's checksums. */
#ifndef WP_SHA256_H
#define WP_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} wp_sha256_ctx; /* streaming state; the one-shot function below takes the plain name */

void wp_sha256_init(wp_sha256_ctx *s);
void wp_sha256_update(wp_sha256_ctx *s, const void *data, size_t n);
void wp_sha256_final(wp_sha256_ctx *s, uint8_t out[32]);
void wp_sha256(const void *data, size_t n, uint8_t out[32]);
void wp_hex(const uint8_t *bytes, size_t n, char *out); /* out gets 2n+1 chars */

#endif
