/* cache_impl.h — wp_cache and wp_kernel as the cache*.c files that share them see them (cache.c: the
 * index, the LRU, builds, loads; cache_list.c: listing, removal, pruning). Locking: cache.c's top.
 * Nothing else includes it. */
#ifndef WP_CACHE_IMPL_H
#define WP_CACHE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "cache.h"
#include "cache_disk.h"

typedef enum { KERNEL_BUILDING, KERNEL_READY, KERNEL_FAILED } kernel_state;
typedef enum { FN_NONE, FN_LOADING, FN_LOADED } fn_state;

struct wp_kernel {
    uint8_t key[32];
    wp_artifact art;
    size_t bytes; /* wp_artifact_bytes, counted while indexed and ready */
    /* users, plus one while indexed: raised under mu (from the index or a holder), dropped anywhere */
    atomic_int refs;
    kernel_state state;
    wp_err build_err; /* KERNEL_FAILED: what the waiters get */
    bool indexed;     /* in the hash index (and, once ready, the LRU) */
    wp_kernel *hash_next, *lru_prev, *lru_next;
    pthread_cond_t changed;
    /* The loaded function on each backend (device) that ran it. state is written under mu; FN_LOADED is
     * final, and fn and backend are then read without mu. */
    struct {
        _Atomic fn_state state;
        void *fn, *backend;
        wp_unload_fn unload;
    } fns[WP_KERNEL_BACKENDS];
    wp_cache *cache;
    char *key_text;                     /* what the key was made from ("" when not given) */
    double created, last_used, touched; /* Unix seconds: made, last asked for, file mtime last set */
    uint64_t hits;                      /* memory hits */
};

/* A thread's memory hit without mu (cache.c): the kernel of its last locked hit, with a reference of
 * the slot's. k and touched are written under mu and busy; hits and last_used by the owner's peeks
 * under busy, and taken in (settled) under mu. */
#define WP_CACHE_PEEK_BITS 6
#define WP_CACHE_PEEK_SLOTS (1 << WP_CACHE_PEEK_BITS)
typedef struct {
    _Alignas(64) atomic_bool busy;
    wp_kernel *k;   /* NULL: empty */
    double touched; /* k->touched when filled: a hit past WP_DISK_TOUCH_S takes the lock (it touches the file) */
    atomic_uint_least64_t hits; /* hits served here, not yet in k->hits and st.hits_memory */
    _Atomic double last_used;   /* the last of them */
} cache_peek_slot;

struct wp_cache {
    pthread_mutex_t mu;
    char *dir; /* NULL: memory only */
    wp_kernel **buckets;
    size_t n_buckets, n_indexed;
    wp_kernel *lru_head, *lru_tail; /* ready entries, most recent first */
    wp_cache_stats st;
    wp_disk *disk;                             /* the files' index and cap (cache_disk.c); NULL when memory only */
    cache_peek_slot peek[WP_CACHE_PEEK_SLOTS]; /* a thread's memory hit without mu (cache.c) */
};

/* cache.c: the index (under mu) */
wp_kernel *cache_index_find(wp_cache *c, const uint8_t key[32]);
/* Takes k out of the index (and the LRU when ready) and drops the index's reference.
 * Returns true when that was the last reference: the caller frees k after unlocking. */
bool cache_index_remove(wp_cache *c, wp_kernel *k);
void cache_free_chain(wp_kernel *k); /* frees k and the entries chained to it through hash_next */
/* Under mu: every peek slot's hits and last use taken into the entries, the stats and the LRU's order
 * Before anything reads them. */
void cache_settle(wp_cache *c);

/* The last use of key in memory, for the disk index's LRU order (cache_disk.h's callback; ctx: the cache). */
double cache_memory_last_used(void *ctx, const uint8_t key[32]);

#endif
