/* base64.c — RFC 4648 base64 for the API's data_b64 fields: a checking pass (so an error names the
 * character), a decoding pass into a caller's buffer, and an encoder. */
#include "base64.h"

#include <stdlib.h>

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int wp_b64_check(const char *s, size_t n, const char *field, size_t *out_len, wp_err *err) {
    while (n && s[n - 1] == '=' && n % 4 != 1) n--; /* at most the padding a valid text can have */
    for (size_t i = 0; i < n; i++)
        if (b64_value((unsigned char)s[i]) < 0)
            return WP_FAIL(err, 400, "bad_base64", field, "%s: character %zu ('%c') is not base64", field, i,
                           s[i] >= 32 && s[i] < 127 ? s[i] : '?');
    if (n % 4 == 1) return WP_FAIL(err, 400, "bad_base64", field, "%s: truncated (length %zu)", field, n);
    *out_len = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
    return 0;
}

void wp_b64_decode(const char *s, uint8_t *out, size_t out_len) {
    uint32_t acc = 0;
    int bits = 0;
    for (size_t produced = 0; produced < out_len; s++) {
        acc = acc << 6 | (uint32_t)b64_value((unsigned char)*s);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[produced++] = (uint8_t)(acc >> bits);
        }
    }
}

char *wp_b64_encode(const uint8_t *p, size_t n) {
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = b64_chars[v >> 18 & 63];
        *o++ = b64_chars[v >> 12 & 63];
        *o++ = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    *o = 0;
    return out;
}
