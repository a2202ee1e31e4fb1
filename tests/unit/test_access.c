/* test_access.c — the access checks (server/http/access.c) without HTTP: one table of requests per
 * configuration (every Host form, IPv6, ports, origins, preflights, content types, tokens right,
 * wrong, missing and in the wrong scheme, the exempt routes, --metrics-public, Unix mode), then the
 * flags, the token file, the refusal to listen beyond loopback without a token, and the headers. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/access.h"
#include "t.h"

#define TOKEN "s3cret-token-0123456789abcdef"

/* One request and what the checks must say: status 0 passes, 204 is a preflight answered. */
typedef struct {
    const char *name;
    const char *method, *path, *host, *origin, *type, *auth, *cors_method;
    bool body;
    int status;
    const char *code;
    const char *cors; /* the Access-Control-Allow-Origin the answer carries, or NULL */
} row;

#define LH "127.0.0.1:8080"
#define JSON "application/json"

static void run_rows(const char *config, const wp_access *a, const row *rows, size_t n) {
    char label[200];
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        snprintf(label, sizeof label, "%s: %s", config, r->name);
        T_CASE(label);
        wp_access_req q = {.method = r->method,
                           .path = r->path,
                           .host = r->host,
                           .origin = r->origin,
                           .content_type = r->type,
                           .authorization = r->auth,
                           .cors_method = r->cors_method,
                           .has_body = r->body};
        wp_access_verdict v;
        wp_access_check(a, &q, &v);
        int status = v.action == WP_ACCESS_PASS ? 0 : v.action == WP_ACCESS_PREFLIGHT ? 204 : v.err.status;
        CHECKF(status == r->status, "status %d, want %d (%s)", status, r->status, v.err.msg);
        if (r->code) CHECKF(v.err.code && !strcmp(v.err.code, r->code), "code %s, want %s", v.err.code, r->code);
        CHECKF(r->cors ? v.cors_origin && !strcmp(v.cors_origin, r->cors) : !v.cors_origin, "cors origin %s, want %s",
               v.cors_origin ? v.cors_origin : "(none)", r->cors ? r->cors : "(none)");
        CHECKF(v.challenge == (status == 401), "challenge %d on status %d", v.challenge, status);
    }
}

/* The defaults: loopback names only, the daemon's own origin, no token. */
static const row defaults_rows[] = {
    /* Host */
    {"127.0.0.1:port", "GET", "/v1/info", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"127.0.0.1 without a port", "GET", "/v1/info", "127.0.0.1", 0, 0, 0, 0, 0, 0, 0, 0},
    {"localhost", "GET", "/v1/info", "localhost", 0, 0, 0, 0, 0, 0, 0, 0},
    {"localhost:port", "GET", "/v1/info", "localhost:1", 0, 0, 0, 0, 0, 0, 0, 0},
    {"LOCALHOST (case)", "GET", "/v1/info", "LocalHost:8080", 0, 0, 0, 0, 0, 0, 0, 0},
    {"[::1]:port", "GET", "/v1/info", "[::1]:8080", 0, 0, 0, 0, 0, 0, 0, 0},
    {"[::1]", "GET", "/v1/info", "[::1]", 0, 0, 0, 0, 0, 0, 0, 0},
    {"a port of any daemon's", "GET", "/v1/info", "127.0.0.1:65535", 0, 0, 0, 0, 0, 0, 0, 0},
    {"evil name", "GET", "/v1/buffers", "evil.example", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"evil name:port (rebinding)", "GET", "/v1/buffers", "evil.example:8080", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"a name ending in 127.0.0.1", "GET", "/", "127.0.0.1.nip.io", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"a name starting with localhost", "GET", "/", "localhost.evil.example", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"another loopback spelling", "GET", "/", "[0:0:0:0:0:0:0:1]", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"IPv6 without brackets", "GET", "/", "::1", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"unclosed bracket", "GET", "/", "[::1:80", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"empty brackets", "GET", "/", "[]:80", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"no Host", "GET", "/v1/health", NULL, 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"empty Host", "GET", "/v1/health", "", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"empty port", "GET", "/", "localhost:", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"port past 65535", "GET", "/", "localhost:65536", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"port with letters", "GET", "/", "localhost:80a", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"userinfo", "GET", "/", "evil@localhost", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"a space", "GET", "/", "local host", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"health is checked too", "GET", "/v1/health", "evil.example", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    /* Origin */
    {"own origin", "POST", "/v1/reduce", LH, "http://127.0.0.1:8080", JSON, 0, 0, 1, 0, 0, 0},
    {"own origin over https", "POST", "/v1/reduce", LH, "https://127.0.0.1:8080", JSON, 0, 0, 1, 0, 0, 0},
    {"own origin, default port", "POST", "/v1/reduce", "localhost", "http://localhost", JSON, 0, 0, 1, 0, 0, 0},
    {"own origin, port 80 named", "POST", "/v1/reduce", "localhost", "http://localhost:80", JSON, 0, 0, 1, 0, 0, 0},
    {"own origin, IPv6", "POST", "/v1/reduce", "[::1]:8080", "http://[::1]:8080", JSON, 0, 0, 1, 0, 0, 0},
    {"own origin, upper case", "PUT", "/v1/buffers", "localhost:8080", "HTTP://LOCALHOST:8080", JSON, 0, 0, 1, 0, 0, 0},
    {"no Origin (curl, scripts)", "POST", "/v1/reduce", LH, NULL, JSON, 0, 0, 1, 0, 0, 0},
    {"another port is another origin", "POST", "/v1/reduce", LH, "http://127.0.0.1:9999", JSON, 0, 0, 1, 403,
     "bad_origin", 0},
    {"another loopback name is another origin", "POST", "/v1/reduce", LH, "http://localhost:8080", JSON, 0, 0, 1, 403,
     "bad_origin", 0},
    {"evil POST", "POST", "/v1/reduce", LH, "http://evil.example", JSON, 0, 0, 1, 403, "bad_origin", 0},
    {"evil PUT", "PUT", "/v1/buffers", LH, "http://evil.example", JSON, 0, 0, 1, 403, "bad_origin", 0},
    {"evil DELETE", "DELETE", "/v1/buffers/b-1", LH, "https://evil.example", 0, 0, 0, 0, 403, "bad_origin", 0},
    {"evil PATCH", "PATCH", "/v1/buffers", LH, "https://evil.example", JSON, 0, 0, 1, 403, "bad_origin", 0},
    {"null origin", "POST", "/v1/reduce", LH, "null", JSON, 0, 0, 1, 403, "bad_origin", 0},
    {"an origin with a path", "POST", "/v1/reduce", LH, "http://127.0.0.1:8080/", JSON, 0, 0, 1, 403, "bad_origin", 0},
    {"evil GET may read (no CORS)", "GET", "/v1/info", LH, "http://evil.example", 0, 0, 0, 0, 0, 0, 0},
    {"evil HEAD", "HEAD", "/v1/info", LH, "http://evil.example", 0, 0, 0, 0, 0, 0, 0},
    {"evil preflight", "OPTIONS", "/v1/reduce", LH, "http://evil.example", 0, 0, "POST", 0, 403, "bad_origin", 0},
    {"OPTIONS that is no preflight goes on to routing", "OPTIONS", "/v1/reduce", LH, "http://evil.example", 0, 0, 0, 0,
     0, 0, 0},
    /* Content-Type */
    {"json", "POST", "/v1/warp", LH, 0, JSON, 0, 0, 1, 0, 0, 0},
    {"json; charset", "POST", "/v1/warp", LH, 0, "application/json; charset=utf-8", 0, 0, 1, 0, 0, 0},
    {"JSON in capitals", "POST", "/v1/warp", LH, 0, "Application/JSON", 0, 0, 1, 0, 0, 0},
    {"octet-stream", "POST", "/v1/reduce", LH, 0, "application/octet-stream", 0, 0, 1, 0, 0, 0},
    {"octet-stream;param", "PUT", "/v1/buffers", LH, 0, "application/octet-stream;x=1", 0, 0, 1, 0, 0, 0},
    {"text/plain (a simple cross-site request)", "POST", "/v1/reduce", LH, 0, "text/plain", 0, 0, 1, 415,
     "unsupported_media_type", 0},
    {"a form", "POST", "/v1/reduce", LH, 0, "application/x-www-form-urlencoded", 0, 0, 1, 415, "unsupported_media_type",
     0},
    {"multipart", "PUT", "/v1/buffers", LH, 0, "multipart/form-data; boundary=x", 0, 0, 1, 415,
     "unsupported_media_type", 0},
    {"a longer name", "POST", "/v1/warp", LH, 0, "application/jsonx", 0, 0, 1, 415, "unsupported_media_type", 0},
    {"json-seq", "POST", "/v1/warp", LH, 0, "application/json-seq", 0, 0, 1, 415, "unsupported_media_type", 0},
    {"no type, a body", "POST", "/v1/warp", LH, 0, NULL, 0, 0, 1, 415, "unsupported_media_type", 0},
    {"no type, no body", "POST", "/v1/warp", LH, 0, NULL, 0, 0, 0, 0, 0, 0},
    {"a wrong type, no body", "POST", "/v1/warp", LH, 0, "text/plain", 0, 0, 0, 415, "unsupported_media_type", 0},
    {"DELETE takes any", "DELETE", "/v1/buffers/b-1", LH, 0, "text/plain", 0, 0, 1, 0, 0, 0},
    {"GET takes any", "GET", "/v1/info", LH, 0, "text/plain", 0, 0, 0, 0, 0, 0},
    /* no token configured: Authorization is not looked at */
    {"no token: any Authorization", "GET", "/v1/info", LH, 0, 0, "Basic eDp5", 0, 0, 0, 0, 0},
    {"no token: metrics", "GET", "/metrics", LH, 0, 0, 0, 0, 0, 0, 0, 0},
};

/* listen 10.1.2.3, a token, two extra hosts, two origins. */
static const row token_rows[] = {
    {"listen host", "GET", "/v1/health", "10.1.2.3:8080", 0, 0, 0, 0, 0, 0, 0, 0},
    {"listen host without a port", "GET", "/v1/health", "10.1.2.3", 0, 0, 0, 0, 0, 0, 0, 0},
    {"--allow-host name", "GET", "/v1/health", "warpd.lan:8080", 0, 0, 0, 0, 0, 0, 0, 0},
    {"--allow-host name, capitals", "GET", "/v1/health", "WARPD.LAN", 0, 0, 0, 0, 0, 0, 0, 0},
    {"--allow-host name:port", "GET", "/v1/health", "gpu.example:8443", 0, 0, 0, 0, 0, 0, 0, 0},
    {"--allow-host name:port, another port", "GET", "/v1/health", "gpu.example:8080", 0, 0, 0, 0, 0, 403, "bad_host",
     0},
    {"--allow-host [v6]", "GET", "/v1/health", "[fd00::5]:80", 0, 0, 0, 0, 0, 0, 0, 0},
    {"loopback still", "GET", "/v1/health", "localhost:8080", 0, 0, 0, 0, 0, 0, 0, 0},
    {"evil host", "GET", "/v1/health", "evil.example", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    /* tokens */
    {"no token", "GET", "/v1/info", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"right token", "GET", "/v1/info", LH, 0, 0, "Bearer " TOKEN, 0, 0, 0, 0, 0},
    {"bearer in lower case", "GET", "/v1/info", LH, 0, 0, "bearer " TOKEN, 0, 0, 0, 0, 0},
    {"spaces around", "GET", "/v1/info", LH, 0, 0, "Bearer   " TOKEN "  ", 0, 0, 0, 0, 0},
    {"a character more", "GET", "/v1/info", LH, 0, 0, "Bearer " TOKEN "x", 0, 0, 401, "unauthorized", 0},
    {"a character less", "GET", "/v1/info", LH, 0, 0, "Bearer s3cret-token-0123456789abcde", 0, 0, 401, "unauthorized",
     0},
    {"the last character wrong", "GET", "/v1/info", LH, 0, 0, "Bearer s3cret-token-0123456789abcdeF", 0, 0, 401,
     "unauthorized", 0},
    {"the first character wrong", "GET", "/v1/info", LH, 0, 0, "Bearer S3cret-token-0123456789abcdef", 0, 0, 401,
     "unauthorized", 0},
    {"empty token", "GET", "/v1/info", LH, 0, 0, "Bearer ", 0, 0, 401, "unauthorized", 0},
    {"scheme alone", "GET", "/v1/info", LH, 0, 0, "Bearer", 0, 0, 401, "unauthorized", 0},
    {"empty header", "GET", "/v1/info", LH, 0, 0, "", 0, 0, 401, "unauthorized", 0},
    {"Basic scheme", "GET", "/v1/info", LH, 0, 0, "Basic dXNlcjpwYXNz", 0, 0, 401, "unauthorized", 0},
    {"the token without a scheme", "GET", "/v1/info", LH, 0, 0, TOKEN, 0, 0, 401, "unauthorized", 0},
    {"Bearerx", "GET", "/v1/info", LH, 0, 0, "Bearerx " TOKEN, 0, 0, 401, "unauthorized", 0},
    {"POST needs it", "POST", "/v1/reduce", LH, 0, JSON, 0, 0, 1, 401, "unauthorized", 0},
    {"POST with it", "POST", "/v1/reduce", LH, 0, JSON, "Bearer " TOKEN, 0, 1, 0, 0, 0},
    {"DELETE needs it", "DELETE", "/v1/buffers/b-1", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"health is open", "GET", "/v1/health", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"ready is open", "GET", "/v1/ready", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"health with a wrong token is open", "GET", "/v1/health", LH, 0, 0, "Bearer nope", 0, 0, 0, 0, 0},
    {"metrics is not", "GET", "/metrics", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"metrics/ is not", "GET", "/metrics/x", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"the playground page is open", "GET", "/", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"its files are open", "GET", "/app.js", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"HEAD of its files", "HEAD", "/index.html", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"POST / is not", "POST", "/", LH, 0, JSON, 0, 0, 1, 401, "unauthorized", 0},
    {"openapi is not", "GET", "/v1/openapi.json", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"/v1 is not", "GET", "/v1", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"health/ is not", "GET", "/v1/health/", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"healthz is not", "GET", "/v1/healthz", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    /* origins */
    {"allowed origin POST", "POST", "/v1/reduce", LH, "https://app.example", JSON, "Bearer " TOKEN, 0, 1, 0, 0,
     "https://app.example"},
    {"allowed origin GET", "GET", "/v1/info", LH, "https://app.example", 0, "Bearer " TOKEN, 0, 0, 0, 0,
     "https://app.example"},
    {"allowed origin, default port named", "POST", "/v1/reduce", LH, "https://app.example:443", JSON, "Bearer " TOKEN,
     0, 1, 0, 0, "https://app.example"},
    {"allowed origin, no token: 401 with CORS (the page can read why)", "GET", "/v1/info", LH, "https://app.example", 0,
     0, 0, 0, 401, "unauthorized", "https://app.example"},
    {"allowed origin preflight (no token needed)", "OPTIONS", "/v1/reduce", LH, "https://app.example", 0, 0, "POST", 0,
     204, 0, "https://app.example"},
    {"second allowed origin preflight", "OPTIONS", "/v1/buffers", LH, "http://localhost:3000", 0, 0, "PUT", 0, 204, 0,
     "http://localhost:3000"},
    {"allowed origin, another port", "OPTIONS", "/v1/buffers", LH, "http://localhost:3001", 0, 0, "PUT", 0, 403,
     "bad_origin", 0},
    {"allowed origin, another scheme", "POST", "/v1/reduce", LH, "http://app.example", JSON, "Bearer " TOKEN, 0, 1, 403,
     "bad_origin", 0},
    {"others get no CORS", "GET", "/v1/info", LH, "https://evil.example", 0, "Bearer " TOKEN, 0, 0, 0, 0, 0},
    {"own origin gets no CORS", "POST", "/v1/reduce", LH, "http://" LH, JSON, "Bearer " TOKEN, 0, 1, 0, 0, 0},
    /* the order: Host, Origin, token, type */
    {"bad host before the token", "GET", "/v1/info", "evil.example", 0, 0, 0, 0, 0, 403, "bad_host", 0},
    {"bad origin before the token", "POST", "/v1/reduce", LH, "http://evil.example", JSON, 0, 0, 1, 403, "bad_origin",
     0},
    {"token before the type", "POST", "/v1/reduce", LH, 0, "text/plain", 0, 0, 1, 401, "unauthorized", 0},
    {"type after the token", "POST", "/v1/reduce", LH, 0, "text/plain", "Bearer " TOKEN, 0, 1, 415,
     "unsupported_media_type", 0},
};

static const row metrics_public_rows[] = {
    {"metrics is open", "GET", "/metrics", LH, 0, 0, 0, 0, 0, 0, 0, 0},
    {"info is not", "GET", "/v1/info", LH, 0, 0, 0, 0, 0, 401, "unauthorized", 0},
};

static const row unix_rows[] = {
    {"no Host", "GET", "/v1/health", NULL, 0, 0, 0, 0, 0, 0, 0, 0},
    {"any Host", "GET", "/v1/health", "whatever.example", 0, 0, 0, 0, 0, 0, 0, 0},
    {"the token still", "GET", "/v1/info", "localhost", 0, 0, 0, 0, 0, 401, "unauthorized", 0},
    {"with the token", "POST", "/v1/reduce", "localhost", "http://localhost", JSON, "Bearer " TOKEN, 0, 1, 0, 0, 0},
    {"the type still", "POST", "/v1/reduce", "", 0, "text/plain", "Bearer " TOKEN, 0, 1, 415, "unsupported_media_type",
     0},
};

static const row any_host_rows[] = {
    {"any Host with --allow-host *", "GET", "/v1/health", "proxy.example:443", 0, 0, 0, 0, 0, 0, 0, 0},
    {"still a well-formed one", "GET", "/v1/health", "a b", 0, 0, 0, 0, 0, 403, "bad_host", 0},
};

/* ---------- headers ---------- */

typedef struct {
    char text[2048];
} header_list;

static void collect(void *ctx, const char *name, const char *value) {
    header_list *l = ctx;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s: %s\n", name, value);
}

static bool has_line(const header_list *l, const char *line) {
    char want[512];
    snprintf(want, sizeof want, "%s\n", line);
    return strstr(l->text, want) != NULL;
}

static void test_headers(void) {
    T_CASE("headers: every answer");
    header_list l = {""};
    wp_access_verdict v = {0};
    wp_access_headers(&v, collect, &l);
    CHECK(has_line(&l, "X-Content-Type-Options: nosniff"));
    CHECK(has_line(&l, "X-Frame-Options: DENY"));
    CHECK(strstr(l.text, "Content-Security-Policy: default-src 'self';") != NULL);
    CHECK(strstr(l.text, "frame-ancestors 'none'") != NULL);
    CHECK(strstr(l.text, "unsafe-inline") == NULL && strstr(l.text, "unsafe-eval") == NULL);
    CHECK(strstr(l.text, "Access-Control") == NULL && strstr(l.text, "WWW-Authenticate") == NULL);
    CHECK(strstr(l.text, "Vary") == NULL);

    T_CASE("headers: NULL verdict still gets the security headers");
    header_list n = {""};
    wp_access_headers(NULL, collect, &n);
    CHECK(has_line(&n, "X-Content-Type-Options: nosniff"));

    T_CASE("headers: a preflight of an allowed origin");
    header_list p = {""};
    v = (wp_access_verdict){.action = WP_ACCESS_PREFLIGHT, .cors_origin = "https://app.example", .vary_origin = true};
    wp_access_headers(&v, collect, &p);
    CHECK(has_line(&p, "Access-Control-Allow-Origin: https://app.example"));
    CHECK(has_line(&p, "Vary: Origin"));
    CHECK(strstr(p.text, "Access-Control-Allow-Methods: GET, HEAD, POST, PUT, DELETE\n") != NULL);
    CHECK(strstr(p.text, "Access-Control-Allow-Headers: ") && strstr(p.text, "Authorization") &&
          strstr(p.text, "Content-Type"));
    CHECK(strstr(p.text, "Access-Control-Max-Age: ") != NULL);
    CHECK(strstr(p.text, "Access-Control-Allow-Credentials") == NULL);

    T_CASE("headers: an answer to an allowed origin (no preflight headers)");
    header_list c = {""};
    v = (wp_access_verdict){.cors_origin = "https://app.example", .vary_origin = true};
    wp_access_headers(&v, collect, &c);
    CHECK(has_line(&c, "Access-Control-Allow-Origin: https://app.example"));
    CHECK(strstr(c.text, "Access-Control-Expose-Headers: ") && strstr(c.text, "Location"));
    CHECK(strstr(c.text, "Access-Control-Allow-Methods") == NULL);

    T_CASE("headers: 401 challenges");
    header_list u = {""};
    v = (wp_access_verdict){.action = WP_ACCESS_DENY, .challenge = true};
    wp_access_headers(&v, collect, &u);
    CHECK(strstr(u.text, "WWW-Authenticate: Bearer") != NULL);
}

/* ---------- configuration ---------- */

static void test_flags(void) {
    wp_access *a = wp_access_new();
    wp_err err;
    T_CASE("flags: what each takes");
    CHECK(wp_access_parse_flag(a, "--listen", "x", &err) == 0);
    CHECK(wp_access_parse_flag(a, "--insecure", "--backend", &err) == 1);
    CHECK(wp_access_parse_flag(a, "--metrics-public", NULL, &err) == 1);
    CHECK(wp_access_parse_flag(a, "--allow-host", "warpd.lan", &err) == 2);
    CHECK(wp_access_parse_flag(a, "--allow-origin", "https://app.example/", &err) == 2); /* one '/' is fine */
    CHECK(wp_access_parse_flag(a, "--allow-host", NULL, &err) == -1 && strstr(err.msg, "needs a value"));
    CHECK(wp_access_parse_flag(a, "--token-file", NULL, &err) == -1);

    T_CASE("flags: bad hosts");
    const char *bad_hosts[] = {"", "a b", "[::1", "host:abc", "host:70000", "host:", "x/y", "[::1]x"};
    for (size_t i = 0; i < WP_ARRAY_LEN(bad_hosts); i++)
        CHECKF(wp_access_allow_host(a, bad_hosts[i], &err) == -1 && !strcmp(err.code, "bad_flag"), "%s", bad_hosts[i]);
    CHECK(wp_access_allow_host(a, "fd00::7", &err) == 0); /* a bare IPv6 address is a name */

    T_CASE("flags: bad origins");
    const char *bad_origins[] = {"*",
                                 "null",
                                 "app.example",
                                 "ftp://app.example",
                                 "https://app.example/path",
                                 "https://",
                                 "https://a b",
                                 "http://app.example:99999"};
    for (size_t i = 0; i < WP_ARRAY_LEN(bad_origins); i++)
        CHECKF(wp_access_allow_origin(a, bad_origins[i], &err) == -1 && !strcmp(err.code, "bad_flag"), "%s",
               bad_origins[i]);

    T_CASE("flags: the allowed origin is serialized as browsers send it");
    CHECK(wp_access_allow_origin(a, "HTTPS://App.Example:443", &err) == 0);
    wp_access_set_listen(a, "127.0.0.1");
    wp_access_req q = {.method = "POST",
                       .path = "/v1/warp",
                       .host = "localhost",
                       .origin = "https://app.example",
                       .content_type = JSON,
                       .has_body = true};
    wp_access_verdict v;
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS && v.cors_origin && !strcmp(v.cors_origin, "https://app.example"));

    T_CASE("flags: tokens");
    CHECK(wp_access_set_token(a, "short", &err) == -1 && !strcmp(err.code, "bad_token"));
    CHECK(wp_access_set_token(a, "has a space in it ok", &err) == -1);
    CHECK(wp_access_set_token(a, "tab\there-0123456789", &err) == -1);
    CHECK(!wp_access_has_token(a));
    CHECK(wp_access_set_token(a, "0123456789abcdef", &err) == 0 && wp_access_has_token(a));
    wp_access_free(a);
}

static void test_token_file(void) {
    char path[] = "/tmp/warpd-token-XXXXXX";
    int fd = mkstemp(path);
    T_CASE("token file: the first line, trimmed");
    CHECK(fd >= 0);
    if (fd < 0) return;
    const char *text = "  " TOKEN " \r\nsecond line\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    wp_access *a = wp_access_new();
    wp_err err;
    CHECK(wp_access_parse_flag(a, "--token-file", path, &err) == 2);
    wp_access_req q = {.method = "GET", .path = "/v1/info", .host = LH, .authorization = "Bearer " TOKEN};
    wp_access_verdict v;
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS);
    q.authorization = "Bearer second line";
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_DENY && v.err.status == 401);

    T_CASE("token file: a warning when other users can read it, none when they cannot");
    chmod(path, 0644);
    CHECK(wp_access_token_file(a, path, &err) == 0 && strstr(wp_access_warning(a), "chmod 600"));
    wp_access *private = wp_access_new();
    chmod(path, 0600);
    CHECK(wp_access_token_file(private, path, &err) == 0 && !*wp_access_warning(private));
    wp_access_free(private);

    T_CASE("token file: empty, or missing");
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    CHECK(wp_access_token_file(a, path, &err) == -1 && !strcmp(err.field, "--token-file"));
    unlink(path);
    CHECK(wp_access_token_file(a, path, &err) == -1 && strstr(err.msg, "cannot read"));
    wp_access_free(a);
}

static void test_finish(void) {
    wp_err err;
    T_CASE("finish: loopback listens need no token");
    const char *loopback[] = {"127.0.0.1", "127.0.0.2",        "::1", "[::1]",
                              "localhost", "::ffff:127.0.0.1", "",    "unix:/tmp/w.sock"};
    for (size_t i = 0; i < WP_ARRAY_LEN(loopback); i++) {
        wp_access *a = wp_access_new();
        wp_access_set_listen(a, loopback[i]);
        CHECKF(wp_access_finish(a, NULL, &err) == 0, "%s: %s", loopback[i], err.msg);
        wp_access_free(a);
    }
    T_CASE("finish: other listens are refused without a token");
    const char *open[] = {"0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "example.com", "[fd00::1]", "128.0.0.1"};
    for (size_t i = 0; i < WP_ARRAY_LEN(open); i++) {
        wp_access *a = wp_access_new();
        wp_access_set_listen(a, open[i]);
        CHECKF(wp_access_finish(a, NULL, &err) == -1 && !strcmp(err.code, "insecure_listen") &&
                   strstr(err.msg, "--token-file") && strstr(err.msg, "--insecure") && strstr(err.msg, "WARPD_TOKEN"),
               "%s", open[i]);
        CHECKF(wp_access_finish(a, "", &err) == -1, "%s with an empty WARPD_TOKEN", open[i]);
        wp_access_free(a);
    }
    T_CASE("finish: ... unless --insecure, a token file or WARPD_TOKEN");
    wp_access *a = wp_access_new();
    wp_access_set_listen(a, "0.0.0.0");
    wp_access_set_insecure(a, true);
    CHECK(wp_access_finish(a, NULL, &err) == 0 && !wp_access_has_token(a));
    wp_access_free(a);
    a = wp_access_new();
    wp_access_set_listen(a, "0.0.0.0");
    CHECK(wp_access_finish(a, TOKEN, &err) == 0 && wp_access_has_token(a));
    wp_access_req q = {.method = "GET", .path = "/v1/info", .host = "0.0.0.0", .authorization = "Bearer " TOKEN};
    wp_access_verdict v;
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS);
    wp_access_free(a);
    T_CASE("finish: a token file wins over WARPD_TOKEN; a bad WARPD_TOKEN is refused");
    a = wp_access_new();
    CHECK(wp_access_set_token(a, TOKEN, &err) == 0);
    CHECK(wp_access_finish(a, "another-token-0123456789", &err) == 0);
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_DENY); /* Host 0.0.0.0 is not this one's listen host */
    q.host = LH;
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS);
    wp_access_free(a);
    a = wp_access_new();
    CHECK(wp_access_finish(a, "short", &err) == -1 && !strcmp(err.field, "WARPD_TOKEN"));
    wp_access_free(a);
}

int main(void) {
    wp_err err;
    run_rows("defaults", NULL, defaults_rows, WP_ARRAY_LEN(defaults_rows));

    wp_access *a = wp_access_new();
    wp_access_set_listen(a, "10.1.2.3");
    CHECK(wp_access_allow_host(a, "warpd.lan", &err) == 0);
    CHECK(wp_access_allow_host(a, "gpu.example:8443", &err) == 0);
    CHECK(wp_access_allow_host(a, "[fd00::5]", &err) == 0);
    CHECK(wp_access_allow_origin(a, "https://app.example", &err) == 0);
    CHECK(wp_access_allow_origin(a, "http://localhost:3000", &err) == 0);
    CHECK(wp_access_set_token(a, TOKEN, &err) == 0);
    CHECK(wp_access_finish(a, NULL, &err) == 0);
    run_rows("token", a, token_rows, WP_ARRAY_LEN(token_rows));
    wp_access_set_metrics_public(a, true);
    run_rows("metrics public", a, metrics_public_rows, WP_ARRAY_LEN(metrics_public_rows));
    wp_access_free(a);

    a = wp_access_new();
    wp_access_set_listen(a, "unix:/run/warpd.sock");
    CHECK(wp_access_set_token(a, TOKEN, &err) == 0);
    run_rows("unix", a, unix_rows, WP_ARRAY_LEN(unix_rows));
    wp_access_free(a);
    a = wp_access_new();
    wp_access_set_unix(a, true);
    wp_access_req q = {.method = "GET", .path = "/v1/info", .host = NULL};
    wp_access_verdict v;
    wp_access_check(a, &q, &v);
    T_CASE("unix: set directly");
    CHECK(v.action == WP_ACCESS_PASS);
    wp_access_free(a);

    a = wp_access_new();
    CHECK(wp_access_allow_host(a, "*", &err) == 0);
    run_rows("any host", a, any_host_rows, WP_ARRAY_LEN(any_host_rows));
    wp_access_free(a);

    T_CASE("an IPv6 listen address is a Host in brackets, any case");
    a = wp_access_new();
    wp_access_set_listen(a, "FD00::1");
    CHECK(wp_access_finish(a, TOKEN, &err) == 0);
    q = (wp_access_req){.method = "GET", .path = "/v1/health", .host = "[fd00::1]:8080"};
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS);
    q.host = "[fd00::2]:8080";
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_DENY && !strcmp(v.err.code, "bad_host"));
    wp_access_set_listen(a, "[fd00::2]");
    wp_access_check(a, &q, &v);
    CHECK(v.action == WP_ACCESS_PASS);
    wp_access_free(a);

    T_CASE("verdicts say Vary only where an origin is allowed");
    q = (wp_access_req){.method = "GET", .path = "/v1/info", .host = LH};
    wp_access_check(NULL, &q, &v);
    CHECK(!v.vary_origin);

    T_CASE("loopback addresses");
    CHECK(wp_access_is_loopback("127.255.0.1") && wp_access_is_loopback("[::1]") && wp_access_is_loopback("LOCALHOST"));
    CHECK(!wp_access_is_loopback("0.0.0.0") && !wp_access_is_loopback("::") &&
          !wp_access_is_loopback("::ffff:10.0.0.1"));

    test_headers();
    test_flags();
    test_token_file();
    test_finish();
    return t_done("access");
}
