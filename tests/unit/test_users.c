/* test_users.c — the tokens table (server/http/users.c): the file's parser and each refusal with its
 * line, the lookup by the token's hash, roles and owners, quotas, the rate bucket, the reload by swap
 * (the old table's users stay valid), the counters by name; and the round-robin queue
 * (server/http/fairq.c) that takes jobs in turn by user. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/fairq.h"
#include "http/users.h"
#include "t.h"
#include "util/sha256.h"

static void hex_of(const char *token, char out[65]) {
    uint8_t h[32];
    wp_sha256(token, strlen(token), h);
    wp_hex(h, 32, out);
}

#define TA "alice-token-0123456789"
#define TB "bob-token-0123456789ab"
#define TC "carol-token-0123456789"

static char *file_text(void) {
    static char text[1024];
    char a[65], b[65], c[65];
    hex_of(TA, a), hex_of(TB, b), hex_of(TC, c);
    snprintf(text, sizeof text,
             "# the lab\n"
             "alice run %s buffer_bytes=1m jobs=2 rate=5  # a comment\n"
             "\n"
             "   bob\tread\t%s\n"
             "carol admin %s shm_bytes=4096 channels=1\n",
             a, b, c);
    return text;
}

static void test_parse_and_find(void) {
    T_CASE("parse and find");
    wp_users *us = wp_users_new();
    wp_err err = {0};
    CHECK(!wp_users_any(us));
    const char *text = file_text();
    CHECK(wp_users_load_text(us, text, strlen(text), &err) == 0);
    CHECK(wp_users_any(us));
    const wp_user *a = wp_users_find(us, TA, strlen(TA));
    const wp_user *b = wp_users_find(us, TB, strlen(TB));
    const wp_user *c = wp_users_find(us, TC, strlen(TC));
    CHECK(a && !strcmp(wp_user_name(a), "alice") && wp_user_role(a) == WP_ROLE_RUN);
    CHECK(b && !strcmp(wp_user_name(b), "bob") && wp_user_role(b) == WP_ROLE_READ);
    CHECK(c && !strcmp(wp_user_name(c), "carol") && wp_user_role(c) == WP_ROLE_ADMIN);
    CHECK(wp_user_quota(a)->buffer_bytes == 1u << 20 && wp_user_quota(a)->jobs == 2 && wp_user_quota(a)->rate == 5);
    CHECK(wp_user_quota(c)->shm_bytes == 4096 && wp_user_quota(c)->channels == 1 && wp_user_quota(b)->rate == 0);
    CHECK(!wp_users_find(us, TA "x", strlen(TA) + 1) && !wp_users_find(us, "", 0));
    CHECK(!wp_users_find(us, TA, strlen(TA) - 1));
    /* owners: one's own, an admin all, the daemon itself (NULL) all */
    CHECK(wp_user_sees(a, "alice") && !wp_user_sees(a, "bob") && !wp_user_sees(b, "alice"));
    CHECK(wp_user_sees(c, "alice") && wp_user_sees(NULL, "bob"));
    CHECK(!strcmp(wp_user_name(NULL), "default") && wp_user_role(NULL) == WP_ROLE_ADMIN);
    CHECK(!strcmp(wp_user_name(wp_users_open_user(us)), "default") &&
          wp_user_role(wp_users_open_user(us)) == WP_ROLE_ADMIN);
    CHECK(wp_user_role(wp_users_anonymous(us)) == WP_ROLE_READ);
    CHECK(!strcmp(wp_role_name(WP_ROLE_RUN), "run"));

    /* a reload: alice goes, dave comes; the old users stay valid (a request may hold one) */
    char d[65], text2[256];
    hex_of("dave-token-0123456789", d);
    snprintf(text2, sizeof text2, "dave run %s\n", d);
    CHECK(wp_users_load_text(us, text2, strlen(text2), &err) == 0);
    CHECK(!wp_users_find(us, TA, strlen(TA)) && wp_users_find(us, "dave-token-0123456789", 21));
    CHECK(!strcmp(wp_user_name(a), "alice")); /* still readable: retired, not freed */
    /* a table that does not parse leaves the one before */
    CHECK(wp_users_load_text(us, "x y z\n", 6, &err) == -1);
    CHECK(wp_users_find(us, "dave-token-0123456789", 21) != NULL);
    wp_users_free(us);
}

typedef struct {
    const char *what, *line; /* %s: a good hash */
    int bad_line;
    const char *needle;
} bad_case;

static void test_refusals(void) {
    T_CASE("refusals");
    char h[65], h2[65];
    hex_of(TA, h), hex_of(TB, h2);
    const bad_case cases[] = {
        {"too few fields", "alice run\n", 1, "expected NAME ROLE SHA256"},
        {"a bad name", "Alice run %s\n", 1, "the name"},
        {"a long name", "abcdefghijabcdefghijabcdefghijabc run %s\n", 1, "the name"},
        {"an unknown role", "alice writer %s\n", 1, "unknown role"},
        {"a short hash", "alice run abc\n", 1, "64 hex digits"},
        {"an unknown key", "alice run %s gpus=2\n", 1, "unknown key"},
        {"not key=value", "alice run %s jobs\n", 1, "key=value"},
        {"a bad number", "alice run %s jobs=x\n", 1, "not a count"},
        {"a bad unit", "alice run %s buffer_bytes=3q\n", 1, "not a count"},
        {"a unit on a count", "alice run %s jobs=3k\n", 1, "not a count"},
        {"a duplicate name", "# x\nalice run %s\nalice read %s\n", 3, "twice"},
        {"a duplicate hash", "alice run %s\nbob read %s\n", 2, "too"},
        {"no user", "# nothing\n\n", 0, "names no user"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        T_CASE(cases[i].what);
        char text[512];
        snprintf(text, sizeof text, cases[i].line, h, strstr(cases[i].what, "hash") ? h : h2);
        wp_users *us = wp_users_new();
        wp_err err = {0};
        CHECK(wp_users_load_text(us, text, strlen(text), &err) == -1);
        CHECKF(err.status == 400 && !strcmp(err.code, "bad_tokens") && strstr(err.msg, cases[i].needle), "%s", err.msg);
        char at[32];
        snprintf(at, sizeof at, "line %d:", cases[i].bad_line);
        if (cases[i].bad_line) CHECKF(strstr(err.msg, at) != NULL, "%s", err.msg);
        CHECK(!wp_users_any(us));
        wp_users_free(us);
    }
}

static void test_file(void) {
    T_CASE("the file");
    char path[] = "/tmp/wp-tokens-XXXXXX";
    int fd = mkstemp(path);
    const char *text = file_text();
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    wp_users *us = wp_users_new();
    wp_err err = {0};
    chmod(path, 0600);
    CHECK(wp_users_load_file(us, path, &err) == 0 && !wp_users_warning(us)[0]);
    chmod(path, 0644);
    CHECK(wp_users_load_file(us, path, &err) == 0 && strstr(wp_users_warning(us), "read"));
    chmod(path, 0666);
    CHECK(wp_users_load_file(us, path, &err) == -1 && strstr(err.msg, "written"));
    CHECK(wp_users_load_file(us, "/nonexistent/tokens", &err) == -1 && !strcmp(err.code, "bad_tokens"));
    unlink(path);
    /* the single token: one admin "default" */
    CHECK(wp_users_set_token(us, TB, strlen(TB), &err) == 0);
    const wp_user *d = wp_users_find(us, TB, strlen(TB));
    CHECK(d && !strcmp(wp_user_name(d), "default") && wp_user_role(d) == WP_ROLE_ADMIN);
    CHECK(!wp_users_find(us, TA, strlen(TA)));
    wp_users_free(us);
}

static void count_visit(void *ctx, const char *name, uint64_t requests, uint64_t refused) {
    if (!strcmp(name, "alice")) ((uint64_t *)ctx)[0] = requests, ((uint64_t *)ctx)[1] = refused;
}

static void test_rate_and_counts(void) {
    T_CASE("rate and counts");
    wp_users *us = wp_users_new();
    wp_err err = {0};
    const char *text = file_text();
    CHECK(wp_users_load_text(us, text, strlen(text), &err) == 0);
    const wp_user *a = wp_users_find(us, TA, strlen(TA)); /* rate=5: a burst of 5, then one each 200 ms */
    const wp_user *b = wp_users_find(us, TB, strlen(TB)); /* no rate */
    uint64_t t = 1000000000000ull;
    unsigned retry = 0;
    int allowed = 0;
    for (int i = 0; i < 8; i++) allowed += wp_user_rate_take(a, t, &retry);
    CHECK(allowed == 5 && retry == 1);
    CHECK(!wp_user_rate_take(a, t + 100000000ull, &retry));
    CHECK(wp_user_rate_take(a, t + 200000000ull, &retry));
    CHECK(!wp_user_rate_take(a, t + 200000000ull, &retry));
    CHECK(wp_user_rate_take(a, t + 5000000000ull, &retry)); /* refilled */
    for (int i = 0; i < 100; i++) CHECK(wp_user_rate_take(b, t, &retry));
    wp_user_count(a, 200), wp_user_count(a, 404), wp_user_count(a, 429), wp_user_count(a, 503);
    /* the counts outlive a reload that removes and re-adds the name */
    CHECK(wp_users_load_text(us, text, strlen(text), &err) == 0);
    wp_user_count(wp_users_find(us, TA, strlen(TA)), 201);
    uint64_t got[2] = {0, 0};
    wp_users_each(us, count_visit, got);
    CHECK(got[0] == 5 && got[1] == 2);
    wp_users_free(us);
}

typedef struct {
    wp_fair_node node; /* first: the node's address is the item's */
    char who;
    int n;
} item;

static void test_fairq(void) {
    T_CASE("fairq");
    wp_fairq q;
    wp_fairq_init(&q);
    CHECK(wp_fairq_pop(&q) == NULL);
    /* a floods first, then b and c come: the takes go a, b, c in turn, each user's in order */
    item it[12];
    const char *who = "aaaaaaabbbcc";
    for (int i = 0; i < 12; i++) {
        it[i] = (item){.who = who[i], .n = i};
        char name[2] = {who[i], 0};
        wp_fairq_push(&q, &it[i].node, name);
    }
    CHECK(q.depth == 12);
    char order[13] = "";
    int last_n[3] = {-1, -1, -1};
    bool in_order = true;
    for (int i = 0; i < 12; i++) {
        item *x = (item *)(void *)wp_fairq_pop(&q);
        order[i] = x ? x->who : '?';
        if (x && x->n < last_n[x->who - 'a']) in_order = false;
        if (x) last_n[x->who - 'a'] = x->n;
    }
    CHECKF(!strcmp(order, "abcabcabaaaa"), "%s", order);
    CHECK(in_order && q.depth == 0 && q.taken == 12 && !wp_fairq_pop(&q));
    /* removal (a cancelled job) from the middle of a lane, and of one not queued */
    item r[3] = {{.n = 0}, {.n = 1}, {.n = 2}};
    for (int i = 0; i < 3; i++) wp_fairq_push(&q, &r[i].node, "x");
    CHECK(wp_fairq_remove(&q, &r[1].node) && !wp_fairq_remove(&q, &r[1].node) && q.depth == 2);
    CHECK((item *)(void *)wp_fairq_pop(&q) == &r[0] && (item *)(void *)wp_fairq_pop(&q) == &r[2]);
    CHECK(wp_fairq_remove(&q, &r[2].node) == false);
    /* a alone, taken; then a and b wait: b goes first, a just had its turn */
    wp_fairq_init(&q);
    item a1 = {.n = 1}, a2 = {.n = 2}, b1 = {.n = 3};
    wp_fairq_push(&q, &a1.node, "a");
    CHECK((item *)(void *)wp_fairq_pop(&q) == &a1);
    wp_fairq_push(&q, &a2.node, "a");
    wp_fairq_push(&q, &b1.node, "b");
    CHECK((item *)(void *)wp_fairq_pop(&q) == &b1 && (item *)(void *)wp_fairq_pop(&q) == &a2);
}

int main(void) {
    test_parse_and_find();
    test_refusals();
    test_file();
    test_rate_and_counts();
    test_fairq();
    return t_done("users");
}
