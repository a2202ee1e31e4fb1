/* cache_file.c — one kernel's file in the disk cache: its format, read and checked, or written whole;
 * and the cache's directory: made, and the temp files of crashed writers swept when it is opened.
 * Owns: the format; nothing mutable (any thread). cache.c decides when to read or write, cache_disk.c
 * indexes the files.
 *
 * Disk file <dir>/<2 hex>/<64 hex>.wpk, little-endian:
 *   "WPKC" | u32 format version | u64 payload length | sha256(payload) | payload
 *   payload = key[32] | [format 2: u64 created (Unix ms) | str key text] | blob cubin | str ptx
 *             | str log | str lowered | str source | i32 regs | i32 spills | f64 compile_ms
 * Format 1 files (no created time, no key text) are still read; new files are format 2.
 *   blob/str = u64 length (UINT64_MAX: NULL) + bytes (strings without their NUL).
 * Written to <name>.tmp.<pid>.<tid>.<random> (created exclusively), fsync'd and renamed, so a reader sees
 * a whole file or none, also on a directory that several daemons share (docs/scaling.md). */
#include "cache_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/sha256.h"

#define CACHE_MAGIC "WPKC"
#define CACHE_FORMAT_VERSION 2u
#define CACHE_FORMAT_OLDEST 1u
#define CACHE_META_PEEK_BYTES 4096 /* enough of a file for its created time and key text */
#define CACHE_HEADER_BYTES (4 + 4 + 8 + 32)
#define CACHE_MAX_FILE_BYTES (256u << 20) /* a cubin is kilobytes; a file this big is not ours */
#define CACHE_NULL_LEN UINT64_MAX

typedef struct {
    uint8_t *p;
    size_t len, cap;
} out_buf;

static void put_bytes(out_buf *b, const void *data, size_t n) {
    if (b->p) memcpy(b->p + b->len, data, n);
    b->len += n;
}
static void put_u32(out_buf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, x, 4);
}
static void put_u64(out_buf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, x, 8);
}
static void put_blob(out_buf *b, const void *data, size_t n, bool present) {
    put_u64(b, present ? (uint64_t)n : CACHE_NULL_LEN);
    if (present) put_bytes(b, data, n);
}
static void put_str(out_buf *b, const char *s) { put_blob(b, s, s ? strlen(s) : 0, s != NULL); }

/* What a file says about its entry besides the artifact (format 2). */
typedef struct {
    double created;
    const char *key_text;
} file_meta;

/* Writes the payload into b (or, with b->p NULL, only measures it). */
static void put_payload(out_buf *b, const uint8_t key[32], const file_meta *m, const wp_artifact *a) {
    put_bytes(b, key, 32);
    put_u64(b, (uint64_t)(m->created * 1000.0));
    put_str(b, m->key_text ? m->key_text : "");
    put_blob(b, a->cubin, a->cubin_len, a->cubin != NULL);
    put_str(b, a->ptx);
    put_str(b, a->log);
    put_str(b, a->lowered);
    put_str(b, a->source);
    put_u32(b, (uint32_t)a->regs);
    put_u32(b, (uint32_t)a->spills);
    uint64_t ms;
    memcpy(&ms, &a->compile_ms, sizeof ms);
    put_u64(b, ms);
}

typedef struct {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} in_buf;

static const uint8_t *get_bytes(in_buf *b, size_t n) {
    if (b->bad || n > b->len - b->pos) {
        b->bad = true;
        return NULL;
    }
    const uint8_t *at = b->p + b->pos;
    b->pos += n;
    return at;
}
static uint32_t get_u32(in_buf *b) {
    const uint8_t *x = get_bytes(b, 4);
    uint32_t v = 0;
    for (int i = 0; x && i < 4; i++) v |= (uint32_t)x[i] << (8 * i);
    return v;
}
static uint64_t get_u64(in_buf *b) {
    const uint8_t *x = get_bytes(b, 8);
    uint64_t v = 0;
    for (int i = 0; x && i < 8; i++) v |= (uint64_t)x[i] << (8 * i);
    return v;
}
/* A malloc'd copy (plus a NUL) or NULL for an absent field; sets b->bad on a short buffer or OOM. */
static void *get_blob(in_buf *b, size_t *len) {
    uint64_t n = get_u64(b);
    if (len) *len = 0;
    if (b->bad || n == CACHE_NULL_LEN) return NULL;
    const uint8_t *at = n <= b->len - b->pos ? get_bytes(b, (size_t)n) : NULL;
    char *copy = at ? malloc((size_t)n + 1) : NULL;
    if (!copy) {
        b->bad = true;
        return NULL;
    }
    memcpy(copy, at, (size_t)n);
    copy[n] = 0;
    if (len) *len = (size_t)n;
    return copy;
}

/* Format 2's created time and key text (*key_text malloc'd); format 1 has neither. */
static void get_meta(in_buf *b, uint32_t version, double *created, char **key_text) {
    *created = 0;
    *key_text = NULL;
    if (version < 2) return;
    *created = (double)get_u64(b) / 1000.0;
    *key_text = get_blob(b, NULL);
}

static bool parse_payload(const uint8_t *p, size_t n, uint32_t version, const uint8_t key[32], wp_artifact *a,
                          double *created, char **key_text) {
    in_buf b = {p, n, 0, false};
    const uint8_t *stored_key = get_bytes(&b, 32);
    if (!stored_key || memcmp(stored_key, key, 32) != 0) return false;
    get_meta(&b, version, created, key_text);
    a->cubin = get_blob(&b, &a->cubin_len);
    a->ptx = get_blob(&b, NULL);
    a->log = get_blob(&b, NULL);
    a->lowered = get_blob(&b, NULL);
    a->source = get_blob(&b, NULL);
    a->regs = (int32_t)get_u32(&b);
    a->spills = (int32_t)get_u32(&b);
    uint64_t ms = get_u64(&b);
    memcpy(&a->compile_ms, &ms, sizeof ms);
    if (b.bad || b.pos != b.len) { /* short, or junk after the last field */
        wp_artifact_free(a);
        free(*key_text);
        *key_text = NULL;
        return false;
    }
    return true;
}

static bool read_all(int fd, uint8_t *p, size_t n) {
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static bool write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        p += put;
        n -= (size_t)put;
    }
    return true;
}

/* A new temp file beside path, created exclusively: <path>.tmp.<pid>.<tid>.<random>. The pid and tid
 * alone are not unique on a directory shared by several hosts or containers (each has its own pid 1);
 * without O_EXCL and the random part two such writers could write into one temp file and rename it
 * half-written. The sweep of stale temp files (below) reads only the pid. */
static int open_tmp(const char *path, char *tmp, size_t cap) {
    for (int attempt = 0; attempt < 8; attempt++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) r = (uint32_t)wp_now_ns() ^ (uint32_t)attempt;
        snprintf(tmp, cap, "%s.tmp.%d.%d.%08x", path, (int)getpid(), (int)gettid(), (unsigned)r);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

wp_file_result wp_cache_file_read(int fd, const uint8_t key[32], wp_artifact *a, double *created, char **key_text) {
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) return WP_FILE_MISS;
    if (sb.st_size < CACHE_HEADER_BYTES || (uint64_t)sb.st_size > CACHE_MAX_FILE_BYTES) return WP_FILE_CORRUPT;
    size_t size = (size_t)sb.st_size;
    uint8_t *file = malloc(size);
    if (!file) return WP_FILE_MISS;
    wp_file_result res = WP_FILE_CORRUPT;
    if (!read_all(fd, file, size)) goto out;
    in_buf h = {file, CACHE_HEADER_BYTES, 0, false};
    const uint8_t *magic = get_bytes(&h, 4);
    uint32_t version = get_u32(&h);
    uint64_t payload_len = get_u64(&h);
    const uint8_t *sum = get_bytes(&h, 32);
    if (memcmp(magic, CACHE_MAGIC, 4) != 0 || version < CACHE_FORMAT_OLDEST || version > CACHE_FORMAT_VERSION) goto out;
    if (payload_len != size - CACHE_HEADER_BYTES) goto out; /* torn, or junk after the payload */
    uint8_t got[32];
    wp_sha256(file + CACHE_HEADER_BYTES, (size_t)payload_len, got);
    if (memcmp(got, sum, 32) != 0) goto out;
    if (parse_payload(file + CACHE_HEADER_BYTES, (size_t)payload_len, version, key, a, created, key_text))
        res = WP_FILE_HIT;
out:
    free(file);
    return res;
}

bool wp_cache_file_meta(const char *path, double *created, char *key_text, size_t n) {
    *created = 0;
    if (n) key_text[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    uint8_t head[CACHE_META_PEEK_BYTES];
    ssize_t got = read(fd, head, sizeof head);
    close(fd);
    if (got < CACHE_HEADER_BYTES + 32) return false;
    in_buf b = {head, (size_t)got, 0, false};
    const uint8_t *magic = get_bytes(&b, 4);
    uint32_t version = get_u32(&b);
    if (memcmp(magic, CACHE_MAGIC, 4) != 0 || version < CACHE_FORMAT_OLDEST || version > CACHE_FORMAT_VERSION)
        return false;
    b.pos = CACHE_HEADER_BYTES + 32; /* past the header and the payload's key */
    char *text = NULL;
    get_meta(&b, version, created, &text);
    if (text && n) snprintf(key_text, n, "%s", text);
    free(text);
    return !b.bad;
}

static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The whole file: header, then the payload; malloc'd (NULL when out of memory), *total its size. */
static uint8_t *encode(const uint8_t key[32], const file_meta *m, const wp_artifact *a, size_t *total) {
    out_buf measure = {NULL, 0, 0};
    put_payload(&measure, key, m, a);
    *total = CACHE_HEADER_BYTES + measure.len;
    out_buf b = {malloc(*total), 0, *total};
    if (!b.p) return NULL;
    uint8_t sum[32] = {0};
    put_bytes(&b, CACHE_MAGIC, 4);
    put_u32(&b, CACHE_FORMAT_VERSION);
    put_u64(&b, measure.len);
    put_bytes(&b, sum, 32); /* placeholder, filled below */
    put_payload(&b, key, m, a);
    wp_sha256(b.p + CACHE_HEADER_BYTES, measure.len, sum);
    memcpy(b.p + CACHE_HEADER_BYTES - 32, sum, 32);
    return b.p;
}

uint64_t wp_cache_file_write(const char *path, const uint8_t key[32], double created, const char *key_text,
                             const wp_artifact *a) {
    file_meta m = {created, key_text};
    size_t total = 0;
    uint8_t *bytes = encode(key, &m, a, &total);
    if (!bytes) return 0;
    char sub[WP_CACHE_FILE_PATH_MAX], tmp[WP_CACHE_FILE_PATH_MAX + 48];
    snprintf(sub, sizeof sub, "%s", path);
    char *slash = strrchr(sub, '/');
    if (slash) *slash = 0;
    bool ok = slash && (mkdir(sub, 0700) == 0 || errno == EEXIST);
    int fd = ok ? open_tmp(path, tmp, sizeof tmp) : -1;
    ok = fd >= 0 && write_all(fd, bytes, total);
    if (fd >= 0) {
        ok = ok && fsync(fd) == 0;
        ok = (close(fd) == 0) && ok;
        ok = ok && rename(tmp, path) == 0;
        if (!ok) unlink(tmp);
    }
    if (ok) fsync_dir(sub); /* the rename itself survives a crash */
    free(bytes);
    return ok ? total : 0;
}

/* ---- the cache's directory ---- */

int wp_cache_dir_make(const char *dir) {
    char path[WP_CACHE_FILE_PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return errno = ENAMETOOLONG, -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0700) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(path, 0700) && errno != EEXIST) return -1;
    return 0;
}

#define CACHE_TMP_MIN_AGE_S 60
uint64_t wp_cache_file_sweep(const char *dir) {
    uint64_t removed = 0;
    DIR *top = opendir(dir);
    if (!top) return 0;
    time_t now = time(NULL);
    for (struct dirent *d; (d = readdir(top));) {
        if (strlen(d->d_name) != 2 || !isxdigit((unsigned char)d->d_name[0]) || !isxdigit((unsigned char)d->d_name[1]))
            continue;
        char sub[WP_CACHE_FILE_PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", dir, d->d_name);
        DIR *in = opendir(sub);
        if (!in) continue;
        for (struct dirent *e; (e = readdir(in));) {
            const char *t = strstr(e->d_name, ".wpk.tmp.");
            int pid = 0;
            if (!t || sscanf(t, ".wpk.tmp.%d.", &pid) != 1 || pid <= 0) continue;
            if (pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue; /* a live writer */
            char path[WP_CACHE_FILE_PATH_MAX + 300];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime >= CACHE_TMP_MIN_AGE_S &&
                unlink(path) == 0)
                removed++;
        }
        closedir(in);
    }
    closedir(top);
    return removed;
}
