/* api_curl.h — the API runner's other transport: each request is sent by the curl program, so that the
 * case table also runs over HTTPS (--cacert) and over a Unix socket (--unix-socket), which
 * tests/http_client.h does not speak. curl prints the raw response (-i --raw) into a socket pair that
 * hc_recv parses as if the daemon had sent it. Header-only: every function is static. */
#ifndef WP_API_CURL_H
#define WP_API_CURL_H

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/http_client.h"

#define API_CURL_ARGS_MAX 64

typedef struct {
    const char *origin;      /* "https://127.0.0.1:PORT" or "http://localhost" (with unix_socket) */
    const char *cacert;      /* --cacert FILE, or NULL */
    const char *unix_socket; /* --unix-socket PATH, or NULL */
} api_curl;

/* A temporary file holding data; its name in path. Returns 0 or -1. */
static inline int api_curl_tmpfile(char *path, size_t cap, const void *data, size_t n) {
    snprintf(path, cap, "%s/api_curl_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) break;
        p += w;
        n -= (size_t)w;
    }
    close(fd);
    return n ? -1 : 0;
}

/* Starts curl with stdout on fd out and stderr into err_file; its pid, or -1. posix_spawn, not fork: the
 * sanitized runner's address space is large, and copying its page tables for every request would cost
 * more than the request. */
static inline pid_t api_curl_spawn(const char *const *argv, int out, const char *err_file) {
    extern char **environ;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa)) return -1;
    pid_t pid = -1;
    if (!posix_spawn_file_actions_adddup2(&fa, out, 1) &&
        !posix_spawn_file_actions_addopen(&fa, 2, err_file, O_WRONLY | O_TRUNC, 0) &&
        posix_spawnp(&pid, "curl", &fa, NULL, (char *const *)argv, environ))
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* One request through curl; the response in r as hc_recv reads it. Returns 0, or -1 with why. */
static inline int api_curl_send(const api_curl *cu, const char *method, const char *path, char *const *lines,
                                const void *payload, size_t payload_len, unsigned flags, int timeout_ms, hc_resp *r,
                                char *why, size_t cap) {
    bool chunked = flags & HC_CHUNKED;
    char body_file[256] = "", err_file[256] = "", url[4096], max_time[32], at_body[300];
    bool head = !strcmp(method, "HEAD");
    bool wants_body = payload_len || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH");
    if ((wants_body && api_curl_tmpfile(body_file, sizeof body_file, payload, payload_len)) ||
        api_curl_tmpfile(err_file, sizeof err_file, "", 0)) {
        snprintf(why, cap, "cannot write a temporary file for curl");
        if (body_file[0]) unlink(body_file);
        return -1;
    }
    snprintf(url, sizeof url, "%s%s", cu->origin, path);
    snprintf(max_time, sizeof max_time, "%.3f", (timeout_ms > 0 ? timeout_ms : HC_TIMEOUT_MS) / 1000.0);
    snprintf(at_body, sizeof at_body, "@%s", body_file);
    const char *argv[API_CURL_ARGS_MAX + 2 * 64];
    int a = 0;
    argv[a++] = "curl";
    argv[a++] = "-sS";
    argv[a++] = "--raw";
    argv[a++] = "--http1.1";
    argv[a++] = "--globoff";
    argv[a++] = "--path-as-is";
    argv[a++] = head ? "-I" : "-i";
    argv[a++] = "--max-time";
    argv[a++] = max_time;
    if (!head) argv[a++] = "-X", argv[a++] = method;
    if (cu->cacert) argv[a++] = "--cacert", argv[a++] = cu->cacert;
    if (cu->unix_socket) argv[a++] = "--unix-socket", argv[a++] = cu->unix_socket;
    /* What tests/http_client.h sends and no more: no Expect, Accept or User-Agent of curl's own, and no
     * form Content-Type for a body the case gave none. */
    argv[a++] = "-H", argv[a++] = "Expect:";
    argv[a++] = "-H", argv[a++] = "Accept:";
    argv[a++] = "-H", argv[a++] = "User-Agent:";
    /* As hc_send: a body gets application/json unless the case names a type or asks for none. */
    if (wants_body && !hc_has_header((const char *const *)lines, "Content-Type"))
        argv[a++] = "-H", argv[a++] = (flags & HC_NO_TYPE) ? "Content-Type:" : "Content-Type: application/json";
    if (chunked) argv[a++] = "-H", argv[a++] = "Transfer-Encoding: chunked";
    for (int i = 0; lines && lines[i] && a < API_CURL_ARGS_MAX + 2 * 60; i++) argv[a++] = "-H", argv[a++] = lines[i];
    if (wants_body) argv[a++] = "--data-binary", argv[a++] = at_body;
    argv[a++] = url;
    argv[a] = NULL;

    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp)) {
        snprintf(why, cap, "socketpair: %s", strerror(errno));
        if (body_file[0]) unlink(body_file);
        unlink(err_file);
        return -1;
    }
    pid_t pid = api_curl_spawn(argv, sp[1], err_file);
    close(sp[1]);
    hc_conn c;
    memset(&c, 0, sizeof c);
    c.fd = sp[0];
    c.timeout_ms = (timeout_ms > 0 ? timeout_ms : HC_TIMEOUT_MS) + 5000;
    int rc = pid > 0 ? hc_recv(&c, method, r) : -1;
    if (rc < 0) snprintf(why, cap, "%s %.300s via curl: %s", method, url, pid > 0 ? c.err : "cannot start curl");
    hc_close(&c);
    int status = 0;
    if (pid > 0) {
        if (rc < 0) kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    if (rc < 0) { /* say what curl said */
        FILE *f = fopen(err_file, "r");
        char line[256] = "";
        if (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            size_t n = strlen(why);
            snprintf(why + n, cap - n, " (curl exit %d: %s)", WIFEXITED(status) ? WEXITSTATUS(status) : -1, line);
        }
        if (f) fclose(f);
    }
    if (body_file[0]) unlink(body_file);
    unlink(err_file);
    return rc;
}

#endif
