/* listen.c — the daemon's Unix socket file and TLS files: made, checked and removed here so that http_start.c
 * only hands libmicrohttpd a listening descriptor and PEM text.
 * Owns: nothing that outlives a call (the socket file on disk, between wp_listen_unix and
 * wp_listen_unix_remove). */
#include "listen.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PEM_MAX_BYTES (1u << 20) /* a certificate chain or a key is a few KiB */

static int unix_addr(const char *path, struct sockaddr_un *sa, wp_err *err) {
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (!path || !path[0]) return WP_FAIL(err, 400, "bad_listen", "listen", "--listen unix: needs a path");
    if (strlen(path) >= sizeof sa->sun_path)
        return WP_FAIL(err, 400, "bad_listen", "listen", "the socket path %s is longer than %zu bytes", path,
                       sizeof sa->sun_path - 1);
    memcpy(sa->sun_path, path, strlen(path) + 1);
    return 0;
}

/* A file at path: fine to replace when it is a socket that refuses connections (its daemon is gone). */
static int clear_stale(const char *path, const struct sockaddr_un *sa, wp_err *err) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0; /* nothing there */
    if (!S_ISSOCK(st.st_mode))
        return WP_FAIL(err, 400, "bad_listen", "listen", "%s exists and is not a socket; not replacing it", path);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return WP_FAIL(err, 500, "listen_failed", "listen", "socket: %s", strerror(errno));
    int rc = connect(probe, (const struct sockaddr *)sa, sizeof *sa);
    int e = errno;
    close(probe);
    if (rc == 0) return WP_FAIL(err, 400, "bad_listen", "listen", "another process is listening on %s", path);
    if (e != ECONNREFUSED)
        return WP_FAIL(err, 400, "bad_listen", "listen", "cannot tell whether %s is in use: %s", path, strerror(e));
    if (unlink(path) != 0 && errno != ENOENT)
        return WP_FAIL(err, 400, "bad_listen", "listen", "cannot remove the stale socket %s: %s", path,
                       strerror(errno));
    return 0;
}

int wp_listen_unix(const char *path, unsigned mode, int backlog, ino_t *ino, wp_err *err) {
    struct sockaddr_un sa;
    if (unix_addr(path, &sa, err) < 0 || clear_stale(path, &sa, err) < 0) return -1;
    if (!mode) mode = WP_LISTEN_DEFAULT_MODE;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return WP_FAIL(err, 500, "listen_failed", "listen", "socket: %s", strerror(errno));
    /* The file is born owner-only (no window in which others may connect), then gets its mode before
     * anyone can connect: listen() comes last. */
    mode_t old = umask(0177);
    int rc = bind(fd, (const struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    umask(old);
    if (rc != 0) {
        close(fd);
        return WP_FAIL(err, 400, "bad_listen", "listen", "cannot bind %s: %s", path, strerror(e));
    }
    struct stat st;
    if (chmod(path, (mode_t)mode) != 0 || stat(path, &st) != 0 || listen(fd, backlog) != 0) {
        e = errno;
        close(fd);
        unlink(path);
        return WP_FAIL(err, 400, "bad_listen", "listen", "cannot listen on %s: %s", path, strerror(e));
    }
    if (ino) *ino = st.st_ino;
    return fd;
}

void wp_listen_unix_remove(const char *path, ino_t ino) {
    struct stat st;
    if (path && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino) unlink(path);
}

char *wp_listen_read_pem(const char *flag, const char *path, const char *expect, wp_err *err) {
    size_t n = 0;
    char *text = wp_read_file(path, &n);
    if (!text) {
        WP_FAIL(err, 400, "bad_tls", flag, "%s %s: cannot read it: %s", flag, path, strerror(errno));
        return NULL;
    }
    if (n == 0 || n > PEM_MAX_BYTES || !strstr(text, "-----BEGIN ") || (expect && !strstr(text, expect))) {
        WP_FAIL(err, 400, "bad_tls", flag, "%s %s: not a PEM %s", flag, path,
                expect && strstr(expect, "KEY") ? "private key" : "certificate");
        free(text);
        return NULL;
    }
    return text;
}

int wp_listen_probe(const struct sockaddr_storage *addr, const char *host, wp_err *err) {
    const int family = addr->ss_family;
    const bool v6 = family == AF_INET6;
    socklen_t len = v6 ? (socklen_t)sizeof(struct sockaddr_in6) : (socklen_t)sizeof(struct sockaddr_in);
    int port =
        ntohs(v6 ? ((const struct sockaddr_in6 *)addr)->sin6_port : ((const struct sockaddr_in *)addr)->sin_port);
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0; /* cannot tell: the listeners' own binds decide */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as libmicrohttpd binds: TIME_WAIT is no owner */
    if (v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    int rc = bind(fd, (const struct sockaddr *)addr, len);
    int e = errno;
    close(fd);
    if (rc == 0) return 0;
    return WP_FAIL(err, 500, "listen_failed", "", "cannot listen on %s:%d: Failed to bind to port %d: %s", host, port,
                   port, strerror(e)); /* libmicrohttpd's words when it binds */
}
