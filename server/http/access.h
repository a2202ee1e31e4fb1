/* access.h — who may talk to warpd. Every request passes one check before it is routed (http.c calls
 * wp_access_check once per request), in this order:
 *   1. Host is ours (DNS rebinding): the listen host, localhost, 127.0.0.1, [::1] or an --allow-host
 *      entry, with any port                                                     else 403 bad_host
 *   2. a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method) from an --allow-origin
 *      origin is answered 204 with the CORS headers; from any other origin      403 bad_origin
 *   3. a request that changes state (any method but GET, HEAD, OPTIONS) whose Origin is given must come
 *      from the daemon's own origin (http(s)://<the request's Host>) or an --allow-origin one
 *                                                                               else 403 bad_origin
 *   4. with tokens (--tokens FILE, or --token-file / WARPD_TOKEN: one admin "default"): Authorization:
 *      Bearer <token>, whose SHA-256 finds the user (users.h, constant time), on every path but
 *      /v1/health, /v1/ready, the playground's files (GET/HEAD of a path outside /v1/ and /metrics: the
 *      page that asks for the token) and, with --metrics-public, /metrics      else 401 unauthorized
 *      Without tokens every request is the open admin "default" (users.h).
 *      The user's role: GET/HEAD need read, DELETE of /v1/cache (or an entry) admin, every other change run
 *                                                                               else 403 forbidden
 *      The user's rate quota                                  else 429 quota_rate, with Retry-After
 *   5. POST/PUT/PATCH bodies are application/json or application/octet-stream; the Content-Type may
 *      be left out only when the body is empty                       else 415 unsupported_media_type
 * Every answer carries the security headers (nosniff, CSP, X-Frame-Options, ...); an answer to an
 * --allow-origin origin carries CORS headers too, and nobody else's does (wp_access_headers).
 *
 * Owns: wp_access (the configuration: built from flags on the main thread before the HTTP daemon
 * starts, read-only afterwards, so wp_access_check and wp_access_headers may run on any thread at
 * once). wp_access_check is pure: the request's headers and the configuration in, a verdict out. */
#ifndef WP_ACCESS_H
#define WP_ACCESS_H

#include <stdbool.h>

#include "users.h"
#include "util/common.h"

#define WP_ACCESS_TOKEN_MIN 16   /* characters; shorter tokens are refused (guessable) */
#define WP_ACCESS_TOKEN_MAX 4096 /* characters */

typedef struct wp_access wp_access;

wp_access *wp_access_new(void);
void wp_access_free(wp_access *a);

/* One command-line flag: --allow-host H, --allow-origin O (repeatable), --token-file F,
 * --metrics-public, --insecure. value is the argument after arg (NULL when there is none).
 * Returns how many arguments it used (1 or 2), 0 when arg is not one of these, -1 with err. */
int wp_access_parse_flag(wp_access *a, const char *arg, const char *value, wp_err *err);

/* The same, one by one. */
int wp_access_allow_host(wp_access *a, const char *host, wp_err *err);     /* "name", "name:port", "[v6]:port" */
int wp_access_allow_origin(wp_access *a, const char *origin, wp_err *err); /* "http(s)://host[:port]" */
int wp_access_set_token(wp_access *a, const char *token, wp_err *err);
int wp_access_token_file(wp_access *a, const char *path, wp_err *err); /* the first line; spaces trimmed */
/* --tokens FILE: named users with roles and quotas (users.h). */
int wp_access_tokens_file(wp_access *a, const char *path, wp_err *err);
/* SIGHUP: reads --tokens (or --token-file) again; on failure (err names the line) the old table stays.
 * Main thread; requests go on meanwhile (users.h's pointer swap). */
int wp_access_reload(wp_access *a, wp_err *err);
/* The users table, for /v1/whoami and /metrics (any thread). */
wp_users *wp_access_users(const wp_access *a);
void wp_access_set_metrics_public(wp_access *a, bool on);
void wp_access_set_insecure(wp_access *a, bool on);
/* The host given to --listen ("127.0.0.1", "::1", "0.0.0.0", a name; "unix:/path" sets unix mode). */
void wp_access_set_listen(wp_access *a, const char *host);
/* Unix mode: the daemon listens on a Unix socket, whose file mode is the access control. Any Host
 * (or none) is accepted: a browser cannot reach a Unix socket, so there is no rebinding to stop. */
void wp_access_set_unix(wp_access *a, bool on);

/* After the flags: env_token (the value of WARPD_TOKEN, or NULL) is the token when no --token-file
 * gave one. Refuses (-1, err says why and what to do) a listen host that is not loopback when there
 * is no token, unless --insecure. */
int wp_access_finish(wp_access *a, const char *env_token, wp_err *err);

bool wp_access_has_token(const wp_access *a);
/* "" or what the operator should fix but that does not stop the start (a token file others can read). */
const char *wp_access_warning(const wp_access *a);
/* "127.0.0.1", "::1", "localhost" (and the rest of 127/8, ::ffff:127/104): the host only this machine reaches. */
bool wp_access_is_loopback(const char *host);

/* A request as the checks see it. NULL: the header is absent. */
typedef struct {
    const char *method, *path; /* path without the query */
    const char *host;          /* Host */
    const char *origin;        /* Origin */
    const char *content_type;  /* Content-Type */
    const char *authorization; /* Authorization */
    const char *cors_method;   /* Access-Control-Request-Method (a preflight names it) */
    bool has_body;             /* Content-Length > 0, or a Transfer-Encoding */
} wp_access_req;

typedef enum { WP_ACCESS_PASS = 0, WP_ACCESS_DENY, WP_ACCESS_PREFLIGHT } wp_access_action;

typedef struct {
    wp_access_action action;
    wp_err err;              /* DENY: the answer (403, 401 or 415 and its code) */
    const char *cors_origin; /* the --allow-origin entry the request came from (static for the
                                configuration's life), or NULL: its answer gets CORS headers */
    bool vary_origin;        /* some origin is allowed: answers depend on Origin (Vary) */
    bool challenge;          /* a 401: WWW-Authenticate */
    const wp_user *user;     /* who the request is (users.h); never NULL once past the token check */
    unsigned retry_after_s;  /* a 429 "quota_rate": seconds for Retry-After */
} wp_access_verdict;

/* a NULL: the defaults (loopback hosts, no other origin, no token). Never fails; fills *out. */
void wp_access_check(const wp_access *a, const wp_access_req *req, wp_access_verdict *out);

/* Calls add(ctx, name, value) for each header the answer carries for this verdict. */
typedef void (*wp_access_add_header)(void *ctx, const char *name, const char *value);
void wp_access_headers(const wp_access_verdict *v, wp_access_add_header add, void *ctx);

#endif
