/* cache.c — where compiled kernels live: a memory LRU (byte cap) in front of a content-addressed disk
 * store, with one build per cold key however many threads ask at once.
 * Owns: wp_cache, wp_kernel. Knows nothing of HTTP, NVRTC or which backend loads the cubin.
 *
 * Locking: one mutex guards the index, the LRU, every entry's state and fn fields and the stats. What
 * a memory hit does goes without it: a thread's repeated peek is served from its slot (below;
 * the first, a locked one, fills it), an entry's reference is dropped with an atomic decrement (the
 * last one frees it: the index holds one while it is indexed, and a slot one while it holds it, so
 * none is raised from zero), and a function already loaded is read after an acquire load of its
 * slot's state (FN_LOADED is final).
 * Builds, disk reads and writes, backend loads and frees all run outside it. Each entry has a
 * condition variable for "its state or its loaded function changed".
 *
 * The files' format is cache_file.c's; their index, the disk cap and LRU eviction are cache_disk.c's.
 * Listing, removal and pruning are cache_list.c's.
 * Written to <name>.tmp.<pid>.<tid>.<random> (created exclusively), fsync'd and renamed, so a reader sees
 * a whole file or none, also on a directory that several daemons share (docs/scaling.md). A temp
 * file a crashed writer left behind is never read; opening the cache removes those whose process is
 * gone and that are over a minute old (another daemon sharing the directory may be writing its own). */
#include "cache.h"

#include "cache_file.h"
#include "cache_impl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "util/common.h"
#include "util/sha256.h"

#define CACHE_MIN_BUCKETS 64
#define CACHE_PATH_MAX WP_CACHE_FILE_PATH_MAX

const char *wp_source_name(wp_source s) {
    switch (s) {
    case WP_SRC_MEMORY:
        return "memory";
    case WP_SRC_DISK:
        return "disk";
    case WP_SRC_COMPILE:
        return "compile";
    }
    return "?";
}

/* ---- entries ---- */

static wp_kernel *kernel_new(wp_cache *c, const uint8_t key[32]) {
    wp_kernel *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    if (pthread_cond_init(&k->changed, NULL)) {
        free(k);
        return NULL;
    }
    memcpy(k->key, key, 32);
    k->art.regs = k->art.spills = -1;
    k->cache = c;
    k->created = k->last_used = k->touched = wp_unix_now();
    return k;
}

/* Last reference gone: runs outside the lock (unload may call into the driver). */
static void kernel_free(wp_kernel *k) {
    for (int i = 0; i < WP_KERNEL_BACKENDS; i++)
        if (k->fns[i].state == FN_LOADED && k->fns[i].unload) k->fns[i].unload(k->fns[i].backend, k->fns[i].fn);
    wp_artifact_free(&k->art);
    pthread_cond_destroy(&k->changed);
    free(k->key_text);
    free(k);
}

/* ---- index and LRU (under mu) ---- */

static size_t bucket_of(const wp_cache *c, const uint8_t key[32]) {
    uint64_t h;
    memcpy(&h, key, sizeof h); /* a sha256 is already uniform */
    return (size_t)(h & (c->n_buckets - 1));
}

wp_kernel *cache_index_find(wp_cache *c, const uint8_t key[32]) {
    for (wp_kernel *k = c->buckets[bucket_of(c, key)]; k; k = k->hash_next)
        if (memcmp(k->key, key, 32) == 0) return k;
    return NULL;
}

static void index_grow(wp_cache *c) {
    size_t n = c->n_buckets * 2;
    wp_kernel **nb = calloc(n, sizeof *nb);
    if (!nb) return; /* chains just get longer */
    wp_kernel **old = c->buckets;
    size_t old_n = c->n_buckets;
    c->buckets = nb;
    c->n_buckets = n;
    for (size_t i = 0; i < old_n; i++)
        for (wp_kernel *k = old[i], *next; k; k = next) {
            next = k->hash_next;
            size_t b = bucket_of(c, k->key);
            k->hash_next = nb[b];
            nb[b] = k;
        }
    free(old);
}

static void index_insert(wp_cache *c, wp_kernel *k) {
    if (c->n_indexed >= c->n_buckets) index_grow(c);
    size_t b = bucket_of(c, k->key);
    k->hash_next = c->buckets[b];
    c->buckets[b] = k;
    k->indexed = true;
    atomic_fetch_add(&k->refs, 1);
    c->n_indexed++;
}

static void lru_unlink(wp_cache *c, wp_kernel *k) {
    if (k->lru_prev)
        k->lru_prev->lru_next = k->lru_next;
    else
        c->lru_head = k->lru_next;
    if (k->lru_next)
        k->lru_next->lru_prev = k->lru_prev;
    else
        c->lru_tail = k->lru_prev;
    k->lru_prev = k->lru_next = NULL;
}

/* k linked in after `after`, or at the head when after is NULL. */
static void lru_link_after(wp_cache *c, wp_kernel *after, wp_kernel *k) {
    wp_kernel *next = after ? after->lru_next : c->lru_head;
    k->lru_prev = after;
    k->lru_next = next;
    if (next)
        next->lru_prev = k;
    else
        c->lru_tail = k;
    if (after)
        after->lru_next = k;
    else
        c->lru_head = k;
}

static void lru_push_front(wp_cache *c, wp_kernel *k) { lru_link_after(c, NULL, k); }

/* Under mu: k (indexed, ready) moved to its place in the LRU by its last_used. */
static void lru_place(wp_cache *c, wp_kernel *k) {
    lru_unlink(c, k);
    wp_kernel *after = NULL; /* the last entry used later than k */
    for (wp_kernel *e = c->lru_head; e && e->last_used > k->last_used; e = e->lru_next) after = e;
    lru_link_after(c, after, k);
}

/* ---- a thread's memory hit without mu ----
 * A slot a thread (wp_thread_slot: the first WP_CACHE_PEEK_SLOTS threads to ask have one each; later
 * ones share) remembers the kernel its last locked hit found, with a reference of its own. A peek that
 * finds its key there takes a reference and counts the hit in the slot, under the slot's busy flag:
 * no lock (every HTTP thread asked mu on every small job, and under load they slept on it). The slots
 * are filled under mu after a locked hit, and settled under mu (their hits and last uses folded into
 * the entries and the stats; the entries used later than the LRU knew, moved up it) before anything
 * reads those: the stats, the listing, the LRU's order.
 *
 * Why it is safe: a slot's kernel stays allocated while the slot holds its reference, and every write
 * of a slot's kernel holds mu and the slot's busy flag. An entry that leaves the index (closing the
 * cache included) is first taken out of every slot that holds it (peek_forget waits out a peek in
 * flight, a few instructions, that returns it as a hit: as a locked peek just before the removal would
 * have), so no later peek returns it, and a slot holds only indexed kernels. A fill that finds the
 * slot busy (another thread sharing it, mid-peek) leaves it as it is. */

static bool slot_take(cache_peek_slot *s) { return !atomic_exchange_explicit(&s->busy, true, memory_order_acquire); }
static void slot_give(cache_peek_slot *s) { atomic_store_explicit(&s->busy, false, memory_order_release); }

static wp_kernel *peek_fast(wp_cache *c, cache_peek_slot *s, const uint8_t key[32], double now) {
    if (!slot_take(s)) return NULL;
    wp_kernel *k = s->k;
    const bool hit = k && memcmp(k->key, key, 32) == 0 && !(c->disk && now - s->touched >= WP_DISK_TOUCH_S);
    if (hit) {
        atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed); /* the slot holds one: never from zero */
        atomic_fetch_add_explicit(&s->hits, 1, memory_order_relaxed);
        atomic_store_explicit(&s->last_used, now, memory_order_relaxed);
    }
    slot_give(s);
    return hit ? k : NULL;
}

/* Under mu: the slot's hits counted in its kernel and the stats. */
static void fold_hits(wp_cache *c, cache_peek_slot *s) {
    const uint64_t h = atomic_exchange_explicit(&s->hits, 0, memory_order_relaxed);
    c->st.hits_memory += h;
    s->k->hits += h;
}

/* Under mu: the slot's hits and last use folded into its kernel. True when that last use is later than
 * the LRU knew (the caller moves it up). */
static bool slot_settle(wp_cache *c, cache_peek_slot *s) {
    wp_kernel *k = s->k;
    fold_hits(c, s);
    const double used = atomic_load_explicit(&s->last_used, memory_order_relaxed);
    if (used <= k->last_used) return false;
    k->last_used = used;
    return k->indexed && k->state == KERNEL_READY;
}

/* Under mu, after a locked hit on k (ready): k put in slot s, unless it is busy. The kernel it held
 * is settled and given back: a slot holds only indexed kernels (peek_forget), so the index's
 * reference remains and this one is never the last. */
static void peek_fill(wp_cache *c, cache_peek_slot *s, wp_kernel *k) {
    if (!slot_take(s)) return;
    wp_kernel *old = s->k;
    if (old && slot_settle(c, s)) lru_place(c, old);
    if (old) atomic_fetch_sub(&old->refs, 1);
    atomic_fetch_add(&k->refs, 1);
    s->k = k;
    s->touched = k->touched;
    atomic_store_explicit(&s->last_used, k->last_used, memory_order_relaxed);
    slot_give(s);
}

/* Under mu, as k leaves the index (its reference still held): every slot holding k gives it back. */
static void peek_forget(wp_cache *c, wp_kernel *k) {
    for (int i = 0; i < WP_CACHE_PEEK_SLOTS; i++) {
        cache_peek_slot *s = &c->peek[i];
        if (s->k != k) continue;
        while (!slot_take(s)) sched_yield(); /* a peek in flight: a few instructions, no lock */
        fold_hits(c, s);
        s->k = NULL;
        atomic_fetch_sub(&k->refs, 1); /* the index still holds one: not the last */
        slot_give(s);
    }
}

void cache_settle(wp_cache *c) {
    for (int i = 0; i < WP_CACHE_PEEK_SLOTS; i++)
        if (c->peek[i].k && slot_settle(c, &c->peek[i])) lru_place(c, c->peek[i].k);
}

/* Takes k out of the index (and the LRU when ready) and drops the index's reference.
 * Returns true when that was the last reference: the caller frees k after unlocking. */
bool cache_index_remove(wp_cache *c, wp_kernel *k) {
    peek_forget(c, k);
    wp_kernel **p = &c->buckets[bucket_of(c, k->key)];
    while (*p != k) p = &(*p)->hash_next;
    *p = k->hash_next;
    k->hash_next = NULL;
    if (k->state == KERNEL_READY) {
        lru_unlink(c, k);
        c->st.bytes -= k->bytes;
        c->st.entries--;
    }
    k->indexed = false;
    c->n_indexed--;
    return atomic_fetch_sub(&k->refs, 1) == 1;
}

/* Evicts from the cold end until under the cap; entries whose last reference that was are chained
 * through hash_next onto *dead for freeing outside the lock. */
static void evict_to_cap(wp_cache *c, wp_kernel **dead) {
    if (c->st.bytes > c->st.cap_bytes) cache_settle(c); /* the LRU's order */
    while (c->st.bytes > c->st.cap_bytes && c->lru_tail) {
        wp_kernel *k = c->lru_tail;
        c->st.evictions++;
        if (cache_index_remove(c, k)) {
            k->hash_next = *dead;
            *dead = k;
        }
    }
}

void cache_free_chain(wp_kernel *k) {
    for (wp_kernel *next; k; k = next) {
        next = k->hash_next;
        kernel_free(k);
    }
}

/* ---- disk store ---- */

static void disk_path(const wp_cache *c, const uint8_t key[32], char *out, size_t n) {
    wp_disk_path(c->dir, key, out, n);
}

static void count(wp_cache *c, uint64_t *field) {
    pthread_mutex_lock(&c->mu);
    (*field)++;
    pthread_mutex_unlock(&c->mu);
}

/* A corrupt file is counted and removed, and reads as a miss: the caller rebuilds and rewrites it.
 * A hit is recorded in the index (its last use is now); k gets the file's created time and key text. */
static wp_file_result disk_load(wp_cache *c, wp_kernel *k) {
    char path[CACHE_PATH_MAX];
    disk_path(c, k->key, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) count(c, &c->st.disk_errors);
        return WP_FILE_MISS;
    }
    struct stat sb;
    double created = 0;
    char *key_text = NULL;
    wp_file_result res = wp_cache_file_read(fd, k->key, &k->art, &created, &key_text);
    uint64_t bytes = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    close(fd);
    if (res == WP_FILE_CORRUPT) {
        unlink(path);
        wp_disk_forget(c->disk, k->key);
        count(c, &c->st.corrupt_files);
    } else if (res == WP_FILE_HIT) {
        if (created > 0) k->created = created;
        if (key_text && !k->key_text) k->key_text = key_text, key_text = NULL;
        wp_disk_hit(c->disk, k->key, bytes, k->key_text ? k->key_text : "", k->created);
    }
    free(key_text);
    return res;
}

/* Best effort: a store that fails is counted and the entry still serves from memory. Returns the
 * file's size (0 when not stored). */
static uint64_t disk_store(wp_cache *c, const uint8_t key[32], double created, const char *key_text,
                           const wp_artifact *a) {
    char path[CACHE_PATH_MAX];
    disk_path(c, key, path, sizeof path);
    uint64_t bytes = wp_cache_file_write(path, key, created, key_text, a);
    if (!bytes) count(c, &c->st.disk_errors);
    return bytes;
}

/* ---- the public face ---- */

wp_cache *wp_cache_open(const char *dir, size_t mem_cap, wp_err *err) {
    if (dir && strlen(dir) > CACHE_PATH_MAX - 80) {
        WP_FAIL(err, 500, "cache_dir", "", "cache directory path too long");
        return NULL;
    }
    if (dir && (wp_cache_dir_make(dir) || access(dir, R_OK | W_OK | X_OK))) {
        WP_FAIL(err, 500, "cache_dir", "", "cache directory %.150s: %s", dir, strerror(errno));
        return NULL;
    }
    const size_t size = (sizeof(wp_cache) + 63) / 64 * 64;
    wp_cache *c = aligned_alloc(64, size); /* its peek slots are a cache line each */
    if (c) memset(c, 0, size);
    wp_kernel **buckets = calloc(CACHE_MIN_BUCKETS, sizeof *buckets);
    char *dir_copy = dir ? strdup(dir) : NULL;
    wp_disk *disk = dir ? wp_disk_open(dir) : NULL;
    if (!c || !buckets || (dir && (!dir_copy || !disk)) || pthread_mutex_init(&c->mu, NULL)) {
        free(c);
        free(buckets);
        free(dir_copy);
        wp_disk_close(disk);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the cache");
        return NULL;
    }
    c->dir = dir_copy;
    c->disk = disk;
    if (c->dir) c->st.stale_tmp_removed = wp_cache_file_sweep(c->dir);
    c->buckets = buckets;
    c->n_buckets = CACHE_MIN_BUCKETS;
    c->st.cap_bytes = mem_cap;
    return c;
}

/* Every entry must have been released. */
void wp_cache_close(wp_cache *c) {
    if (!c) return;
    wp_kernel *dead = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_buckets; i++) /* each taken out of the peek slots first (peek_forget) */
        while (c->buckets[i]) {
            wp_kernel *k = c->buckets[i];
            if (cache_index_remove(c, k)) {
                k->hash_next = dead;
                dead = k;
            }
        }
    pthread_mutex_unlock(&c->mu);
    cache_free_chain(dead);
    pthread_mutex_destroy(&c->mu);
    wp_disk_close(c->disk);
    free(c->buckets);
    free(c->dir);
    free(c);
}

/* The last use of key in memory, for the disk index's LRU order. Called with the disk lock held,
 * which is taken before mu (cache_disk.h). */
double cache_memory_last_used(void *ctx, const uint8_t key[32]) {
    wp_cache *c = ctx;
    pthread_mutex_lock(&c->mu);
    cache_settle(c);
    wp_kernel *k = cache_index_find(c, key);
    double t = k && k->state == KERNEL_READY ? k->last_used : 0;
    pthread_mutex_unlock(&c->mu);
    return t;
}

void wp_cache_set_disk_max(wp_cache *c, uint64_t bytes) {
    if (!c->disk) return;
    wp_disk_set_cap(c->disk, bytes);
    wp_disk_enforce(c->disk, cache_memory_last_used, c);
}

bool wp_cache_contains(wp_cache *c, const uint8_t key[32]) {
    pthread_mutex_lock(&c->mu);
    bool in_memory = cache_index_find(c, key) != NULL;
    pthread_mutex_unlock(&c->mu);
    if (in_memory || !c->dir) return in_memory;
    char path[CACHE_PATH_MAX];
    struct stat sb;
    disk_path(c, key, path, sizeof path);
    return stat(path, &sb) == 0;
}

/* A memory hit: most recently used, counted. Under mu. True when the caller should refresh the
 * file's mtime (after unlocking), so other daemons see the use. */
static bool note_memory_hit(wp_cache *c, wp_kernel *k, double now) {
    c->st.hits_memory++;
    k->hits++;
    k->last_used = now;
    if (k->indexed && c->lru_head != k) {
        lru_unlink(c, k);
        lru_push_front(c, k);
    }
    if (!c->disk || k->last_used - k->touched < WP_DISK_TOUCH_S) return false;
    k->touched = k->last_used;
    return true;
}

/* Waits for an entry someone else is building. Under mu; k holds our reference. */
static wp_kernel *wait_for_build(wp_cache *c, wp_kernel *k, bool *touch, wp_err *err) {
    while (k->state == KERNEL_BUILDING) pthread_cond_wait(&k->changed, &c->mu);
    if (k->state == KERNEL_READY) {
        *touch = note_memory_hit(c, k, wp_unix_now());
        return k;
    }
    if (err) *err = k->build_err;
    return NULL;
}

/* Every HTTP thread asks here: first its slot, without the lock (above); a locked hit fills it. */
wp_kernel *wp_cache_peek(wp_cache *c, const uint8_t key[32]) {
    const double now = wp_unix_now();
    cache_peek_slot *s = &c->peek[wp_thread_slot(WP_CACHE_PEEK_BITS)];
    wp_kernel *k = peek_fast(c, s, key, now);
    if (k) return k;
    bool touch = false;
    pthread_mutex_lock(&c->mu);
    k = cache_index_find(c, key);
    if (k && k->state == KERNEL_READY) {
        atomic_fetch_add(&k->refs, 1);
        touch = note_memory_hit(c, k, now);
        peek_fill(c, s, k);
    } else {
        k = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (touch) wp_disk_touch(c->disk, key);
    return k;
}

/* We are the one builder for k: from the disk, or through build (then stored). 0 or -1 with *err. */
static int build_entry(wp_cache *c, wp_kernel *k, wp_build_fn build, void *ctx, wp_source *from, wp_err *err) {
    *from = WP_SRC_DISK;
    if (c->dir && disk_load(c, k) == WP_FILE_HIT) return 0;
    *from = WP_SRC_COMPILE;
    memset(&k->art, 0, sizeof k->art);
    k->art.regs = k->art.spills = -1;
    int rc = build(ctx, &k->art, err);
    if (rc && err->status == 0) WP_FAIL(err, 500, "build_failed", "", "the build failed without saying why");
    if (rc) {
        wp_artifact_free(&k->art);
        return -1;
    }
    if (c->dir) {
        uint64_t bytes = disk_store(c, k->key, k->created, k->key_text, &k->art);
        if (bytes) {
            wp_disk_stored(c->disk, k->key, bytes, k->key_text ? k->key_text : "", k->created);
            wp_disk_enforce(c->disk, cache_memory_last_used, c);
        }
    }
    return 0;
}

/* Under mu: the build is over; publishes k or, failed, takes it out. Frees go onto *dead. */
static void finish_build(wp_cache *c, wp_kernel *k, wp_source from, int rc, const wp_err *build_err, wp_kernel **dead) {
    if (from == WP_SRC_DISK)
        c->st.hits_disk++;
    else
        c->st.misses++;
    if (rc == 0) {
        if (from == WP_SRC_COMPILE) c->st.compiles++;
        k->state = KERNEL_READY;
        k->last_used = wp_unix_now();
        k->bytes = wp_artifact_bytes(&k->art);
        if (k->indexed) { /* a prune may have taken it out while it was being built */
            c->st.bytes += k->bytes;
            c->st.entries++;
            lru_push_front(c, k);
            evict_to_cap(c, dead);
        }
    } else {
        c->st.compile_failures++;
        k->build_err = *build_err;
        k->state = KERNEL_FAILED;
        if (k->indexed) cache_index_remove(c, k); /* not cached: the next ask builds again */
        if (atomic_fetch_sub(&k->refs, 1) == 1) { /* ours */
            k->hash_next = *dead;
            *dead = k;
        }
    }
    pthread_cond_broadcast(&k->changed);
}

wp_kernel *wp_cache_get_named(wp_cache *c, const uint8_t key[32], const char *key_text, wp_build_fn build, void *ctx,
                              wp_source *src, wp_err *err) {
    pthread_mutex_lock(&c->mu);
    wp_kernel *k = cache_index_find(c, key);
    if (k) {
        bool touch = false;
        atomic_fetch_add(&k->refs, 1);
        wp_kernel *got = wait_for_build(c, k, &touch, err);
        bool last = !got && atomic_fetch_sub(&k->refs, 1) == 1;
        pthread_mutex_unlock(&c->mu);
        if (last) kernel_free(k);
        if (touch) wp_disk_touch(c->disk, key);
        if (got && src) *src = WP_SRC_MEMORY;
        return got;
    }
    k = kernel_new(c, key);
    if (k && key_text && !(k->key_text = strdup(key_text))) {
        kernel_free(k);
        k = NULL;
    }
    if (!k) {
        pthread_mutex_unlock(&c->mu);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory in the cache");
        return NULL;
    }
    atomic_store(&k->refs, 1); /* ours; the index adds its own */
    index_insert(c, k);
    pthread_mutex_unlock(&c->mu);

    /* We are the one builder for this key; everyone else waits on k->changed. */
    wp_source from;
    wp_err build_err = {0};
    int rc = build_entry(c, k, build, ctx, &from, &build_err);

    wp_kernel *dead = NULL;
    pthread_mutex_lock(&c->mu);
    finish_build(c, k, from, rc, &build_err, &dead);
    pthread_mutex_unlock(&c->mu);
    cache_free_chain(dead);
    if (rc) {
        if (err) *err = build_err;
        return NULL;
    }
    if (src) *src = from;
    return k;
}

wp_kernel *wp_cache_get(wp_cache *c, const uint8_t key[32], wp_build_fn build, void *ctx, wp_source *src, wp_err *err) {
    return wp_cache_get_named(c, key, NULL, build, ctx, src, err);
}

void wp_kernel_release(wp_cache *c, wp_kernel *k) {
    (void)c; /* no lock: the last reference frees (cache.c's top) */
    if (!k) return;
    if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) kernel_free(k);
}

const wp_artifact *wp_kernel_artifact(const wp_kernel *k) { return &k->art; }

/* The slot of backend in k->fns, claiming a free one; -1 when all are taken by others. mu held. */
static int fn_slot(wp_kernel *k, void *backend) {
    int free_slot = -1;
    for (int i = 0; i < WP_KERNEL_BACKENDS; i++) {
        if (k->fns[i].backend == backend) return i;
        if (!k->fns[i].backend && free_slot < 0) free_slot = i;
    }
    if (free_slot >= 0) k->fns[free_slot].backend = backend;
    return free_slot;
}

/* The function k has loaded on backend, or NULL; without the lock (cache.c's top). */
static void *fn_loaded(wp_kernel *k, const void *backend) {
    for (int i = 0; i < WP_KERNEL_BACKENDS; i++)
        if (atomic_load_explicit(&k->fns[i].state, memory_order_acquire) == FN_LOADED && k->fns[i].backend == backend)
            return k->fns[i].fn;
    return NULL;
}

int wp_kernel_function(wp_kernel *k, void *backend, wp_load_fn load, wp_unload_fn unload, void **fn, wp_err *err) {
    wp_cache *c = k->cache;
    if ((*fn = fn_loaded(k, backend))) return 0;
    pthread_mutex_lock(&c->mu);
    int i = fn_slot(k, backend);
    if (i < 0) {
        pthread_mutex_unlock(&c->mu);
        return WP_FAIL(err, 500, "internal", "", "a kernel is loaded on more than %d backends", WP_KERNEL_BACKENDS);
    }
    while (k->fns[i].state == FN_LOADING) pthread_cond_wait(&k->changed, &c->mu);
    if (k->fns[i].state == FN_LOADED) {
        *fn = k->fns[i].fn;
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    k->fns[i].state = FN_LOADING;
    pthread_mutex_unlock(&c->mu);

    void *loaded = NULL;
    int rc = load(backend, &k->art, &loaded, err);

    pthread_mutex_lock(&c->mu);
    if (rc == 0) {
        k->fns[i].fn = loaded;
        k->fns[i].unload = unload;
        k->fns[i].state = FN_LOADED;
        *fn = loaded;
    } else {
        k->fns[i].state = FN_NONE; /* not sticky: a waiter (or the next caller) tries again */
    }
    pthread_cond_broadcast(&k->changed);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void wp_cache_stats_get(wp_cache *c, wp_cache_stats *out) {
    wp_disk_stats ds = {0};
    if (c->disk) wp_disk_stats_get(c->disk, &ds); /* before mu: the lock order */
    pthread_mutex_lock(&c->mu);
    cache_settle(c);
    *out = c->st;
    pthread_mutex_unlock(&c->mu);
    out->disk_entries = ds.entries;
    out->disk_bytes = ds.bytes;
    out->disk_cap_bytes = ds.cap;
    out->disk_evictions = ds.evictions;
    out->disk_removed = ds.removed;
}

const char *wp_cache_dir(const wp_cache *c) { return c->dir; }
