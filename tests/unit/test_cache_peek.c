/* test_cache_peek.c — the cache's memory hit without its lock (cache.c's slots): a thread's second peek
 * of a key is served from its slot and counted exactly as a locked hit (stats, listing, per-entry
 * hits), its last use still orders the LRU and the listing, an entry removed, pruned or evicted is
 * never served from a slot again, and a slot's reference is given back (ASan's leak check), also
 * while threads peek, remove and rebuild at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/cache.h"
#include "t.h"
#include "util/sha256.h"

static int build_fn(void *ctx, wp_artifact *out, wp_err *err) {
    (void)err;
    atomic_fetch_add((atomic_int *)ctx, 1);
    out->cubin_len = 1000;
    out->cubin = calloc(1, out->cubin_len);
    return out->cubin ? 0 : -1;
}

static void key_of(const char *name, uint8_t key[32]) { wp_sha256(name, strlen(name), key); }

/* A build (or a memory hit) of name, released. */
static wp_source build(wp_cache *c, const char *name, atomic_int *builds) {
    uint8_t key[32];
    key_of(name, key);
    wp_source src = WP_SRC_MEMORY;
    wp_kernel_release(c, wp_cache_get(c, key, build_fn, builds, &src, NULL));
    return src;
}

/* A peek of name: 1 found (released), 0 not. */
static int peek(wp_cache *c, const char *name) {
    uint8_t key[32];
    key_of(name, key);
    wp_kernel *k = wp_cache_peek(c, key);
    wp_kernel_release(c, k);
    return k != NULL;
}

static uint64_t listed_hits(wp_cache *c, const char *name, int *rank) {
    uint8_t key[32];
    key_of(name, key);
    wp_cache_entry *v = NULL;
    size_t n = 0;
    uint64_t hits = UINT64_MAX;
    if (wp_cache_list(c, &v, &n, NULL) == 0)
        for (size_t i = 0; i < n; i++)
            if (!memcmp(v[i].key, key, 32)) hits = v[i].hits, *rank = (int)i;
    free(v);
    return hits;
}

static void test_counts(void) {
    T_CASE("slot hits counted as locked hits");
    atomic_int builds = 0;
    wp_cache *c = wp_cache_open(NULL, 1 << 20, NULL);
    build(c, "A", &builds);
    usleep(2000);
    build(c, "B", &builds);
    for (int i = 0; i < 5; i++) CHECK(peek(c, "A")); /* the first locked (it fills the slot), then the slot */
    int rank = -1;
    CHECK(listed_hits(c, "A", &rank) == 5 && rank == 0); /* used after B: listed first */
    CHECK(listed_hits(c, "B", &rank) == 0 && rank == 1);
    CHECK(peek(c, "A"));
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.hits_memory == 6 && st.entries == 2);
    CHECK(!peek(c, "absent"));

    T_CASE("a removed entry is not served from the slot");
    uint8_t key[32];
    key_of("A", key);
    CHECK(wp_cache_remove(c, key, WP_TIER_ALL) == WP_TIER_MEMORY);
    CHECK(!peek(c, "A"));
    CHECK(build(c, "A", &builds) == WP_SRC_COMPILE && atomic_load(&builds) == 3);
    CHECK(peek(c, "A") && peek(c, "A"));
    wp_cache_stats_get(c, &st);
    CHECK(st.hits_memory == 8);

    T_CASE("a pruned entry is not served from the slot");
    wp_cache_pruned pr;
    wp_cache_prune(c, 0, WP_TIER_MEMORY, &pr);
    CHECK(pr.memory_entries == 2 && !peek(c, "A") && !peek(c, "B"));
    wp_cache_close(c); /* the slot held nothing: the prune took it back */

    T_CASE("close gives the slot's reference back");
    c = wp_cache_open(NULL, 1 << 20, NULL);
    build(c, "C", &builds);
    CHECK(peek(c, "C") && peek(c, "C"));
    wp_cache_close(c); /* ASan: no leak of C */
}

static void test_lru(void) {
    T_CASE("a slot's hits keep its entry from eviction");
    atomic_int builds = 0;
    wp_cache *probe = wp_cache_open(NULL, 1 << 20, NULL);
    build(probe, "probe", &builds);
    wp_cache_stats st;
    wp_cache_stats_get(probe, &st);
    wp_cache_close(probe);
    wp_cache *c = wp_cache_open(NULL, st.bytes * 7 / 2, NULL); /* three entries, not four */
    build(c, "A", &builds);
    usleep(2000);
    CHECK(peek(c, "A")); /* locked: A is most recent, and in the slot */
    usleep(2000);
    build(c, "B", &builds);
    usleep(2000);
    build(c, "C", &builds);
    usleep(2000);
    CHECK(peek(c, "A")); /* from the slot: only the slot knows A is now the most recent */
    usleep(2000);
    build(c, "D", &builds); /* evicts the coldest: B */
    wp_cache_stats_get(c, &st);
    CHECK(st.evictions == 1 && st.entries == 3);
    CHECK(peek(c, "A") && !peek(c, "B") && peek(c, "C") && peek(c, "D"));
    CHECK(build(c, "B", &builds) == WP_SRC_COMPILE);
    wp_cache_close(c);
}

/* ---- threads peeking while another removes and rebuilds ---- */

typedef struct {
    wp_cache *c;
    atomic_bool *stop;
    uint64_t found;
} peeker;

static void *peek_loop(void *arg) {
    peeker *p = arg;
    while (!atomic_load(p->stop)) p->found += (uint64_t)peek(p->c, (p->found & 1) ? "hot" : "warm");
    return NULL;
}

static void test_threads(void) {
    T_CASE("peeks while entries leave and come back");
    atomic_int builds = 0;
    atomic_bool stop = false;
    wp_cache *c = wp_cache_open(NULL, 1 << 20, NULL);
    build(c, "hot", &builds);
    build(c, "warm", &builds);
    enum { N = 4 };
    peeker p[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        p[i] = (peeker){.c = c, .stop = &stop};
        pthread_create(&t[i], NULL, peek_loop, &p[i]);
    }
    uint8_t key[32];
    for (int round = 0; round < 300; round++) {
        key_of(round & 1 ? "hot" : "warm", key);
        wp_cache_remove(c, key, WP_TIER_MEMORY);
        usleep(100);
        build(c, round & 1 ? "hot" : "warm", &builds);
    }
    atomic_store(&stop, true);
    uint64_t found = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        found += p[i].found;
    }
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECKF(st.hits_memory == found, "%llu hits, %llu found", (unsigned long long)st.hits_memory,
           (unsigned long long)found);
    CHECK(found > 0 && st.entries == 2);
    wp_cache_close(c);
}

int main(void) {
    test_counts();
    test_lru();
    test_threads();
    return t_done("cache_peek");
}
