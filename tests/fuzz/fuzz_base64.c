/* fuzz_base64.c — libFuzzer harness for server/util/base64.c (the "data_b64" fields): any bytes are
 * checked; what checks decodes to the length the check gave, and encodes to text that checks and
 * decodes back to the same bytes; what is refused is a 400 "bad_base64". Every byte string also
 * encodes and decodes back to itself. */
#include "fuzz.h"
#include "util/base64.h"

static void roundtrip(const uint8_t *bytes, size_t n) {
    char *text = wp_b64_encode(bytes, n);
    if (!text) abort();
    size_t len = 0, tn = strlen(text);
    wp_err err = {0};
    if (tn % 4 || wp_b64_check(text, tn, "data_b64", &len, &err) || len != n) abort();
    uint8_t *back = malloc(n + 1);
    if (!back) abort();
    wp_b64_decode(text, back, len);
    if (memcmp(back, bytes, n)) abort();
    free(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fz_text(data, size);
    size_t len = 0;
    wp_err err = {0};
    if (wp_b64_check(s, size, "data_b64", &len, &err)) {
        fz_check_err(&err);
        if (err.status != 400 || strcmp(err.code, "bad_base64") || strcmp(err.field, "data_b64")) abort();
    } else {
        if (len > size) abort();
        uint8_t *out = malloc(len + 1);
        if (!out) abort();
        wp_b64_decode(s, out, len);
        roundtrip(out, len);
        free(out);
    }
    roundtrip(data, size);
    free(s);
    return 0;
}
