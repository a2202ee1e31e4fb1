/* http_client.h — a tiny blocking HTTP/1.1 client over sockets, for tests (unit and API runner).
 * One connection, one request at a time: hc_open, hc_send, hc_recv, hc_close, or hc_request for all four.
 * Reads bodies sized by Content-Length, chunked, or ended by close. Header-only: every function is static. */
#ifndef WP_HTTP_CLIENT_H
#define WP_HTTP_CLIENT_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HC_TIMEOUT_MS 30000 /* default for connect, each send and each read */
#define HC_HEAD_MAX (64 * 1024)
#define HC_CHUNK_SIZE 4096 /* chunk size when sending with HC_CHUNKED */

enum {
    HC_CHUNKED = 1, /* send the body with Transfer-Encoding: chunked */
    HC_NO_TYPE = 2, /* send a body without the default Content-Type */
};

typedef struct {
    int status;
    char *head; /* header lines after the status line, "Name: value\r\n"..., NUL-terminated */
    char *body; /* NUL-terminated (body_len excludes it); "" when empty */
    size_t body_len;
    bool closed; /* the server closed the connection after this response */
} hc_resp;

typedef struct {
    int fd;
    int timeout_ms;
    char host[256];
    int port;
    char *buf; /* read ahead, not yet consumed */
    size_t len, cap;
    bool eof;
    bool send_cut; /* the server answered before the whole body went out */
    char err[160]; /* why the last call failed */
} hc_conn;

static inline int hc_fail(hc_conn *c, const char *what) {
    snprintf(c->err, sizeof c->err, "%s%s%s", what, errno ? ": " : "", errno ? strerror(errno) : "");
    return -1;
}

static inline int hc_wait(hc_conn *c, short events) {
    struct pollfd p = {.fd = c->fd, .events = events};
    int rc;
    do rc = poll(&p, 1, c->timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) errno = ETIMEDOUT;
    return rc > 0 ? p.revents : -1;
}

/* Connects to host:port (numeric or a name). Returns 0, or -1 with c->err. */
static inline int hc_open(hc_conn *c, const char *host, int port, int timeout_ms) {
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : HC_TIMEOUT_MS;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    const char *name = host;
    char bare[256];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof bare) {
        memcpy(bare, host + 1, n - 2);
        bare[n - 2] = 0;
        name = bare;
    }
    errno = 0;
    if (getaddrinfo(name, service, &hints, &res) != 0 || !res) return hc_fail(c, "cannot resolve host");
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (c->fd < 0) continue;
        if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        close(c->fd);
        c->fd = -1;
    }
    freeaddrinfo(res);
    if (c->fd < 0) return hc_fail(c, "cannot connect");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

static inline void hc_close(hc_conn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

/* Writes all of data; stops early (returns 1, sets send_cut) if the server has already answered. */
static inline int hc_write(hc_conn *c, const void *data, size_t n, bool watch_reply) {
    const char *p = data;
    while (n) {
        int ev = hc_wait(c, POLLOUT | (watch_reply ? POLLIN : 0));
        if (ev < 0) return hc_fail(c, "send timed out");
        if (watch_reply && (ev & (POLLIN | POLLHUP | POLLERR))) {
            c->send_cut = true;
            return 1;
        }
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (w < 0) {
            if (watch_reply && (errno == EPIPE || errno == ECONNRESET)) { /* maybe a reply is waiting */
                c->send_cut = true;
                return 1;
            }
            return hc_fail(c, "send failed");
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static inline bool hc_has_header(const char *const *headers, const char *name) {
    size_t n = strlen(name);
    for (; headers && *headers; headers++)
        if (strncasecmp(*headers, name, n) == 0 && (*headers)[n] == ':') return true;
    return false;
}

/* Sends one request. headers: NULL-terminated "Name: value" strings, or NULL. Host is added unless given
 * (an IPv6 address in brackets); Content-Length is added for a body (or for POST/PUT/PATCH) unless given
 * or flags has HC_CHUNKED; a body gets Content-Type: application/json (warpd refuses a body without a
 * type) unless one is given or flags has HC_NO_TYPE. */
static inline int hc_send(hc_conn *c, const char *method, const char *path, const char *const *headers,
                          const void *body, size_t body_len, unsigned flags) {
    size_t cap = 1024 + strlen(path);
    for (const char *const *hp = headers; hp && *hp; hp++) cap += strlen(*hp) + 2;
    char *head = malloc(cap);
    if (!head) return hc_fail(c, "out of memory");
    size_t n = (size_t)snprintf(head, cap, "%s %s HTTP/1.1\r\n", method, path);
    if (!hc_has_header(headers, "Host")) {
        bool v6 = strchr(c->host, ':') && c->host[0] != '[';
        n += (size_t)snprintf(head + n, cap - n, "Host: %s%s%s:%d\r\n", v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
    }
    if ((body_len || (flags & HC_CHUNKED)) && !(flags & HC_NO_TYPE) && !hc_has_header(headers, "Content-Type"))
        n += (size_t)snprintf(head + n, cap - n, "Content-Type: application/json\r\n");
    for (const char *const *hp = headers; hp && *hp; hp++) n += (size_t)snprintf(head + n, cap - n, "%s\r\n", *hp);
    bool wants_length = body_len || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH");
    if (flags & HC_CHUNKED)
        n += (size_t)snprintf(head + n, cap - n, "Transfer-Encoding: chunked\r\n");
    else if (wants_length && !hc_has_header(headers, "Content-Length"))
        n += (size_t)snprintf(head + n, cap - n, "Content-Length: %zu\r\n", body_len);
    n += (size_t)snprintf(head + n, cap - n, "\r\n");
    c->send_cut = false;
    int rc = hc_write(c, head, n, false);
    free(head);
    if (rc) return rc;
    if (!(flags & HC_CHUNKED)) return body_len ? (hc_write(c, body, body_len, true) < 0 ? -1 : 0) : 0;
    const char *p = body;
    for (size_t off = 0; off < body_len; off += HC_CHUNK_SIZE) {
        size_t k = body_len - off < HC_CHUNK_SIZE ? body_len - off : HC_CHUNK_SIZE;
        char size_line[32];
        int m = snprintf(size_line, sizeof size_line, "%zx\r\n", k);
        if ((rc = hc_write(c, size_line, (size_t)m, true)) || (rc = hc_write(c, p + off, k, true)) ||
            (rc = hc_write(c, "\r\n", 2, true)))
            return rc < 0 ? -1 : 0;
    }
    return hc_write(c, "0\r\n\r\n", 5, true) < 0 ? -1 : 0;
}

/* Makes sure at least want bytes are buffered (fewer only at EOF). */
static inline int hc_fill(hc_conn *c, size_t want) {
    while (c->len < want && !c->eof) {
        if (c->cap - c->len < 16384) {
            size_t cap = c->cap ? c->cap * 2 : 65536;
            while (cap - c->len < 16384) cap *= 2;
            char *grown = realloc(c->buf, cap);
            if (!grown) return hc_fail(c, "out of memory");
            c->buf = grown;
            c->cap = cap;
        }
        if (hc_wait(c, POLLIN) < 0) return hc_fail(c, "read timed out");
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r < 0 && errno == ECONNRESET) r = 0; /* what arrived before the reset still counts */
        if (r < 0) return hc_fail(c, "read failed");
        if (r == 0) c->eof = true;
        c->len += (size_t)r;
        c->buf[c->len] = 0; /* the parsers below read it as a string */
    }
    return 0;
}

static inline void hc_consume(hc_conn *c, size_t n) {
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
    c->buf[c->len] = 0;
}

/* Position of needle in the buffer from `from`, or -1, filling as needed up to limit bytes. */
static inline long hc_find(hc_conn *c, const char *needle, size_t from, size_t limit) {
    size_t k = strlen(needle);
    for (;;) {
        for (size_t i = from; i + k <= c->len; i++)
            if (memcmp(c->buf + i, needle, k) == 0) return (long)i;
        if (c->eof || c->len >= limit) return -1;
        if (hc_fill(c, c->len + 1) < 0) return -1;
    }
}

/* A header's value from a response (first match, case-insensitive name), copied to out; NULL if absent. */
static inline const char *hc_header(const hc_resp *r, const char *name, char *out, size_t cap) {
    size_t n = strlen(name);
    for (const char *line = r->head; line && *line;) {
        const char *end = strstr(line, "\r\n");
        if (!end) end = line + strlen(line);
        if ((size_t)(end - line) > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ' || *v == '\t') v++;
            size_t len = (size_t)(end - v);
            while (len && (v[len - 1] == ' ' || v[len - 1] == '\t')) len--;
            if (len >= cap) len = cap - 1;
            memcpy(out, v, len);
            out[len] = 0;
            return out;
        }
        line = *end ? end + 2 : end;
    }
    return NULL;
}

static inline void hc_resp_free(hc_resp *r) {
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

static inline int hc_body_append(hc_conn *c, hc_resp *r, const char *p, size_t n) {
    char *grown = realloc(r->body, r->body_len + n + 1);
    if (!grown) return hc_fail(c, "out of memory");
    r->body = grown;
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = 0;
    return 0;
}

/* Reads one response (skipping 1xx). method tells whether a body follows (HEAD has none). */
static inline int hc_recv(hc_conn *c, const char *method, hc_resp *r) {
    memset(r, 0, sizeof *r);
    errno = 0;
    for (;;) {
        long end = hc_find(c, "\r\n\r\n", 0, HC_HEAD_MAX);
        if (end < 0)
            return c->err[0] ? -1 : hc_fail(c, c->len ? "bad response head" : "connection closed, no response");
        int status = 0;
        if (sscanf(c->buf, "HTTP/1.%*d %3d", &status) != 1) return hc_fail(c, "bad status line");
        char *line_end = memchr(c->buf, '\n', (size_t)end);
        size_t head_off = (size_t)(line_end - c->buf) + 1, head_len = (size_t)end + 2 - head_off;
        if (status >= 100 && status < 200) {
            hc_consume(c, (size_t)end + 4);
            continue;
        }
        r->status = status;
        r->head = malloc(head_len + 1);
        if (!r->head) return hc_fail(c, "out of memory");
        memcpy(r->head, c->buf + head_off, head_len);
        r->head[head_len] = 0;
        hc_consume(c, (size_t)end + 4);
        break;
    }
    r->body = calloc(1, 1);
    if (!r->body) return hc_fail(c, "out of memory");
    char value[64];
    if (hc_header(r, "Connection", value, sizeof value) && !strcasecmp(value, "close")) r->closed = true;
    if (!strcmp(method, "HEAD") || r->status == 204 || r->status == 304) return 0;
    if (hc_header(r, "Transfer-Encoding", value, sizeof value) && strcasestr(value, "chunked")) {
        for (;;) {
            long eol = hc_find(c, "\r\n", 0, HC_HEAD_MAX);
            if (eol < 0) return hc_fail(c, "bad chunk size line");
            size_t size = strtoul(c->buf, NULL, 16);
            hc_consume(c, (size_t)eol + 2);
            if (size == 0) { /* trailers end with an empty line */
                long tail = hc_find(c, "\r\n", 0, HC_HEAD_MAX);
                while (tail > 0) {
                    hc_consume(c, (size_t)tail + 2);
                    tail = hc_find(c, "\r\n", 0, HC_HEAD_MAX);
                }
                if (tail == 0) hc_consume(c, 2);
                return 0;
            }
            if (hc_fill(c, size + 2) < 0 || c->len < size + 2) return hc_fail(c, "short chunk");
            if (hc_body_append(c, r, c->buf, size) < 0) return -1;
            hc_consume(c, size + 2);
        }
    }
    if (hc_header(r, "Content-Length", value, sizeof value)) {
        size_t size = strtoull(value, NULL, 10);
        if (hc_fill(c, size) < 0 || c->len < size) return hc_fail(c, "short body");
        if (hc_body_append(c, r, c->buf, size) < 0) return -1;
        hc_consume(c, size);
        return 0;
    }
    while (!c->eof) /* no length: the body ends with the connection */
        if (hc_fill(c, c->len + 1) < 0) return -1;
    r->closed = true;
    if (hc_body_append(c, r, c->buf, c->len) < 0) return -1;
    hc_consume(c, c->len);
    return 0;
}

/* One request on a fresh connection. Returns 0, or -1 with the reason in err (if non-NULL). */
static inline int hc_request(const char *host, int port, const char *method, const char *path,
                             const char *const *headers, const void *body, size_t body_len, unsigned flags, hc_resp *r,
                             char *err, size_t err_cap) {
    hc_conn c;
    memset(r, 0, sizeof *r);
    int rc = hc_open(&c, host, port, 0);
    if (rc == 0) rc = hc_send(&c, method, path, headers, body, body_len, flags);
    if (rc == 0) rc = hc_recv(&c, method, r);
    if (rc < 0 && err) snprintf(err, err_cap, "%s", c.err);
    hc_close(&c);
    return rc;
}

/* Splits "http://host:port/prefix" into its parts (prefix without a trailing '/'). Returns 0 or -1. */
static inline int hc_parse_url(const char *url, char *host, size_t host_cap, int *port, char *prefix,
                               size_t prefix_cap) {
    const char *p = url;
    if (!strncmp(p, "http://", 7))
        p += 7;
    else if (strstr(p, "://"))
        return -1;
    const char *slash = strchr(p, '/');
    const char *end = slash ? slash : p + strlen(p);
    const char *colon = NULL;
    if (*p == '[') {
        const char *close_bracket = memchr(p, ']', (size_t)(end - p));
        if (!close_bracket) return -1;
        colon = close_bracket[1] == ':' ? close_bracket + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
    }
    const char *host_end = colon ? colon : end;
    if (host_end == p || (size_t)(host_end - p) >= host_cap) return -1;
    memcpy(host, p, (size_t)(host_end - p));
    host[host_end - p] = 0;
    *port = colon ? atoi(colon + 1) : 80;
    if (*port <= 0 || *port > 65535) return -1;
    size_t n = slash ? strlen(slash) : 0;
    while (n && slash[n - 1] == '/') n--;
    if (n >= prefix_cap) return -1;
    if (n) memcpy(prefix, slash, n);
    prefix[n] = 0;
    return 0;
}

#endif
