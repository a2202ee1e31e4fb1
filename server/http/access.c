/* access.c — who may talk to warpd: the Host / Origin / token / Content-Type checks of every request,
 * the headers its answer carries, and the configuration they read (built from flags). access.h lists
 * the checks and their order. Owns: wp_access. Knows nothing of libmicrohttpd: http.c hands it the
 * request's headers and adds the headers it names. */
#include "access.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define LIST_MAX 32  /* --allow-host and --allow-origin entries, each */
#define HOST_CAP 256 /* bytes of a host name (DNS allows 253 characters) */
#define ORIGIN_MAX (HOST_CAP + 32)
#define SHOW_MAX 80 /* characters of a client's header quoted in an error message */

/* Every answer, the playground's pages included: no MIME sniffing, no framing, no inline script or style,
 * nothing from another origin. */
#define CSP "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
#define CORS_METHODS "GET, HEAD, POST, PUT, DELETE"
/* reqlog.h reads the last two */
#define CORS_HEADERS "Authorization, Content-Type, Accept, X-Request-Id, traceparent"
#define CORS_EXPOSE "Location, Retry-After, WWW-Authenticate, X-Request-Id"
#define CORS_MAX_AGE "600" /* seconds a browser may keep a preflight's answer */
#define CHALLENGE "Bearer realm=\"warpd\""

typedef struct {
    char name[HOST_CAP]; /* lower case, IPv6 without brackets; "*" matches any */
    int port;            /* -1: any */
} host_entry;

typedef struct {
    char text[ORIGIN_MAX]; /* serialized as browsers send it: scheme://host[:port], default port left out */
    bool https;
    char name[HOST_CAP];
    int port; /* always set: the scheme's default when the origin names none */
} origin_entry;

struct wp_access {
    char listen[HOST_CAP]; /* the listen host, as host_entry.name */
    bool unix_mode, metrics_public, insecure;
    wp_users *users;   /* the tokens table (users.h); none published: no token, everyone the open admin */
    char *tokens_path; /* --tokens FILE, read again by wp_access_reload */
    char *token_path;  /* --token-file FILE, the same */
    bool token_env;    /* the token came from WARPD_TOKEN */
    host_entry hosts[LIST_MAX];
    int n_hosts;
    origin_entry origins[LIST_MAX];
    int n_origins;
    char warning[300]; /* "" or what the operator should fix (wp_access_warning) */
};

static const wp_access defaults; /* loopback only, no origin, no token */

wp_access *wp_access_new(void) {
    wp_access *a = calloc(1, sizeof(wp_access));
    if (a && !(a->users = wp_users_new())) {
        free(a);
        return NULL;
    }
    return a;
}

void wp_access_free(wp_access *a) {
    if (!a) return;
    wp_users_free(a->users);
    free(a->tokens_path);
    free(a->token_path);
    free(a);
}

/* ---------- parsing hosts and origins ---------- */

static bool name_char(int ch) { return isalnum(ch) || ch == '-' || ch == '.' || ch == '_'; }

/* "name", "name:port", "[v6]" or "[v6]:port" → name (lower case, no brackets) and port (-1: none).
 * bare_v6: a bare "::1" is a name (a --listen host), not a malformed name:port. */
static bool host_split(const char *s, bool bare_v6, char *name, size_t cap, int *port) {
    const char *end, *rest;
    *port = -1;
    if (!s || !*s) return false;
    if (s[0] == '[') {
        end = strchr(s, ']');
        if (!end || end == s + 1) return false;
        for (const char *p = s + 1; p < end; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.') return false;
        s++;
        rest = end + 1;
    } else if (bare_v6 && strchr(s, ':') != strrchr(s, ':')) {
        end = s + strlen(s);
        for (const char *p = s; p < end; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.') return false;
        rest = end;
    } else {
        end = s + strcspn(s, ":");
        for (const char *p = s; p < end; p++)
            if (!name_char((unsigned char)*p)) return false;
        rest = end;
    }
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= cap) return false;
    for (size_t i = 0; i < n; i++) name[i] = (char)tolower((unsigned char)s[i]);
    name[n] = 0;
    if (!*rest) return true;
    if (*rest != ':') return false;
    rest++;
    size_t digits = strspn(rest, "0123456789");
    if (digits == 0 || digits > 5 || rest[digits]) return false;
    *port = atoi(rest);
    return *port <= 65535;
}

/* "http(s)://host[:port]" → the entry (serialized the way browsers send an Origin). */
static bool origin_parse(const char *s, bool lenient_slash, origin_entry *o) {
    memset(o, 0, sizeof *o);
    const char *rest;
    if (!strncasecmp(s, "http://", 7))
        rest = s + 7;
    else if (!strncasecmp(s, "https://", 8))
        rest = s + 8, o->https = true;
    else
        return false;
    char hostport[HOST_CAP + 16];
    size_t n = strlen(rest);
    if (lenient_slash && n && rest[n - 1] == '/') n--;
    if (n == 0 || n >= sizeof hostport) return false;
    memcpy(hostport, rest, n);
    hostport[n] = 0;
    int port;
    if (!host_split(hostport, false, o->name, sizeof o->name, &port)) return false;
    int dflt = o->https ? 443 : 80;
    o->port = port < 0 ? dflt : port;
    bool v6 = strchr(o->name, ':') != NULL;
    char port_text[16] = "";
    if (o->port != dflt) snprintf(port_text, sizeof port_text, ":%d", o->port);
    snprintf(o->text, sizeof o->text, "%s://%s%s%s%s", o->https ? "https" : "http", v6 ? "[" : "", o->name,
             v6 ? "]" : "", port_text);
    return true;
}

/* A client's header, cut and made printable, for an error message. */
static void show(const char *s, char *out, size_t cap) {
    size_t n = 0;
    for (; s && *s && n + 1 < cap && n < SHOW_MAX; s++) out[n++] = isprint((unsigned char)*s) ? *s : '?';
    out[n] = 0;
}

bool wp_access_is_loopback(const char *host) {
    char name[HOST_CAP];
    int port;
    if (!host || !*host) return true; /* http.c's default: 127.0.0.1 */
    if (!host_split(host, true, name, sizeof name, &port)) return false;
    if (!strcmp(name, "localhost")) return true;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, name, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &v6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

/* ---------- configuration ---------- */

int wp_access_allow_host(wp_access *a, const char *host, wp_err *err) {
    if (a->n_hosts >= LIST_MAX)
        return WP_FAIL(err, 400, "bad_flag", "--allow-host", "at most %d --allow-host", LIST_MAX);
    host_entry *e = &a->hosts[a->n_hosts];
    if (host && !strcmp(host, "*")) {
        snprintf(e->name, sizeof e->name, "*");
        e->port = -1;
    } else if (!host_split(host, true, e->name, sizeof e->name, &e->port)) {
        return WP_FAIL(err, 400, "bad_flag", "--allow-host",
                       "--allow-host needs a host name or address, with a port or not (\"warpd.lan\", "
                       "\"10.0.0.5:8080\", \"[fd00::5]\"), or *");
    }
    a->n_hosts++;
    return 0;
}

int wp_access_allow_origin(wp_access *a, const char *origin, wp_err *err) {
    if (a->n_origins >= LIST_MAX)
        return WP_FAIL(err, 400, "bad_flag", "--allow-origin", "at most %d --allow-origin", LIST_MAX);
    if (!origin || !origin_parse(origin, true, &a->origins[a->n_origins]))
        return WP_FAIL(err, 400, "bad_flag", "--allow-origin",
                       "--allow-origin needs an origin, scheme://host[:port] (\"https://app.example\", "
                       "\"http://localhost:3000\"); not *, null or a path");
    a->n_origins++;
    return 0;
}

int wp_access_set_token(wp_access *a, const char *token, wp_err *err) {
    size_t n = token ? strlen(token) : 0;
    if (n < WP_ACCESS_TOKEN_MIN || n > WP_ACCESS_TOKEN_MAX)
        return WP_FAIL(err, 400, "bad_token", "token",
                       "the token must be %d to %d characters (e.g. the output of: openssl rand -hex 32)",
                       WP_ACCESS_TOKEN_MIN, WP_ACCESS_TOKEN_MAX);
    for (size_t i = 0; i < n; i++)
        if (token[i] <= ' ' || token[i] > '~')
            return WP_FAIL(err, 400, "bad_token", "token",
                           "the token must be printable ASCII without spaces (character %zu is not)", i + 1);
    return wp_users_set_token(a->users, token, n, err);
}

/* Keeps path for wp_access_reload. */
static int remember(char **slot, const char *path, wp_err *err) {
    if (*slot && !strcmp(*slot, path)) return 0;
    free(*slot);
    if (!(*slot = strdup(path))) return WP_FAIL(err, 500, "internal", "", "out of memory");
    return 0;
}

int wp_access_tokens_file(wp_access *a, const char *path, wp_err *err) {
    if (!path || remember(&a->tokens_path, path, err)) return -1;
    return wp_users_load_file(a->users, path, err);
}

int wp_access_reload(wp_access *a, wp_err *err) {
    if (a->tokens_path) return wp_access_tokens_file(a, a->tokens_path, err);
    if (a->token_path) return wp_access_token_file(a, a->token_path, err);
    return 0;
}

wp_users *wp_access_users(const wp_access *a) { return a ? a->users : NULL; }

int wp_access_token_file(wp_access *a, const char *path, wp_err *err) {
    size_t n = 0;
    char *text = path ? wp_read_file(path, &n) : NULL;
    if (!text) return WP_FAIL(err, 400, "bad_token", "--token-file", "cannot read the token file %s", path ? path : "");
    if (remember(&a->token_path, path, err)) {
        free(text);
        return -1;
    }
    text[strcspn(text, "\r\n")] = 0; /* the first line */
    char *start = text;
    while (*start == ' ' || *start == '\t') start++;
    size_t len = strlen(start);
    while (len && (start[len - 1] == ' ' || start[len - 1] == '\t')) start[--len] = 0;
    int rc = wp_access_set_token(a, start, err);
    if (rc) snprintf(err->field, sizeof err->field, "--token-file");
    struct stat st;
    if (!rc && stat(path, &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
        snprintf(a->warning, sizeof a->warning, "the token file %.200s can be read by other users: chmod 600 it", path);
    memset(text, 0, n);
    free(text);
    return rc;
}

void wp_access_set_metrics_public(wp_access *a, bool on) { a->metrics_public = on; }
void wp_access_set_insecure(wp_access *a, bool on) { a->insecure = on; }
void wp_access_set_unix(wp_access *a, bool on) { a->unix_mode = on; }

void wp_access_set_listen(wp_access *a, const char *host) {
    int port;
    a->listen[0] = 0;
    if (host && !strncmp(host, "unix:", 5)) {
        a->unix_mode = true;
        return;
    }
    if (host && *host && !host_split(host, true, a->listen, sizeof a->listen, &port)) a->listen[0] = 0;
}

int wp_access_parse_flag(wp_access *a, const char *arg, const char *value, wp_err *err) {
    bool *toggle = !strcmp(arg, "--metrics-public") ? &a->metrics_public
                   : !strcmp(arg, "--insecure")     ? &a->insecure
                                                    : NULL;
    if (toggle) {
        *toggle = true;
        return 1;
    }
    int (*set)(wp_access *, const char *, wp_err *) = !strcmp(arg, "--allow-host")     ? wp_access_allow_host
                                                      : !strcmp(arg, "--allow-origin") ? wp_access_allow_origin
                                                      : !strcmp(arg, "--token-file")   ? wp_access_token_file
                                                      : !strcmp(arg, "--tokens")       ? wp_access_tokens_file
                                                                                       : NULL;
    if (!set) return 0;
    if (!value) return WP_FAIL(err, 400, "bad_flag", arg, "%s needs a value", arg);
    return set(a, value, err) ? -1 : 2;
}

int wp_access_finish(wp_access *a, const char *env_token, wp_err *err) {
    if (a->tokens_path && a->token_path)
        return WP_FAIL(err, 400, "bad_flag", "--tokens",
                       "give --tokens FILE (named users) or --token-file FILE (one admin), not both");
    if (!wp_users_any(a->users) && env_token && *env_token && wp_access_set_token(a, env_token, err)) {
        snprintf(err->field, sizeof err->field, "WARPD_TOKEN");
        return -1;
    }
    if (a->tokens_path && wp_users_warning(a->users)[0])
        snprintf(a->warning, sizeof a->warning, "%s", wp_users_warning(a->users));
    if (wp_users_any(a->users) || a->insecure || a->unix_mode || wp_access_is_loopback(a->listen)) return 0;
    return WP_FAIL(err, 400, "insecure_listen", "--listen",
                   "refusing to listen on %s without a token: anyone who can reach it could run jobs and read "
                   "every buffer. Give --token-file FILE (or set WARPD_TOKEN), or --insecure to serve it open",
                   a->listen);
}

bool wp_access_has_token(const wp_access *a) { return a && wp_users_any(a->users); }

const char *wp_access_warning(const wp_access *a) { return a ? a->warning : ""; }

/* ---------- the checks ---------- */

static bool host_allowed(const wp_access *a, const char *name, int port) {
    if (!strcmp(name, "localhost") || !strcmp(name, "127.0.0.1") || !strcmp(name, "::1")) return true;
    if (a->listen[0] && !strcmp(name, a->listen)) return true;
    for (int i = 0; i < a->n_hosts; i++) {
        const host_entry *e = &a->hosts[i];
        if (!strcmp(e->name, "*")) return true;
        if (!strcmp(e->name, name) && (e->port < 0 || e->port == port)) return true;
    }
    return false;
}

static bool media_is(const char *type, const char *want) {
    while (*type == ' ' || *type == '\t') type++;
    size_t n = strlen(want);
    return !strncasecmp(type, want, n) && (!type[n] || type[n] == ';' || type[n] == ' ' || type[n] == '\t');
}

static bool safe_method(const char *m) { return !strcmp(m, "GET") || !strcmp(m, "HEAD") || !strcmp(m, "OPTIONS"); }

/* /v1/health, /v1/ready, the playground's files (anything GET outside /v1/ and /metrics: the page must
 * load to ask for the token) and, when public, /metrics. */
static bool token_exempt(const wp_access *a, const char *method, const char *path) {
    if (!strcmp(path, "/v1/health") || !strcmp(path, "/v1/ready")) return true;
    bool metrics = !strcmp(path, "/metrics") || !strncmp(path, "/metrics/", 9);
    if (metrics) return a->metrics_public;
    bool api = !strncmp(path, "/v1/", 4) || !strcmp(path, "/v1");
    return !api && (!strcmp(method, "GET") || !strcmp(method, "HEAD"));
}

__attribute__((format(printf, 5, 6))) static bool deny(wp_access_verdict *v, int status, const char *code,
                                                       const char *field, const char *fmt, ...) {
    char msg[sizeof v->err.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->action = WP_ACCESS_DENY;
    WP_FAIL(&v->err, status, code, field, "%s", msg);
    return true;
}

static bool check_host(const wp_access *a, const wp_access_req *r, char *name, int *port, wp_access_verdict *v) {
    char shown[SHOW_MAX + 1];
    if (a->unix_mode) return false;
    if (!r->host) return deny(v, 403, "bad_host", "Host", "the request has no Host header; it must name this daemon");
    if (!host_split(r->host, false, name, HOST_CAP, port)) {
        show(r->host, shown, sizeof shown);
        return deny(v, 403, "bad_host", "Host", "bad Host %s: it must be host or host:port", shown);
    }
    if (host_allowed(a, name, *port)) return false;
    show(r->host, shown, sizeof shown);
    return deny(v, 403, "bad_host", "Host",
                "Host %s is not an address of this daemon (DNS rebinding protection); to serve it under that "
                "name, start warpd with --allow-host %s",
                shown, shown);
}

/* The --allow-origin entry origin is, or NULL. */
static const origin_entry *origin_listed(const wp_access *a, const origin_entry *o) {
    for (int i = 0; i < a->n_origins; i++)
        if (!strcmp(a->origins[i].text, o->text)) return &a->origins[i];
    return NULL;
}

/* Origin is http(s)://<the Host this request names> (same origin). */
static bool origin_own(const origin_entry *o, const char *host_name, int host_port) {
    int port = host_port < 0 ? (o->https ? 443 : 80) : host_port;
    return !strcmp(o->name, host_name) && o->port == port;
}

static bool check_origin(const wp_access *a, const wp_access_req *r, const char *host_name, int host_port,
                         wp_access_verdict *v) {
    origin_entry o;
    bool parsed = r->origin && origin_parse(r->origin, false, &o);
    const origin_entry *listed = parsed ? origin_listed(a, &o) : NULL;
    if (listed) v->cors_origin = listed->text;
    bool preflight = !strcmp(r->method, "OPTIONS") && r->origin && r->cors_method;
    if (preflight && listed) {
        v->action = WP_ACCESS_PREFLIGHT;
        return true;
    }
    if (!preflight && (!r->origin || safe_method(r->method) || listed)) return false;
    if (!preflight && parsed && (a->unix_mode || origin_own(&o, host_name, host_port))) return false;
    char shown[SHOW_MAX + 1];
    show(r->origin, shown, sizeof shown);
    return deny(v, 403, "bad_origin", "Origin",
                "Origin %s may not use this daemon (cross-site request protection); to let that page use it, "
                "start warpd with --allow-origin %s",
                shown, shown);
}

/* The token of an Authorization header, spaces trimmed, in *token and *n; NULL when there is one, else why not. */
static const char *bearer(const char *auth, const char **token, size_t *n) {
    if (!auth || !*auth)
        return "this daemon needs a token: send Authorization: Bearer <token> (yours in --tokens, or its "
               "--token-file or WARPD_TOKEN)";
    if (strncasecmp(auth, "Bearer", 6) || (auth[6] != ' ' && auth[6] != '\t'))
        return "the Authorization header must be Bearer <token>";
    const char *given = auth + 6;
    while (*given == ' ' || *given == '\t') given++;
    size_t len = strlen(given);
    while (len && (given[len - 1] == ' ' || given[len - 1] == '\t')) len--;
    *token = given;
    *n = len;
    return NULL;
}

/* What a route needs: GET and HEAD read; DELETE of the cache (or an entry) admin; every other change runs
 * jobs (prewarm, a POST /v1/compile with "specs", is checked by its handler: the role is in its body). */
static wp_role route_needs(const char *method, const char *path) {
    if (safe_method(method)) return WP_ROLE_READ;
    if (!strcmp(method, "DELETE") && (!strcmp(path, "/v1/cache") || !strncmp(path, "/v1/cache/", 10)))
        return WP_ROLE_ADMIN;
    return WP_ROLE_RUN;
}

/* Who the request is (v->user), then whether that user may: 401 without a known token, 403 "forbidden"
 * outside the role, 429 "quota_rate" past the user's rate. */
static bool check_token(const wp_access *a, const wp_access_req *r, wp_access_verdict *v) {
    const char *token = NULL;
    size_t n = 0;
    const char *why = bearer(r->authorization, &token, &n);
    if (!wp_users_any(a->users)) {
        v->user = wp_users_open_user(a->users);
    } else {
        v->user = why ? NULL : wp_users_find(a->users, token, n);
        if (!v->user && token_exempt(a, r->method, r->path)) {
            v->user = wp_users_anonymous(a->users);
            return false;
        }
        if (!v->user) {
            v->challenge = true;
            return deny(v, 401, "unauthorized", "Authorization", "%s",
                        why ? why : "the token is not one of this daemon's");
        }
    }
    if (token_exempt(a, r->method, r->path)) return false;
    wp_role need = route_needs(r->method, r->path);
    if (wp_user_role(v->user) < need)
        return deny(v, 403, "forbidden", "Authorization", "%s %s needs the %s role; %s has %s", r->method, r->path,
                    wp_role_name(need), wp_user_name(v->user), wp_role_name(wp_user_role(v->user)));
    unsigned retry = 0;
    if (!wp_user_rate_take(v->user, wp_now_ns(), &retry)) {
        v->retry_after_s = retry;
        return deny(v, 429, "quota_rate", "rate", "%s is past the rate quota of %llu requests a second",
                    wp_user_name(v->user), (unsigned long long)wp_user_quota(v->user)->rate);
    }
    return false;
}

static bool check_type(const wp_access_req *r, wp_access_verdict *v) {
    bool takes_body = !strcmp(r->method, "POST") || !strcmp(r->method, "PUT") || !strcmp(r->method, "PATCH");
    if (!takes_body || (!r->content_type && !r->has_body)) return false;
    if (r->content_type &&
        (media_is(r->content_type, "application/json") || media_is(r->content_type, "application/octet-stream")))
        return false;
    char shown[SHOW_MAX + 1];
    show(r->content_type, shown, sizeof shown);
    if (!r->content_type)
        return deny(v, 415, "unsupported_media_type", "Content-Type",
                    "a body needs a Content-Type: application/json, or application/octet-stream for raw data");
    return deny(v, 415, "unsupported_media_type", "Content-Type",
                "Content-Type %s is not accepted: send application/json, or application/octet-stream for raw data",
                shown);
}

void wp_access_check(const wp_access *a, const wp_access_req *r, wp_access_verdict *out) {
    if (!a) a = &defaults;
    memset(out, 0, sizeof *out);
    out->user = wp_users_open_user(a->users);
    out->vary_origin = a->n_origins > 0;
    char host_name[HOST_CAP] = "";
    int host_port = -1;
    if (check_host(a, r, host_name, &host_port, out)) return;
    if (check_origin(a, r, host_name, host_port, out)) return;
    if (check_token(a, r, out)) return;
    check_type(r, out);
}

void wp_access_headers(const wp_access_verdict *v, wp_access_add_header add, void *ctx) {
    add(ctx, "X-Content-Type-Options", "nosniff");
    add(ctx, "X-Frame-Options", "DENY");
    add(ctx, "Content-Security-Policy", CSP);
    add(ctx, "Referrer-Policy", "no-referrer");
    add(ctx, "Cross-Origin-Resource-Policy", "same-origin");
    if (!v) return;
    if (v->vary_origin) add(ctx, "Vary", "Origin");
    if (v->cors_origin) {
        add(ctx, "Access-Control-Allow-Origin", v->cors_origin);
        add(ctx, "Access-Control-Expose-Headers", CORS_EXPOSE);
    }
    if (v->action == WP_ACCESS_PREFLIGHT) {
        add(ctx, "Access-Control-Allow-Methods", CORS_METHODS);
        add(ctx, "Access-Control-Allow-Headers", CORS_HEADERS);
        add(ctx, "Access-Control-Max-Age", CORS_MAX_AGE);
    }
    if (v->challenge) add(ctx, "WWW-Authenticate", CHALLENGE);
}
