/* reqlog.c — request ids, W3C trace context, the access log (one JSON line per request) and request
 * latencies for /metrics (see reqlog.h).
 * Owns: wp_reqlog (the access log's descriptor and the lock that keeps its lines whole) and each
 * thread's pool of random bytes for ids (thread-local: a new id takes no lock). */
#include "reqlog.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sha256.h"

#define REQLOG_LINE_MAX 16384 /* a line's bound: the escaped path and agent are at most 6x their caps */
#define REQLOG_POOL 4096      /* random bytes fetched at once: one getrandom(2) (about 1 us) per 256 ids */

struct wp_reqlog {
    int fd;             /* -1: no access log; changed by reopen, so read under mu */
    bool on, own_fd;    /* on: an access log is written (fixed at open) */
    char *path;         /* the file's, for reopen; NULL for none or stdout */
    pthread_mutex_t mu; /* one line at a time, whole */
    wp_metrics *metrics;
    atomic_uint_least64_t id_counter; /* ids when the kernel has no entropy to give yet */
};

wp_reqlog *wp_reqlog_open(const char *access_log, wp_metrics *metrics, wp_err *err) {
    wp_reqlog *l = calloc(1, sizeof *l);
    if (!l) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        return NULL;
    }
    l->fd = -1;
    l->metrics = metrics;
    pthread_mutex_init(&l->mu, NULL);
    l->on = access_log != NULL;
    if (access_log && !strcmp(access_log, "-")) {
        l->fd = STDOUT_FILENO;
    } else if (access_log) {
        l->fd = open(access_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (l->fd < 0) {
            WP_FAIL(err, 500, "access_log", "", "cannot open the access log %s: %s", access_log, strerror(errno));
            wp_reqlog_close(l);
            return NULL;
        }
        l->own_fd = true;
        if (!(l->path = strdup(access_log))) {
            WP_FAIL(err, 500, "internal", "", "out of memory");
            wp_reqlog_close(l);
            return NULL;
        }
    }
    return l;
}

int wp_reqlog_reopen(wp_reqlog *l, wp_err *err) {
    if (!l || !l->path) return 0;
    int fd = open(l->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return WP_FAIL(err, 500, "access_log", "", "cannot reopen the access log %s: %s", l->path, strerror(errno));
    pthread_mutex_lock(&l->mu);
    int old = l->fd;
    l->fd = fd;
    pthread_mutex_unlock(&l->mu);
    close(old);
    return 0;
}

void wp_reqlog_close(wp_reqlog *l) {
    if (!l) return;
    if (l->own_fd) close(l->fd);
    free(l->path);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---------- ids and trace context ---------- */

bool wp_request_id_valid(const char *s) {
    if (!s) return false;
    size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
    return n >= 1 && n <= WP_REQUEST_ID_MAX && s[n] == 0;
}

/* Each thread's random bytes for ids, refilled by one getrandom call: no lock a request. */
static _Thread_local struct {
    uint8_t bytes[REQLOG_POOL];
    size_t left; /* unused bytes at the end */
} id_pool;

/* 16 random bytes from this thread's pool; false when the kernel has no entropy to give yet. */
static bool random16(uint64_t r[2]) {
    if (id_pool.left < 16 &&
        getrandom(id_pool.bytes, sizeof id_pool.bytes, GRND_NONBLOCK) == (ssize_t)sizeof id_pool.bytes)
        id_pool.left = sizeof id_pool.bytes;
    if (id_pool.left < 16) return false;
    id_pool.left -= 16;
    memcpy(r, id_pool.bytes + id_pool.left, 16);
    memset(id_pool.bytes + id_pool.left, 0, 16); /* never handed out twice */
    return true;
}

static void new_id(wp_reqlog *l, char out[WP_REQUEST_ID_MAX + 1]) {
    uint64_t r[2];
    if (!random16(r)) { /* no entropy yet: still unique */
        uint64_t c = l ? atomic_fetch_add(&l->id_counter, 1) + 1 : 1;
        r[0] = wp_now_ns() ^ (c * 0x9E3779B97F4A7C15ull);
        r[0] ^= r[0] >> 31, r[0] *= 0xBF58476D1CE4E5B9ull, r[0] ^= r[0] >> 27;
        r[1] = (uint64_t)getpid() * 0x94D049BB133111EBull ^ c;
    }
    uint8_t bytes[16]; /* most significant first: the text %016llx%016llx gives, without printf */
    for (int i = 0; i < 16; i++) bytes[i] = (uint8_t)(r[i / 8] >> (56 - 8 * (i % 8)));
    wp_hex(bytes, sizeof bytes, out);
}

static bool lower_hex(const char *s, size_t n, bool *all_zero) {
    *all_zero = true;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
        if (s[i] != '0') *all_zero = false;
    }
    return true;
}

int wp_traceparent_parse(const char *s, char trace_id[33], char parent_id[17]) {
    bool zero;
    size_t n = s ? strlen(s) : 0;
    /* 00-<32 hex>-<16 hex>-<2 hex>: the dashes at 2, 35 and 52 */
    if (n < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-') return -1;
    if (!lower_hex(s, 2, &zero) || !strncmp(s, "ff", 2)) return -1;
    if (!strncmp(s, "00", 2) ? n != 55 : (n > 55 && s[55] != '-')) return -1;
    if (!lower_hex(s + 53, 2, &zero)) return -1;
    if (!lower_hex(s + 3, 32, &zero) || zero) return -1;
    if (!lower_hex(s + 36, 16, &zero) || zero) return -1;
    memcpy(trace_id, s + 3, 32);
    trace_id[32] = 0;
    memcpy(parent_id, s + 36, 16);
    parent_id[16] = 0;
    return 0;
}

/* ---------- the record ---------- */

static void copy_cut(char *dst, size_t cap, const char *src, bool *cut) {
    size_t n = src ? strnlen(src, cap) : 0;
    if (cut) *cut = n == cap;
    if (n == cap) n = cap - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

static void peer_text(const struct sockaddr *sa, char *out, size_t cap) {
    out[0] = 0;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out, (socklen_t)cap);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, out, (socklen_t)cap);
    else if (sa && sa->sa_family == AF_UNIX)
        snprintf(out, cap, "unix");
}

void wp_reqlog_begin(wp_reqlog *l, wp_reqrec *r, const char *method, const char *path, wp_reqlog_header_fn header,
                     void *conn, const struct sockaddr *peer) {
    memset(r, 0, sizeof *r);
    r->t_start_ns = wp_now_ns();
    clock_gettime(CLOCK_REALTIME, &r->wall);
    const char *id = header ? header(conn, "X-Request-Id") : NULL;
    if (wp_request_id_valid(id))
        memcpy(r->id, id, strlen(id) + 1);
    else
        new_id(l, r->id);
    const char *tp = header ? header(conn, "traceparent") : NULL;
    if (tp && wp_traceparent_parse(tp, r->trace_id, r->parent_id)) r->trace_invalid = true;
    copy_cut(r->method, sizeof r->method, method, NULL);
    copy_cut(r->path, sizeof r->path, path, &r->path_cut);       /* /metrics names a 404's route by it */
    if (!l || (!l->on && !wp_log_enabled(WP_LOG_DEBUG))) return; /* nothing reads the rest */
    copy_cut(r->agent, sizeof r->agent, header ? header(conn, "User-Agent") : NULL, NULL);
    peer_text(peer, r->remote, sizeof r->remote);
}

void wp_reqlog_queued(wp_reqrec *r) { r->t_queued_ns = wp_now_ns(); }

void wp_reqlog_dequeued(wp_reqlog *l, wp_reqrec *r) {
    if (!r->t_queued_ns) return;
    r->queue_ns = wp_now_ns() - r->t_queued_ns;
    if (l) wp_metrics_observe_queue_wait(l->metrics, (double)r->queue_ns / 1e9);
}

/* Where the JSON object or array opening at s[0] closes (strings and escapes skipped), or n. */
static size_t json_close(const char *s, size_t n) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i;
        }
    }
    return n;
}

/* A JSON error body, {"error":{...}} and nothing else (what wp_resp_error makes). */
static bool is_json_error(const wp_resp *resp) {
    static const char head[] = "{\"error\":{";
    const size_t h = sizeof head - 1;
    const char *t = resp->content_type;
    return resp->status >= 400 && resp->body && (!t || !strncmp(t, "application/json", 16)) &&
           resp->body_len >= h + 2 && !memcmp(resp->body, head, h) && resp->body[h] != '}' &&
           resp->body[resp->body_len - 1] == '}' &&
           (h - 1) + json_close(resp->body + h - 1, resp->body_len - h + 1) == resp->body_len - 2;
}

void wp_reqlog_respond(wp_reqrec *r, wp_resp *resp) {
    r->status = resp->status;
    r->note = resp->note;
    if (is_json_error(resp)) { /* ..."}} -> ...","request_id":"ID"}} (ids need no escaping) */
        char add[WP_REQUEST_ID_MAX + 32];
        int n = snprintf(add, sizeof add, ",\"request_id\":\"%s\"}}", r->id);
        char *grown = realloc(resp->body, resp->body_len + (size_t)n + 1);
        if (grown) {
            memcpy(grown + resp->body_len - 2, add, (size_t)n + 1);
            resp->body = grown;
            resp->body_len += (size_t)n - 2;
        }
    }
    r->bytes_out = strcmp(r->method, "HEAD") ? resp->body_len : 0; /* HEAD: headers only */
}

/* ---------- the access log line ---------- */

bool wp_reqlog_escape(char *out, size_t cap, size_t *len, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = *len;
    for (size_t i = 0; i < n;) {
        char esc[8];
        size_t en = 0, take = 1;
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, en = 2;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            esc[0] = '\\', esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't', en = 2;
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(esc, "\\u00", 4), esc[4] = hex[c >> 4], esc[5] = hex[c & 15], en = 6;
        } else if (c < 0x80) {
            esc[0] = (char)c, en = 1;
        } else { /* a whole UTF-8 sequence (no overlongs, surrogates or > U+10FFFF), else U+FFFD */
            size_t need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
            bool ok = need && i + need <= n;
            for (size_t k = 1; ok && k < need; k++) ok = (p[i + k] & 0xc0) == 0x80;
            if (ok && c == 0xe0) ok = p[i + 1] >= 0xa0;
            if (ok && c == 0xed) ok = p[i + 1] < 0xa0;
            if (ok && c == 0xf0) ok = p[i + 1] >= 0x90;
            if (ok && c == 0xf4) ok = p[i + 1] < 0x90;
            if (ok) {
                memcpy(esc, p + i, need), en = need, take = need;
            } else {
                memcpy(esc, "\\ufffd", 6), en = 6;
            }
        }
        if (o + en + 1 > cap) {
            out[o] = 0;
            *len = o;
            return false;
        }
        memcpy(out + o, esc, en);
        o += en;
        i += take;
    }
    out[o] = 0;
    *len = o;
    return true;
}

typedef struct {
    char buf[REQLOG_LINE_MAX];
    size_t len;
} line_buf;

static void put_raw(line_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_raw(line_buf *b, const char *fmt, ...) {
    if (b->len >= sizeof b->buf - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, sizeof b->buf - b->len, fmt, ap);
    va_end(ap);
    b->len = n < 0 ? b->len : b->len + (size_t)n >= sizeof b->buf ? sizeof b->buf - 1 : b->len + (size_t)n;
}

/* ,"key":"escaped value" — skipped when value is NULL or "". */
static void put_str(line_buf *b, const char *key, const char *value) {
    if (!value || !value[0]) return;
    put_raw(b, ",\"%s\":\"", key);
    wp_reqlog_escape(b->buf, sizeof b->buf - 2, &b->len, value, strlen(value));
    put_raw(b, "\"");
}

static void format_line(line_buf *b, const wp_reqrec *r, const char *route, uint64_t bytes_in, double dur_s,
                        bool completed) {
    struct tm tm;
    gmtime_r(&r->wall.tv_sec, &tm);
    put_raw(b, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
            tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(r->wall.tv_nsec / 1000000));
    put_str(b, "id", r->id);
    put_str(b, "trace_id", r->trace_id);
    put_str(b, "parent_id", r->parent_id);
    if (r->trace_invalid) put_str(b, "traceparent", "invalid");
    put_str(b, "remote", r->remote);
    put_str(b, "method", r->method);
    put_str(b, "route", route);
    put_str(b, "path", r->path);
    put_str(b, "user", r->user ? wp_user_name(r->user) : NULL);
    if (r->path_cut) put_raw(b, ",\"path_cut\":true");
    put_raw(b, ",\"status\":%d,\"bytes_in\":%llu,\"bytes_out\":%llu,\"duration_s\":%.6f", r->status,
            (unsigned long long)bytes_in, (unsigned long long)r->bytes_out, dur_s);
    if (r->queue_ns) put_raw(b, ",\"queue_s\":%.6f", (double)r->queue_ns / 1e9);
    if (!completed) put_raw(b, ",\"aborted\":true");
    put_str(b, "backend", r->note.backend);
    put_str(b, "cache", r->note.cache);
    put_str(b, "family", r->note.family);
    put_str(b, "key", r->note.key);
    put_str(b, "user_agent", r->agent);
    put_raw(b, "}\n");
    if (b->buf[b->len - 1] != '\n') memcpy(b->buf + b->len - 2, "}\n", 2); /* never reached: the caps fit */
}

static void write_line(wp_reqlog *l, const char *s, size_t n) {
    pthread_mutex_lock(&l->mu);
    while (n) {
        ssize_t w = write(l->fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* a full disk or a closed pipe: the line is lost, the request is not */
        s += w, n -= (size_t)w;
    }
    pthread_mutex_unlock(&l->mu);
}

void wp_reqlog_end(wp_reqlog *l, wp_reqrec *r, const wp_route *rt, uint64_t bytes_in, bool completed) {
    if (r->status) wp_user_count(r->user, r->status);
    if (!l) return;
    double dur_s = (double)(wp_now_ns() - r->t_start_ns) / 1e9;
    if (r->status) wp_metrics_observe_request(l->metrics, rt, r->path[0] ? r->path : NULL, r->status, dur_s);
    bool debug = wp_log_enabled(WP_LOG_DEBUG);
    if (!l->on && !debug) return;
    const char *route = wp_metrics_route(l->metrics, rt, r->path);
    line_buf *b = malloc(sizeof *b);
    if (!b) return;
    b->len = 0;
    format_line(b, r, route, bytes_in, dur_s, completed);
    if (l->on) write_line(l, b->buf, b->len);
    if (debug) {
        b->buf[b->len - 1] = 0;
        wp_log(WP_LOG_DEBUG, "request %s", b->buf);
    }
    free(b);
}
