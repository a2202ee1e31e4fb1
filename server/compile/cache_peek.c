/* cache_peek.c — the memory hit without the cache's lock: a slot a thread (wp_thread_slot: the first
 * WP_CACHE_PEEK_SLOTS threads to ask have one each; later ones share) that remembers the kernel its
 * last locked hit found, with a reference of its own. A peek that finds its key there takes a
 * reference and counts the hit in the slot; nothing it writes is shared with other threads. Every HTTP
 * thread asked the cache's mutex on every small job, and under load they slept on it.
 * Owns: the slots of a wp_cache (cache_impl.h). cache.c fills them under mu after a locked hit, and
 * settles them (their hits and last uses folded into the entries and the stats; the entries used later
 * than the LRU knew, moved up it there) under mu before anything reads those: the stats, the listing,
 * the LRU's order.
 *
 * Why it is safe: a slot's kernel stays allocated while the slot holds its reference. An entry that
 * leaves the index raises the cache's generation first (cache_index_remove), and a slot filled in an
 * older generation is not used; a peek that read the generation just before the raise returns the
 * entry as a hit, as a locked peek just before the removal would have. A slot's busy flag keeps its
 * owner's peek and a fill or a forget apart (a thread that finds it busy takes the lock instead). */
#include "cache_impl.h"

#include "util/common.h"

#include <stdint.h>
#include <string.h>

static cache_peek_slot *slot_of(wp_cache *c) { return &c->peek[wp_thread_slot(WP_CACHE_PEEK_BITS)]; }

static bool slot_take(cache_peek_slot *s) { return !atomic_exchange_explicit(&s->busy, true, memory_order_acquire); }
static void slot_give(cache_peek_slot *s) { atomic_store_explicit(&s->busy, false, memory_order_release); }

wp_kernel *cache_peek_fast(wp_cache *c, const uint8_t key[32], double now) {
    cache_peek_slot *s = slot_of(c);
    if (!slot_take(s)) return NULL;
    wp_kernel *k = s->k;
    const bool hit = k && s->gen == atomic_load_explicit(&c->gen, memory_order_acquire) &&
                     memcmp(k->key, key, 32) == 0 && !(c->disk && now - s->touched >= WP_DISK_TOUCH_S);
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
 * the kernel's (an indexed one then moves up the LRU: cache.c's). */
static bool slot_settle(wp_cache *c, cache_peek_slot *s) {
    wp_kernel *k = s->k;
    fold_hits(c, s);
    const double used = atomic_load_explicit(&s->last_used, memory_order_relaxed);
    if (used <= k->last_used) return false;
    k->last_used = used;
    return k->indexed && k->state == KERNEL_READY;
}

int cache_peek_settle(wp_cache *c, wp_kernel **moved) {
    int n = 0;
    for (int i = 0; i < WP_CACHE_PEEK_SLOTS; i++)
        if (c->peek[i].k && slot_settle(c, &c->peek[i])) moved[n++] = c->peek[i].k;
    return n;
}

wp_kernel *cache_peek_fill(wp_cache *c, wp_kernel *k, bool *old_moved) {
    cache_peek_slot *s = slot_of(c);
    *old_moved = false;
    if (!slot_take(s)) return NULL;
    wp_kernel *old = s->k;
    if (old) *old_moved = slot_settle(c, s);
    atomic_fetch_add(&k->refs, 1);
    s->k = k;
    s->gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
    s->touched = k->touched;
    atomic_store_explicit(&s->last_used, k->last_used, memory_order_relaxed);
    slot_give(s);
    return old;
}

void cache_peek_forget(wp_cache *c, wp_kernel *k) {
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
    for (int i = 0; i < WP_CACHE_PEEK_SLOTS; i++) {
        cache_peek_slot *s = &c->peek[i];
        if (s->k != k || !slot_take(s)) continue; /* busy: its generation keeps it unused until refilled */
        fold_hits(c, s);
        s->k = NULL;
        atomic_fetch_sub(&k->refs, 1); /* the index still holds one: not the last */
        slot_give(s);
    }
}

wp_kernel *cache_peek_close(wp_cache *c) {
    wp_kernel *dead = NULL;
    for (int i = 0; i < WP_CACHE_PEEK_SLOTS; i++) {
        cache_peek_slot *s = &c->peek[i];
        wp_kernel *k = s->k;
        if (!k) continue;
        fold_hits(c, s);
        s->k = NULL;
        if (atomic_fetch_sub(&k->refs, 1) == 1) {
            k->hash_next = dead;
            dead = k;
        }
    }
    return dead;
}
