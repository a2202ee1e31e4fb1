/* api_runner.c — runs API test cases (JSON files, one array of cases each) against a running daemon.
 *
 *   api_runner [-v] BASE_URL cases.json...        e.g. api_runner http://127.0.0.1:8080 tests/api/cases/reduce.json
 *   api_runner [-v] [--cacert FILE] [--unix-socket PATH] BASE_URL cases.json...
 *       an https:// BASE_URL, --cacert or --unix-socket send each request with the curl program
 *       (tests/api/api_curl.h): e.g. --cacert ca.pem https://127.0.0.1:8443, --unix-socket w.sock http://localhost
 *
 * A case:
 *   {"name": "reduce f32 sum", "method": "POST", "path": "/v1/reduce?type=f32",   (method defaults to GET)
 *    "headers": {"Content-Type": "application/octet-stream"},  ("Content-Type": null sends a body without one)
 *    "body": <any JSON value, sent as JSON text, Content-Type application/json unless headers say otherwise>
 *      | "body_text": "raw text" | "body_repeat": {"text": "x", "count": 1000000},
 *    "chunked": true,                          (send the body with Transfer-Encoding: chunked)
 *    "timeout_ms": 60000,
 *    "expect": {"status": 200,
 *               "json": <subset>,              (see below)
 *               "headers": {"Retry-After": "1", "Location": "*", "Cache-Control": null},   (null: absent)
 *               "body_text": "exact body", "body_contains": "text" | ["text", ...]},
 *    "save": {"job": "$.id"},                  (later cases may write {{job}} in path, headers and bodies;
 *                                               {{authority}} is there from the start: the base URL's host:port)
 *    "retry": {"times": 50, "delay_ms": 100}}  (resend until expect holds, e.g. polling a job)
 *
 * Subset matching: every key of an expected object must exist in the response and match, recursively;
 * arrays match elementwise with the same length ([1, 2, "..."] only checks the first two); "*" matches any
 * value; an object of $-keys is an operator: {"$type": "number|string|array|object|bool|null"},
 * {"$lt": x}, {"$gt": x}, {"$le": x}, {"$ge": x}, {"$len": n}, {"$contains": "text"}, {"$absent": true}.
 * Each failure prints the case, the JSON path of the first mismatch, expected and got; the last line is
 * "api: N passed, N failed". Exit status 0 when nothing failed. */
#include <stdio.h>
#include <string.h>

#include "tests/api/api_lib.h"

int main(int argc, char **argv) {
    int arg = 1;
    bool verbose = false;
    if (arg < argc && !strcmp(argv[arg], "-v")) verbose = true, arg++;
    api_curl curl = {0};
    for (; arg + 1 < argc && (!strcmp(argv[arg], "--cacert") || !strcmp(argv[arg], "--unix-socket")); arg += 2)
        *(!strcmp(argv[arg], "--cacert") ? &curl.cacert : &curl.unix_socket) = argv[arg + 1];
    if (argc - arg < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: %s [-v] [--cacert FILE] [--unix-socket PATH] BASE_URL cases.json...\n", argv[0]);
        return 2;
    }
    /* https:// goes through curl; the host, port and prefix are read as for http:// */
    char plain[1024], origin[1024];
    bool https = !strncmp(argv[arg], "https://", 8);
    snprintf(plain, sizeof plain, "http://%s", argv[arg] + (https ? 8 : strncmp(argv[arg], "http://", 7) ? 0 : 7));
    const char *path = strchr(plain + 7, '/');
    snprintf(origin, sizeof origin, "%s://%.*s", https ? "https" : "http", (int)(path ? path - plain - 7 : 1000),
             plain + 7);
    curl.origin = origin;
    api_ctx ctx;
    if (api_ctx_init(&ctx, plain) != 0) {
        fprintf(stderr, "api_runner: bad base URL %s (want http://host:port[/prefix])\n", argv[arg]);
        api_ctx_free(&ctx);
        return 2;
    }
    ctx.verbose = verbose;
    if (https || curl.cacert || curl.unix_socket) ctx.curl = &curl;
    ctx.out = stdout; /* failures and the closing line in order */
    for (arg++; arg < argc; arg++) api_run_file(&ctx, argv[arg]);
    printf("api: %d passed, %d failed\n", ctx.passed, ctx.failed);
    api_ctx_free(&ctx);
    return ctx.failed ? 1 : 0;
}
