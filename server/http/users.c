/* users.c — the tokens table (see users.h): its parser, the lock-free lookup by the SHA-256 of a token,
 * the reload by pointer swap, the per-name counters and rate buckets.
 * Owns: wp_users, its tables (current and retired) and counter slots. */
#include "users.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/sha256.h"

#define SLOTS_MAX (4 * WP_USERS_MAX)
#define LINE_SHOW 40 /* characters of a bad word quoted in a message */

/* The counters of one user name; never freed before wp_users_free, so a user of a retired table counts on. */
typedef struct {
    char name[WP_USER_NAME_MAX + 1];
    atomic_uint_least64_t requests, refused;
    atomic_uint_least64_t tat_ns; /* the rate bucket: the theoretical arrival time of the next request (GCRA) */
} slot;

struct wp_user {
    char name[WP_USER_NAME_MAX + 1];
    wp_role role;
    wp_quota quota;
    uint8_t hash[32];
    slot *st;
};

typedef struct table {
    struct table *retired_next;
    int n;
    wp_user users[];
} table;

struct wp_users {
    _Atomic(table *) cur;
    table *retired; /* tables replaced, freed with us */
    slot *slots;
    atomic_int n_slots; /* published with release after the slot's name is written */
    wp_user open, anon;
    char warning[300];
};

static const wp_user daemon_user = {.name = "default", .role = WP_ROLE_ADMIN};

/* The slot of name, made when new. Loader thread only (the one writer). */
static slot *slot_for(wp_users *us, const char *name) {
    int n = atomic_load_explicit(&us->n_slots, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (!strcmp(us->slots[i].name, name)) return &us->slots[i];
    if (n >= SLOTS_MAX) return NULL;
    snprintf(us->slots[n].name, sizeof us->slots[n].name, "%s", name);
    atomic_store_explicit(&us->n_slots, n + 1, memory_order_release);
    return &us->slots[n];
}

wp_users *wp_users_new(void) {
    wp_users *us = calloc(1, sizeof *us);
    if (!us || !(us->slots = calloc(SLOTS_MAX, sizeof *us->slots))) {
        free(us);
        return NULL;
    }
    us->open = daemon_user;
    us->open.st = slot_for(us, "default");
    snprintf(us->anon.name, sizeof us->anon.name, "anonymous");
    us->anon.role = WP_ROLE_READ;
    us->anon.st = slot_for(us, "anonymous");
    return us;
}

void wp_users_free(wp_users *us) {
    if (!us) return;
    table *t = atomic_load(&us->cur);
    if (t)
        t->retired_next = us->retired;
    else
        t = us->retired;
    while (t) {
        table *next = t->retired_next;
        memset(t->users, 0, sizeof(wp_user) * (size_t)t->n); /* the hashes */
        free(t);
        t = next;
    }
    free(us->slots);
    free(us);
}

/* Publishes t; the table it replaces is kept (a request may hold one of its users) until wp_users_free. */
static void publish(wp_users *us, table *t) {
    for (int i = 0; i < t->n; i++) t->users[i].st = slot_for(us, t->users[i].name);
    table *old = atomic_exchange_explicit(&us->cur, t, memory_order_acq_rel);
    if (old) {
        old->retired_next = us->retired;
        us->retired = old;
    }
}

/* ---------- the file's parser ---------- */

static bool name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > WP_USER_NAME_MAX) return false;
    for (; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_' || *s == '-')) return false;
    return true;
}

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool hash_parse(const char *s, uint8_t out[32]) {
    if (strlen(s) != 64) return false;
    for (int i = 0; i < 32; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

/* A count: digits, with an optional k, m, g or t (powers of 1024) for the byte quotas. */
static bool number_parse(const char *s, bool bytes, uint64_t *out) {
    size_t digits = strspn(s, "0123456789");
    if (digits == 0 || digits > 15) return false;
    uint64_t v = strtoull(s, NULL, 10);
    const char *suffix = s + digits;
    int shift = 0;
    if (*suffix && bytes) {
        const char *units = "kmgt";
        const char *u = strchr(units, tolower((unsigned char)*suffix));
        if (!u || suffix[1]) return false;
        shift = 10 * (int)(u - units + 1);
    } else if (*suffix) {
        return false;
    }
    *out = v << shift;
    return true;
}

static wp_role role_parse(const char *s) {
    return !strcmp(s, "read")    ? WP_ROLE_READ
           : !strcmp(s, "run")   ? WP_ROLE_RUN
           : !strcmp(s, "admin") ? WP_ROLE_ADMIN
                                 : WP_ROLE_NONE;
}

__attribute__((format(printf, 3, 4))) static int bad_line(wp_err *err, int line, const char *fmt, ...) {
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return WP_FAIL(err, 400, "bad_tokens", "--tokens", "the tokens file, line %d: %s", line, msg);
}

/* A word quoted in a message: cut and made printable. */
static const char *shown(const char *s, char out[LINE_SHOW + 1]) {
    size_t n = 0;
    for (; *s && n < LINE_SHOW; s++) out[n++] = isprint((unsigned char)*s) ? *s : '?';
    out[n] = 0;
    return out;
}

static int option_parse(wp_user *u, char *word, int line, wp_err *err) {
    char show[LINE_SHOW + 1];
    char *eq = strchr(word, '=');
    if (!eq) return bad_line(err, line, "\"%s\" is not key=value", shown(word, show));
    *eq = 0;
    const char *value = eq + 1;
    static const char *const keys[] = {"buffer_bytes", "shm_bytes", "jobs", "channels", "rate"};
    uint64_t *fields[] = {&u->quota.buffer_bytes, &u->quota.shm_bytes, &u->quota.jobs, &u->quota.channels,
                          &u->quota.rate};
    for (int k = 0; k < 5; k++) {
        if (strcmp(word, keys[k])) continue;
        if (!number_parse(value, k < 2, fields[k]) || (k == 4 && *fields[k] > 1000000))
            return bad_line(err, line, "%s=%s is not a count%s", keys[k], shown(value, show),
                            k < 2 ? " of bytes (digits, with k, m, g or t)" : "");
        return 0;
    }
    return bad_line(err, line, "unknown key \"%s\" (buffer_bytes, shm_bytes, jobs, channels or rate)",
                    shown(word, show));
}

/* One line's words (comment stripped) into u. 1: a user; 0: blank; -1 with err. */
static int line_parse(char *text, int line, wp_user *u, wp_err *err) {
    char show[LINE_SHOW + 1];
    char *hash = strchr(text, '#');
    if (hash) *hash = 0;
    char *words[3 + 8];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(text, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
        if (n == (int)(sizeof words / sizeof *words)) return bad_line(err, line, "too many fields (at most 11)");
        words[n++] = w;
    }
    if (n == 0) return 0;
    if (n < 3) return bad_line(err, line, "expected NAME ROLE SHA256 [key=value ...]");
    memset(u, 0, sizeof *u);
    if (!name_ok(words[0]))
        return bad_line(err, line, "the name \"%s\" must be 1 to 32 of a-z, 0-9, _ and -", shown(words[0], show));
    snprintf(u->name, sizeof u->name, "%s", words[0]);
    if ((u->role = role_parse(words[1])) == WP_ROLE_NONE)
        return bad_line(err, line, "unknown role \"%s\" (read, run or admin)", shown(words[1], show));
    if (!hash_parse(words[2], u->hash))
        return bad_line(err, line, "the hash must be 64 hex digits (printf %%s \"$TOKEN\" | sha256sum)");
    for (int i = 3; i < n; i++)
        if (option_parse(u, words[i], line, err)) return -1;
    return 1;
}

static int duplicate(const table *t, const wp_user *u, int line, wp_err *err) {
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->users[i].name, u->name)) return bad_line(err, line, "the name %s is given twice", u->name);
        if (!memcmp(t->users[i].hash, u->hash, 32))
            return bad_line(err, line, "the hash of %s is %s's too (one token, two users)", u->name, t->users[i].name);
    }
    return 0;
}

static table *table_parse(const char *text, size_t len, wp_err *err) {
    table *t = calloc(1, sizeof *t + sizeof(wp_user) * WP_USERS_MAX);
    char *copy = malloc(len + 1);
    if (!t || !copy) {
        free(t);
        free(copy);
        WP_FAIL(err, 500, "internal", "", "out of memory");
        return NULL;
    }
    memcpy(copy, text, len);
    copy[len] = 0;
    int line = 1, rc = 0;
    for (char *p = copy; p && rc == 0; line++) {
        char *nl = memchr(p, '\n', len - (size_t)(p - copy));
        if (nl) *nl = 0;
        if (strlen(p) != (size_t)((nl ? nl : copy + len) - p)) {
            rc = bad_line(err, line, "a NUL byte");
            break;
        }
        wp_user u;
        int got = line_parse(p, line, &u, err);
        if (got < 0 || (got > 0 && duplicate(t, &u, line, err)))
            rc = -1;
        else if (got > 0 && t->n == WP_USERS_MAX)
            rc = bad_line(err, line, "more than %d users", WP_USERS_MAX);
        else if (got > 0)
            t->users[t->n++] = u;
        p = nl ? nl + 1 : NULL;
    }
    memset(copy, 0, len);
    free(copy);
    if (rc == 0 && t->n == 0) rc = WP_FAIL(err, 400, "bad_tokens", "--tokens", "the tokens file names no user");
    if (rc) {
        free(t);
        return NULL;
    }
    return t;
}

int wp_users_load_text(wp_users *us, const char *text, size_t n, wp_err *err) {
    table *t = table_parse(text, n, err);
    if (!t) return -1;
    publish(us, t);
    return 0;
}

int wp_users_load_file(wp_users *us, const char *path, wp_err *err) {
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return WP_FAIL(err, 400, "bad_tokens", "--tokens", "cannot read the tokens file %s: %s", path ? path : "",
                       strerror(errno));
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return WP_FAIL(err, 400, "bad_tokens", "--tokens",
                       "the tokens file %.200s can be written by other users: chmod 600 it", path);
    size_t n = 0;
    char *text = wp_read_file(path, &n);
    if (!text) return WP_FAIL(err, 400, "bad_tokens", "--tokens", "cannot read the tokens file %.200s", path);
    int rc = wp_users_load_text(us, text, n, err);
    memset(text, 0, n);
    free(text);
    us->warning[0] = 0;
    if (!rc && (st.st_mode & (S_IRGRP | S_IROTH)))
        snprintf(us->warning, sizeof us->warning, "the tokens file %.200s can be read by other users: chmod 600 it",
                 path);
    return rc;
}

int wp_users_set_token(wp_users *us, const char *token, size_t len, wp_err *err) {
    table *t = calloc(1, sizeof *t + sizeof(wp_user));
    if (!t) return WP_FAIL(err, 500, "internal", "", "out of memory");
    t->n = 1;
    t->users[0] = daemon_user;
    wp_sha256(token, len, t->users[0].hash);
    publish(us, t);
    return 0;
}

/* ---------- lookups (any thread) ---------- */

bool wp_users_any(const wp_users *us) { return us && atomic_load_explicit(&us->cur, memory_order_acquire); }
const char *wp_users_warning(const wp_users *us) { return us ? us->warning : ""; }
const wp_user *wp_users_open_user(const wp_users *us) { return us ? &us->open : &daemon_user; }
const wp_user *wp_users_anonymous(const wp_users *us) { return us ? &us->anon : NULL; }

const wp_user *wp_users_find(const wp_users *us, const char *token, size_t len) {
    table *t = us ? atomic_load_explicit(&((wp_users *)us)->cur, memory_order_acquire) : NULL;
    if (!t) return NULL;
    uint8_t h[32];
    wp_sha256(token, len, h);
    const wp_user *found = NULL;
    for (int i = 0; i < t->n; i++) { /* every entry, every byte: no early exit */
        volatile unsigned char diff = 0;
        for (int b = 0; b < 32; b++) diff |= (unsigned char)(t->users[i].hash[b] ^ h[b]);
        bool match = diff == 0;
        found = match ? &t->users[i] : found;
    }
    return found;
}

bool wp_users_current(const wp_users *us, const wp_user *u) {
    table *t = us ? atomic_load_explicit(&((wp_users *)us)->cur, memory_order_acquire) : NULL;
    if (!t || !u) return true;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->users[i].name, u->name)) return true;
    return false;
}

const char *wp_user_name(const wp_user *u) { return u ? u->name : daemon_user.name; }
wp_role wp_user_role(const wp_user *u) { return u ? u->role : WP_ROLE_ADMIN; }

const char *wp_role_name(wp_role r) {
    return r == WP_ROLE_READ ? "read" : r == WP_ROLE_RUN ? "run" : r == WP_ROLE_ADMIN ? "admin" : "none";
}

const wp_quota *wp_user_quota(const wp_user *u) { return u ? &u->quota : &daemon_user.quota; }

bool wp_user_sees(const wp_user *u, const char *owner) {
    return !u || u->role == WP_ROLE_ADMIN || (owner && !strcmp(owner, u->name));
}

void wp_user_name_copy(const wp_user *u, char *out) { snprintf(out, WP_USER_NAME_MAX + 1, "%s", wp_user_name(u)); }

bool wp_user_rate_take(const wp_user *u, uint64_t now_ns, unsigned *retry_s) {
    if (!u || !u->quota.rate || !u->st) return true;
    uint64_t step = 1000000000ull / u->quota.rate, window = step * u->quota.rate;
    uint64_t tat = atomic_load_explicit(&u->st->tat_ns, memory_order_relaxed), next;
    do {
        next = (tat > now_ns ? tat : now_ns) + step;
        if (next - now_ns > window) {
            uint64_t wait = next - now_ns - window;
            *retry_s = (unsigned)((wait + 999999999ull) / 1000000000ull);
            if (*retry_s == 0) *retry_s = 1;
            return false;
        }
    } while (
        !atomic_compare_exchange_weak_explicit(&u->st->tat_ns, &tat, next, memory_order_relaxed, memory_order_relaxed));
    return true;
}

void wp_user_count(const wp_user *u, int status) {
    if (!u || !u->st) return;
    atomic_fetch_add_explicit(&u->st->requests, 1, memory_order_relaxed);
    if (status >= 400 && status < 500) atomic_fetch_add_explicit(&u->st->refused, 1, memory_order_relaxed);
}

void wp_users_each(const wp_users *us, wp_users_visit fn, void *ctx) {
    if (!us) return;
    int n = atomic_load_explicit(&((wp_users *)us)->n_slots, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        slot *s = &us->slots[i];
        fn(ctx, s->name, atomic_load_explicit(&s->requests, memory_order_relaxed),
           atomic_load_explicit(&s->refused, memory_order_relaxed));
    }
}
