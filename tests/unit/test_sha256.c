/* test_sha256.c — SHA-256 against the FIPS 180-4 / NIST CAVS vectors, and split updates against
 * the one-shot digest. */
#include <stdlib.h>

#include "t.h"
#include "util/sha256.h"

static int digest_is(const void *data, size_t n, const char *hex) {
    uint8_t d[32];
    char got[65];
    wp_sha256(data, n, d);
    wp_hex(d, 32, got);
    if (strcmp(got, hex) != 0) fprintf(stderr, "  got %s\n  want %s\n", got, hex);
    return strcmp(got, hex) == 0;
}

int main(void) {
    T_CASE("empty");
    CHECK(digest_is("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));

    T_CASE("abc");
    CHECK(digest_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));

    T_CASE("448 bits");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK(digest_is(m448, strlen(m448), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));

    T_CASE("896 bits");
    const char *m896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
        "mnopqrstnopqrstu";
    CHECK(digest_is(m896, strlen(m896), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));

    T_CASE("million a");
    size_t mn = 1000000;
    char *ma = malloc(mn);
    CHECK(ma != NULL);
    if (ma) {
        memset(ma, 'a', mn);
        CHECK(digest_is(ma, mn, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    }

    T_CASE("split updates");
    /* Every split point of a 200-byte message, and byte-at-a-time, equal the one-shot digest. */
    uint8_t msg[200], want[32], got[32];
    for (int i = 0; i < 200; i++) msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 0; n <= sizeof msg; n += 1) {
        wp_sha256(msg, n, want);
        int all_equal = 1;
        for (size_t cut = 0; cut <= n; cut++) {
            wp_sha256_ctx s;
            wp_sha256_init(&s);
            wp_sha256_update(&s, msg, cut);
            wp_sha256_update(&s, msg + cut, n - cut);
            wp_sha256_final(&s, got);
            all_equal &= memcmp(got, want, 32) == 0;
        }
        wp_sha256_ctx s;
        wp_sha256_init(&s);
        for (size_t i = 0; i < n; i++) wp_sha256_update(&s, msg + i, 1);
        wp_sha256_final(&s, got);
        all_equal &= memcmp(got, want, 32) == 0;
        CHECKF(all_equal, "length %zu", n);
    }
    if (ma) {
        /* The million 'a' in uneven chunks. */
        wp_sha256_ctx s;
        wp_sha256_init(&s);
        size_t off = 0, chunk = 1;
        while (off < mn) {
            size_t take = chunk < mn - off ? chunk : mn - off;
            wp_sha256_update(&s, ma + off, take);
            off += take;
            chunk = chunk * 3 % 997 + 1;
        }
        wp_sha256_final(&s, got);
        char hex[65];
        wp_hex(got, 32, hex);
        CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
        free(ma);
    }

    T_CASE("hex");
    char hex[7];
    wp_hex((const uint8_t *)"\x00\xab\xff", 3, hex);
    CHECK(strcmp(hex, "00abff") == 0);
    return t_done("sha256");
}
