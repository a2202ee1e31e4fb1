/* fuzz_users.c — libFuzzer harness for the users (server/http/users.c: the --tokens file's parser) and
 * the Authorization header (server/http/access.c's token check), each input used both ways:
 *   - as a tokens file: taken (then a token table is published) or refused with a 400 "bad_tokens"
 *     naming a line (or saying the file names no user), never anything else;
 *   - as an Authorization header against a daemon of three users (read, run, admin) with known
 *     tokens: it passes exactly when it is "Bearer" (any case), spaces and one of their tokens, and
 *     then as that user; otherwise a well-formed 401 "unauthorized"; a POST as the reader is a 403
 *     "forbidden" naming the run role. */
#include <ctype.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "http/access.h"
#include "http/users.h"
#include "util/sha256.h"

static const char *const names[3] = {"reader", "runner", "boss"};
static const char *const roles[3] = {"read", "run", "admin"};
static const char *const tokens[3] = {"reader-token-0123456789", "runner-token-0123456789", "boss-token-0123456789ab"};
static wp_access *fz_access;

static void setup(void) {
    char path[] = "/tmp/fuzz-tokens-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) abort();
    for (int i = 0; i < 3; i++) {
        uint8_t h[32];
        char hex[65], line[160];
        wp_sha256(tokens[i], strlen(tokens[i]), h);
        wp_hex(h, 32, hex);
        int n = snprintf(line, sizeof line, "%s %s %s\n", names[i], roles[i], hex);
        if (write(fd, line, (size_t)n) != n) abort();
    }
    close(fd);
    wp_err err = {0};
    fz_access = wp_access_new();
    if (!fz_access || wp_access_tokens_file(fz_access, path, &err) || wp_access_finish(fz_access, NULL, &err)) abort();
    unlink(path);
}

static void as_file(const uint8_t *data, size_t size) {
    wp_users *us = wp_users_new();
    if (!us) abort();
    wp_err err = {0};
    if (wp_users_load_text(us, (const char *)data, size, &err)) {
        fz_check_err(&err);
        if (err.status != 400 || strcmp(err.code, "bad_tokens") || wp_users_any(us)) abort();
        if (!strstr(err.msg, "line ") && !strstr(err.msg, "names no user")) abort();
    } else if (!wp_users_any(us)) {
        abort();
    }
    wp_users_free(us);
}

/* Which known token the header carries, as the check must read it: -1 for none. */
static int expected(const char *auth) {
    if (strncasecmp(auth, "Bearer", 6) || (auth[6] != ' ' && auth[6] != '\t')) return -1;
    const char *t = auth + 6;
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    for (int i = 0; i < 3; i++)
        if (n == strlen(tokens[i]) && !memcmp(t, tokens[i], n)) return i;
    return -1;
}

static void as_header(const char *auth) {
    wp_access_req q = {.method = "GET", .path = "/v1/info", .host = "localhost", .authorization = auth};
    wp_access_verdict v;
    wp_access_check(fz_access, &q, &v);
    int who = expected(auth);
    if (who >= 0) {
        if (v.action != WP_ACCESS_PASS || !v.user || strcmp(wp_user_name(v.user), names[who])) abort();
        q.method = "POST", q.path = "/v1/reduce", q.content_type = "application/json", q.has_body = true;
        wp_access_check(fz_access, &q, &v);
        bool reader = who == 0;
        if (reader != (v.action == WP_ACCESS_DENY)) abort();
        if (reader && (v.err.status != 403 || strcmp(v.err.code, "forbidden") || !strstr(v.err.msg, "run role")))
            abort();
    } else {
        if (v.action != WP_ACCESS_DENY || v.err.status != 401 || strcmp(v.err.code, "unauthorized") || !v.challenge)
            abort();
        fz_check_err(&v.err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fz_access) setup();
    as_file(data, size);
    char *s = fz_text(data, size);
    as_header(s);
    free(s);
    return 0;
}
