/* cache_disk.c — the index of the disk store's files: sizes, last use (the files' mtimes), the byte
 * cap and least-recently-used eviction, removal and pruning, listings. See cache_disk.h for why the
 * directory, not this index, is the truth. Owns: wp_disk. Knows the directory layout; the file
 * format stays in cache.c. */
#include "cache_disk.h"
#include "cache_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/common.h"
#include "util/sha256.h"

#define DISK_MIN_BUCKETS 64
#define DISK_PATH_MAX 4352

typedef struct dnode {
    wp_disk_entry e;
    bool meta_read;   /* created and key_text come from the file (or were given) */
    double used_here; /* last store, hit or touch by this process (the file's mtime may lag) */
    struct dnode *next;
} dnode;

struct wp_disk {
    pthread_mutex_t mu; /* guards everything below */
    char *dir;
    dnode **buckets;
    size_t n_buckets, n;
    uint64_t bytes, cap, evictions, removed;
    double last_scan;
    bool scanning; /* one rescan at a time; others use the index as it is */
};

void wp_disk_path(const char *dir, const uint8_t key[32], char *out, size_t n) {
    char hex[65];
    wp_hex(key, 32, hex);
    snprintf(out, n, "%s/%.2s/%s.wpk", dir, hex, hex);
}

/* ---- the map (under mu) ---- */

static size_t bucket_of(size_t n_buckets, const uint8_t key[32]) {
    uint64_t h;
    memcpy(&h, key, sizeof h); /* a sha256 is already uniform */
    return (size_t)(h & (n_buckets - 1));
}

static dnode **find_link(wp_disk *d, const uint8_t key[32]) {
    dnode **p = &d->buckets[bucket_of(d->n_buckets, key)];
    while (*p && memcmp((*p)->e.key, key, 32) != 0) p = &(*p)->next;
    return p;
}

static void map_grow(wp_disk *d) {
    size_t n = d->n_buckets * 2;
    dnode **nb = calloc(n, sizeof *nb);
    if (!nb) return; /* chains just get longer */
    for (size_t i = 0; i < d->n_buckets; i++)
        for (dnode *x = d->buckets[i], *next; x; x = next) {
            next = x->next;
            size_t b = bucket_of(n, x->e.key);
            x->next = nb[b];
            nb[b] = x;
        }
    free(d->buckets);
    d->buckets = nb;
    d->n_buckets = n;
}

static void map_insert(wp_disk *d, dnode *x) {
    if (d->n >= d->n_buckets) map_grow(d);
    size_t b = bucket_of(d->n_buckets, x->e.key);
    x->next = d->buckets[b];
    d->buckets[b] = x;
    d->n++;
    d->bytes += x->e.bytes;
}

static void map_unlink(wp_disk *d, dnode **link) {
    dnode *x = *link;
    *link = x->next;
    d->n--;
    d->bytes -= x->e.bytes;
    free(x);
}

/* Found or made (NULL on OOM). */
static dnode *map_get(wp_disk *d, const uint8_t key[32]) {
    dnode **p = find_link(d, key);
    if (*p) return *p;
    dnode *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    memcpy(x->e.key, key, 32);
    map_insert(d, x);
    return x;
}

/* ---- scanning the directory (no lock) ---- */

typedef struct {
    uint8_t key[32];
    uint64_t bytes;
    double mtime;
} scanned;

typedef struct {
    scanned *v;
    size_t n, cap;
} scan_list;

static bool hex_key(const char *name, uint8_t key[32]) {
    if (strlen(name) != 68 || strcmp(name + 64, ".wpk") != 0) return false;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (!isxdigit((unsigned char)name[2 * i]) || !isxdigit((unsigned char)name[2 * i + 1]) ||
            sscanf(name + 2 * i, "%2x", &v) != 1)
            return false;
        key[i] = (uint8_t)v;
    }
    return true;
}

static void scan_sub(const char *dir, const char *sub_name, scan_list *out) {
    char sub[DISK_PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", dir, sub_name);
    DIR *in = opendir(sub);
    if (!in) return;
    for (struct dirent *e; (e = readdir(in));) {
        scanned s;
        if (!hex_key(e->d_name, s.key) || strncmp(e->d_name, sub_name, 2) != 0) continue;
        char path[DISK_PATH_MAX + 80];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
        if (lstat(path, &st) || !S_ISREG(st.st_mode)) continue;
        s.bytes = (uint64_t)st.st_size;
        s.mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 256;
            scanned *v = realloc(out->v, cap * sizeof *v);
            if (!v) break;
            out->v = v, out->cap = cap;
        }
        out->v[out->n++] = s;
    }
    closedir(in);
}

static void scan_dir(const char *dir, scan_list *out) {
    DIR *top = opendir(dir);
    if (!top) return;
    for (struct dirent *d; (d = readdir(top));)
        if (strlen(d->d_name) == 2 && isxdigit((unsigned char)d->d_name[0]) && isxdigit((unsigned char)d->d_name[1]))
            scan_sub(dir, d->d_name, out);
    closedir(top);
}

/* Rebuilds the map from the directory. What this process knows that the files do not (hits, key
 * texts, a later use) carries over; entries recorded while the scan ran are kept. */
static void rescan(wp_disk *d) {
    pthread_mutex_lock(&d->mu);
    if (d->scanning) {
        pthread_mutex_unlock(&d->mu);
        return;
    }
    d->scanning = true;
    pthread_mutex_unlock(&d->mu);

    double started = wp_unix_now();
    scan_list found = {0};
    scan_dir(d->dir, &found);

    pthread_mutex_lock(&d->mu);
    dnode **old = d->buckets;
    size_t old_n = d->n_buckets;
    dnode **fresh = calloc(old_n, sizeof *fresh);
    if (fresh) {
        d->buckets = fresh;
        d->n = 0;
        d->bytes = 0;
        for (size_t i = 0; i < found.n; i++) {
            dnode **link = &old[bucket_of(old_n, found.v[i].key)], *x;
            while (*link && memcmp((*link)->e.key, found.v[i].key, 32) != 0) link = &(*link)->next;
            if ((x = *link)) {
                *link = x->next;
            } else if (!(x = calloc(1, sizeof *x))) {
                continue;
            }
            memcpy(x->e.key, found.v[i].key, 32);
            x->e.bytes = found.v[i].bytes;
            x->e.last_used = found.v[i].mtime > x->used_here ? found.v[i].mtime : x->used_here;
            map_insert(d, x);
        }
        for (size_t i = 0; i < old_n; i++)
            for (dnode *x = old[i], *next; x; x = next) {
                next = x->next;
                if (x->used_here >= started && !*find_link(d, x->e.key))
                    map_insert(d, x); /* stored while we scanned */
                else
                    free(x);
            }
        free(old);
        d->last_scan = started;
    }
    d->scanning = false;
    pthread_mutex_unlock(&d->mu);
    free(found.v);
}

/* ---- the public face ---- */

wp_disk *wp_disk_open(const char *dir) {
    wp_disk *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->dir = strdup(dir);
    d->n_buckets = DISK_MIN_BUCKETS;
    d->buckets = calloc(d->n_buckets, sizeof *d->buckets);
    if (!d->dir || !d->buckets || pthread_mutex_init(&d->mu, NULL)) {
        free(d->dir);
        free(d->buckets);
        free(d);
        return NULL;
    }
    rescan(d);
    return d;
}

void wp_disk_close(wp_disk *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_buckets; i++)
        for (dnode *x = d->buckets[i], *next; x; x = next) {
            next = x->next;
            free(x);
        }
    free(d->buckets);
    free(d->dir);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void wp_disk_set_cap(wp_disk *d, uint64_t cap) {
    pthread_mutex_lock(&d->mu);
    d->cap = cap;
    pthread_mutex_unlock(&d->mu);
}

static void set_mtime_now(wp_disk *d, const uint8_t key[32]) {
    char path[DISK_PATH_MAX];
    wp_disk_path(d->dir, key, path, sizeof path);
    utimensat(AT_FDCWD, path, NULL, 0);
}

static void record(wp_disk *d, const uint8_t key[32], uint64_t bytes, const char *key_text, double created, bool hit) {
    pthread_mutex_lock(&d->mu);
    dnode *x = map_get(d, key);
    if (x) {
        d->bytes = d->bytes - x->e.bytes + bytes;
        x->e.bytes = bytes;
        x->e.last_used = x->used_here = wp_unix_now();
        if (hit) x->e.hits++;
        if (key_text) {
            snprintf(x->e.key_text, sizeof x->e.key_text, "%s", key_text);
            x->e.created = created;
            x->meta_read = true;
        }
    }
    pthread_mutex_unlock(&d->mu);
}

void wp_disk_stored(wp_disk *d, const uint8_t key[32], uint64_t bytes, const char *key_text, double created) {
    record(d, key, bytes, key_text, created, false);
}

void wp_disk_hit(wp_disk *d, const uint8_t key[32], uint64_t bytes, const char *key_text, double created) {
    set_mtime_now(d, key);
    record(d, key, bytes, key_text, created, true);
}

void wp_disk_touch(wp_disk *d, const uint8_t key[32]) {
    set_mtime_now(d, key);
    if (pthread_mutex_trylock(&d->mu)) return; /* a rescan holds it: it reads the new mtime anyway */
    dnode *x = *find_link(d, key);
    if (x) x->e.last_used = x->used_here = wp_unix_now();
    pthread_mutex_unlock(&d->mu);
}

void wp_disk_forget(wp_disk *d, const uint8_t key[32]) {
    pthread_mutex_lock(&d->mu);
    dnode **link = find_link(d, key);
    if (*link) map_unlink(d, link);
    pthread_mutex_unlock(&d->mu);
}

typedef struct {
    double last_used;
    dnode *x;
} by_use;

static int by_use_cmp(const void *a, const void *b) {
    double x = ((const by_use *)a)->last_used, y = ((const by_use *)b)->last_used;
    return x < y ? -1 : x > y;
}

/* Every entry with its effective last use (the file's or the caller's, whichever is later), least
 * recently used first. Under mu. NULL when empty or out of memory. */
static by_use *sorted_by_use(wp_disk *d, wp_disk_recent_fn recent, void *ctx) {
    by_use *v = d->n ? malloc(d->n * sizeof *v) : NULL;
    if (!v) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < d->n_buckets; i++)
        for (dnode *x = d->buckets[i]; x; x = x->next) {
            double r = recent ? recent(ctx, x->e.key) : 0;
            v[k++] = (by_use){r > x->e.last_used ? r : x->e.last_used, x};
        }
    qsort(v, k, sizeof *v, by_use_cmp);
    return v;
}

/* Unlinks the file of x and drops x. Under mu. */
static void drop_file(wp_disk *d, dnode *x) {
    char path[DISK_PATH_MAX];
    wp_disk_path(d->dir, x->e.key, path, sizeof path);
    unlink(path); /* ENOENT: another daemon got there first */
    map_unlink(d, find_link(d, x->e.key));
}

uint64_t wp_disk_enforce(wp_disk *d, wp_disk_recent_fn recent, void *ctx) {
    pthread_mutex_lock(&d->mu);
    bool over = d->cap && d->bytes > d->cap, stale = wp_unix_now() - d->last_scan > WP_DISK_RESCAN_S;
    pthread_mutex_unlock(&d->mu);
    if (!over && !stale) return 0;
    rescan(d); /* other daemons may have added, touched or evicted files */
    uint64_t evicted = 0;
    pthread_mutex_lock(&d->mu);
    if (d->cap && d->bytes > d->cap) {
        uint64_t target = d->cap - d->cap / 10; /* room for a few more stores before the next scan */
        size_t n = d->n;
        by_use *v = sorted_by_use(d, recent, ctx);
        for (size_t i = 0; v && i < n && d->bytes > target; i++, evicted++) drop_file(d, v[i].x);
        free(v);
        d->evictions += evicted;
    }
    pthread_mutex_unlock(&d->mu);
    return evicted;
}

bool wp_disk_remove(wp_disk *d, const uint8_t key[32]) {
    char path[DISK_PATH_MAX];
    wp_disk_path(d->dir, key, path, sizeof path);
    bool existed = unlink(path) == 0;
    pthread_mutex_lock(&d->mu);
    dnode **link = find_link(d, key);
    if (*link) map_unlink(d, link);
    if (existed) d->removed++;
    pthread_mutex_unlock(&d->mu);
    return existed;
}

uint64_t wp_disk_prune(wp_disk *d, double cutoff, wp_disk_recent_fn recent, void *ctx, uint64_t *bytes) {
    rescan(d);
    uint64_t n_removed = 0, freed = 0;
    pthread_mutex_lock(&d->mu);
    size_t n = d->n;
    by_use *v = sorted_by_use(d, recent, ctx);
    for (size_t i = 0; v && i < n && v[i].last_used < cutoff; i++, n_removed++) {
        freed += v[i].x->e.bytes;
        drop_file(d, v[i].x);
    }
    free(v);
    d->removed += n_removed;
    pthread_mutex_unlock(&d->mu);
    if (bytes) *bytes = freed;
    return n_removed;
}

int wp_disk_list(wp_disk *d, wp_disk_entry **out, size_t *n) {
    rescan(d);
    pthread_mutex_lock(&d->mu);
    *n = 0;
    *out = malloc((d->n ? d->n : 1) * sizeof **out);
    if (!*out) {
        pthread_mutex_unlock(&d->mu);
        return -1;
    }
    for (size_t i = 0; i < d->n_buckets; i++)
        for (dnode *x = d->buckets[i]; x; x = x->next) {
            if (!x->meta_read) {
                char path[DISK_PATH_MAX];
                wp_disk_path(d->dir, x->e.key, path, sizeof path);
                x->meta_read = wp_cache_file_meta(path, &x->e.created, x->e.key_text, sizeof x->e.key_text);
            }
            (*out)[(*n)++] = x->e;
        }
    pthread_mutex_unlock(&d->mu);
    return 0;
}

void wp_disk_stats_get(wp_disk *d, wp_disk_stats *out) {
    pthread_mutex_lock(&d->mu);
    *out = (wp_disk_stats){d->n, d->bytes, d->cap, d->evictions, d->removed};
    pthread_mutex_unlock(&d->mu);
}
