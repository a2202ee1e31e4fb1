/* cache_list.c — the caches under control: every entry of both tiers listed (memory and disk merged,
 * most recently used first), one entry removed, entries unused for a while pruned, from the tiers asked for.
 * Owns: nothing; it works on cache.c's index and the disk store (cache_disk.h) under their locks. */
#include "cache_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- listing, removal, pruning ---- */

static int key_cmp(const void *a, const void *b) { return memcmp(a, b, 32); }
static int recent_first(const void *a, const void *b) {
    double x = ((const wp_cache_entry *)a)->last_used, y = ((const wp_cache_entry *)b)->last_used;
    return x > y ? -1 : x < y;
}

/* The memory tier's ready entries, appended to v (room for all of them is made here). Under mu. */
static int list_memory(wp_cache *c, wp_cache_entry **v, size_t *n) {
    cache_settle(c);
    wp_cache_entry *grown = realloc(*v, (*n + c->st.entries + 1) * sizeof **v);
    if (!grown) return -1;
    *v = grown;
    for (wp_kernel *k = c->lru_head; k; k = k->lru_next) {
        wp_cache_entry *e = &(*v)[(*n)++];
        memset(e, 0, sizeof *e);
        memcpy(e->key, k->key, 32);
        snprintf(e->key_text, sizeof e->key_text, "%s", k->key_text ? k->key_text : "");
        e->memory_bytes = k->bytes;
        e->created = k->created;
        e->last_used = k->last_used;
        e->hits = k->hits;
        e->tiers = WP_TIER_MEMORY;
    }
    return 0;
}

/* Folds v[from..] (memory) into v[..from) (disk) where the keys match; both sorted by key. */
static size_t merge_tiers(wp_cache_entry *v, size_t from, size_t n) {
    size_t d = 0, out = from;
    for (size_t m = from; m < n; m++) {
        while (d < from && memcmp(v[d].key, v[m].key, 32) < 0) d++;
        if (d < from && memcmp(v[d].key, v[m].key, 32) == 0) {
            wp_cache_entry *e = &v[d];
            e->tiers |= WP_TIER_MEMORY;
            e->memory_bytes = v[m].memory_bytes;
            e->hits += v[m].hits;
            if (v[m].last_used > e->last_used) e->last_used = v[m].last_used;
            if (!e->key_text[0]) memcpy(e->key_text, v[m].key_text, sizeof e->key_text);
            if (e->created <= 0) e->created = v[m].created;
        } else {
            v[out++] = v[m];
        }
    }
    return out;
}

int wp_cache_list(wp_cache *c, wp_cache_entry **out, size_t *n, wp_err *err) {
    wp_cache_entry *v = NULL;
    size_t nd = 0;
    wp_disk_entry *disk = NULL;
    if (c->disk && wp_disk_list(c->disk, &disk, &nd)) goto oom; /* before mu: the lock order */
    v = malloc((nd + 1) * sizeof *v);
    if (!v) goto oom;
    for (size_t i = 0; i < nd; i++) {
        wp_cache_entry *e = &v[i];
        memset(e, 0, sizeof *e);
        memcpy(e->key, disk[i].key, 32);
        snprintf(e->key_text, sizeof e->key_text, "%s", disk[i].key_text);
        e->disk_bytes = disk[i].bytes;
        e->created = disk[i].created;
        e->last_used = disk[i].last_used;
        e->hits = disk[i].hits;
        e->tiers = WP_TIER_DISK;
    }
    free(disk);
    disk = NULL;
    size_t total = nd;
    pthread_mutex_lock(&c->mu);
    int rc = list_memory(c, &v, &total);
    pthread_mutex_unlock(&c->mu);
    if (rc) goto oom;
    qsort(v, nd, sizeof *v, key_cmp);
    qsort(v + nd, total - nd, sizeof *v, key_cmp);
    total = merge_tiers(v, nd, total);
    qsort(v, total, sizeof *v, recent_first);
    *out = v;
    *n = total;
    return 0;
oom:
    free(disk);
    free(v);
    return WP_FAIL(err, 500, "out_of_memory", "", "out of memory listing the cache");
}

/* Takes k out of the memory tier (its users keep it until they release it). Under mu. */
static void drop_memory(wp_cache *c, wp_kernel *k, wp_kernel **dead) {
    c->st.removed++;
    if (cache_index_remove(c, k)) {
        k->hash_next = *dead;
        *dead = k;
    }
}

unsigned wp_cache_remove(wp_cache *c, const uint8_t key[32], unsigned tiers) {
    unsigned removed = 0;
    if ((tiers & WP_TIER_MEMORY)) {
        wp_kernel *dead = NULL;
        pthread_mutex_lock(&c->mu);
        wp_kernel *k = cache_index_find(c, key);
        if (k && k->state == KERNEL_READY) { /* one being built is not cached yet */
            drop_memory(c, k, &dead);
            removed |= WP_TIER_MEMORY;
        }
        pthread_mutex_unlock(&c->mu);
        cache_free_chain(dead);
    }
    if ((tiers & WP_TIER_DISK) && c->disk && wp_disk_remove(c->disk, key)) removed |= WP_TIER_DISK;
    return removed;
}

void wp_cache_prune(wp_cache *c, double older_than_s, unsigned tiers, wp_cache_pruned *out) {
    memset(out, 0, sizeof *out);
    double cutoff = older_than_s > 0 ? wp_unix_now() - older_than_s : HUGE_VAL;
    if ((tiers & WP_TIER_DISK) && c->disk)
        out->disk_entries = wp_disk_prune(c->disk, cutoff, cache_memory_last_used, c, &out->disk_bytes);
    if (!(tiers & WP_TIER_MEMORY)) return;
    wp_kernel *dead = NULL;
    pthread_mutex_lock(&c->mu);
    cache_settle(c); /* the LRU's order */
    for (wp_kernel *k = c->lru_tail, *prev; k && k->last_used < cutoff; k = prev) {
        prev = k->lru_prev;
        out->memory_entries++;
        out->memory_bytes += k->bytes;
        drop_memory(c, k, &dead);
    }
    pthread_mutex_unlock(&c->mu);
    cache_free_chain(dead);
}
