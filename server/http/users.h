/* users.h — who a request is: the tokens table of --tokens FILE (one user a line, `NAME ROLE SHA256
 * [key=value ...]`), or of --token-file / WARPD_TOKEN (one admin named "default"), each user's role and
 * quotas, and the counters kept per user name (requests, refusals, the rate bucket).
 *
 * A token is never kept: a user is found by the SHA-256 of the token presented, compared in constant
 * time with every entry of the table (users are few, as in a lab), so the time says nothing of which
 * entry matched or how close another came.
 *
 * Owns: wp_users — the current table, published by an atomic pointer (a reader loads it with acquire
 * and needs no lock); the tables it replaced, kept until wp_users_free so that a request, a job or a
 * channel that found its user in one may go on using it; and the counters, one slot per user name,
 * which outlive reloads (a user removed and added again keeps its counts).
 * Threads: wp_users_load_file, wp_users_load_text and wp_users_set_token on one thread at a time (main:
 * at start, and on SIGHUP); everything else on any thread at once, lock-free. */
#ifndef WP_USERS_H
#define WP_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/common.h"

#define WP_USER_NAME_MAX 32 /* characters of a name, [a-z0-9_-] */
#define WP_USERS_MAX 256    /* users of one table; names ever seen (counter slots) at most 4x that */

typedef enum { WP_ROLE_NONE = 0, WP_ROLE_READ = 1, WP_ROLE_RUN = 2, WP_ROLE_ADMIN = 3 } wp_role;

/* A user's quotas; 0: none (the daemon's global limits alone). */
typedef struct {
    uint64_t buffer_bytes; /* bytes of device buffers held at once */
    uint64_t shm_bytes;    /* bytes of shared-memory regions mapped at once */
    uint64_t jobs;         /* async jobs queued or running at once */
    uint64_t channels;     /* doorbell channels open at once */
    uint64_t rate;         /* requests a second, with a burst of the same size */
} wp_quota;

typedef struct wp_user wp_user;   /* one user of one table: immutable once published */
typedef struct wp_users wp_users; /* opaque */

wp_users *wp_users_new(void);
void wp_users_free(wp_users *us);

/* Reads FILE, checks it and publishes its table; on any failure the current table stays. Refuses (400
 * "bad_tokens", field "--tokens", the message naming the line) a malformed line, a name outside
 * [a-z0-9_-]{1,32}, a duplicate name or hash, an unknown role or key, a hash that is not 64 hex digits,
 * a bad number, and a file others can write. A file others can read is taken with a warning. */
int wp_users_load_file(wp_users *us, const char *path, wp_err *err);
/* The same from text (no file checks): what wp_users_load_file does after reading, and the fuzz's way in. */
int wp_users_load_text(wp_users *us, const char *text, size_t n, wp_err *err);
/* One admin named "default" whose token is token (WP_ACCESS_TOKEN_MIN.. characters, checked by the caller). */
int wp_users_set_token(wp_users *us, const char *token, size_t len, wp_err *err);

/* A table is published: requests need a token. */
bool wp_users_any(const wp_users *us);
/* "" or what the operator should fix that does not stop the start (a file others can read). */
const char *wp_users_warning(const wp_users *us);
/* The user whose token is token[0..len), or NULL. Lock-free; the user stays valid until wp_users_free. */
const wp_user *wp_users_find(const wp_users *us, const char *token, size_t len);
/* Who a request is without a table (no token configured: the daemon on loopback, as before users):
 * an admin named "default". And who a request to an exempt path (health, ready, the playground's files)
 * is when it shows no valid token: "anonymous", with the read role. Both live as long as us. */
const wp_user *wp_users_open_user(const wp_users *us);
const wp_user *wp_users_anonymous(const wp_users *us);

/* u is still a user of the current table (a reload may have removed them since they were found), or the
 * daemon, or the open admin of a daemon without tokens: what a long-lived resource (a channel) asks
 * before it serves its owner again. Lock-free. */
bool wp_users_current(const wp_users *us, const wp_user *u);

/* A user's parts. u NULL is the daemon itself (prewarm at start, internal calls): an admin, "default". */
const char *wp_user_name(const wp_user *u);
wp_role wp_user_role(const wp_user *u);
const char *wp_role_name(wp_role r); /* "read", "run", "admin" ("none") */
const wp_quota *wp_user_quota(const wp_user *u);
/* u may see and use a resource owned by owner: u is an admin (or NULL), or owner is u's name. */
bool wp_user_sees(const wp_user *u, const char *owner);
/* Copies u's name into out (WP_USER_NAME_MAX + 1 bytes): how a resource records its owner. */
void wp_user_name_copy(const wp_user *u, char *out);

/* The rate quota: takes one request's token from u's bucket at now_ns (wp_now_ns). true: allowed;
 * false: over the rate, *retry_s (whole seconds, >= 1) until one is free. Lock-free (one CAS). */
bool wp_user_rate_take(const wp_user *u, uint64_t now_ns, unsigned *retry_s);
/* A request of u answered with status (any thread; atomic): counts it, and a 4xx as a refusal. */
void wp_user_count(const wp_user *u, int status);

/* /metrics: calls fn once per user name ever seen (by slot, oldest first). */
typedef void (*wp_users_visit)(void *ctx, const char *name, uint64_t requests, uint64_t refused);
void wp_users_each(const wp_users *us, wp_users_visit fn, void *ctx);

#endif
