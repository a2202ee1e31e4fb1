/* cache.h — where compiled kernels live: a memory LRU (byte cap) in front of a content-addressed
 * disk store. Files are written to a temporary name and renamed; each carries a SHA-256 of its
 * payload, and a torn or corrupted file is removed and rebuilt, never loaded. Concurrent requests
 * for one cold key cause exactly one build. Knows nothing of HTTP or NVRTC: the caller passes a
 * build callback. Entries are refcounted; an evicted entry lives until its last user releases it. */
#ifndef WP_CACHE_H
#define WP_CACHE_H

#include "jit.h"
#include "util/common.h"

typedef struct wp_cache wp_cache;
typedef struct wp_kernel wp_kernel; /* a cached entry: artifact + (lazily) a loaded function */

typedef enum { WP_SRC_MEMORY, WP_SRC_DISK, WP_SRC_COMPILE } wp_source;
const char *wp_source_name(wp_source s); /* "memory", "disk", "compile" */

typedef int (*wp_build_fn)(void *ctx, wp_artifact *out, wp_err *err);

/* dir NULL: memory only. mem_cap in bytes (wp_artifact_bytes). The directory is created (0700) if
 * missing. Close only after every entry has been released. */
wp_cache *wp_cache_open(const char *dir, size_t mem_cap, wp_err *err);
void wp_cache_close(wp_cache *c);

/* Returns a referenced entry (release it), or NULL with *err. *src says where it came from: the one
 * thread that built a cold key gets WP_SRC_DISK or WP_SRC_COMPILE; threads that asked for the same
 * key while it was being built wait for it and get WP_SRC_MEMORY. A failed build is returned to the
 * builder and every waiter, and not cached. `build` fills a zeroed artifact; on failure whatever it
 * left there is freed with wp_artifact_free. */
wp_kernel *wp_cache_get(wp_cache *c, const uint8_t key[32], wp_build_fn build, void *ctx, wp_source *src, wp_err *err);
/* The same, with the text the key was made from (kept with the entry, in its file and in listings). */
wp_kernel *wp_cache_get_named(wp_cache *c, const uint8_t key[32], const char *key_text, wp_build_fn build, void *ctx,
                              wp_source *src, wp_err *err);
void wp_kernel_release(wp_cache *c, wp_kernel *k);
/* The entry if it is ready in memory (a memory hit, referenced), else NULL: never builds, never
 * reads the disk, never waits. For callers that must not block. Any thread; a thread that asks for
 * the key it asked for last takes no lock (cache.c). */
wp_kernel *wp_cache_peek(wp_cache *c, const uint8_t key[32]);
const wp_artifact *wp_kernel_artifact(const wp_kernel *k);

/* The backend's loaded function for this entry, loaded once per backend — each device has its own
 * (first caller loads, others wait) — from the entry's one artifact. unload is called for each when
 * the entry is finally freed. At most WP_KERNEL_BACKENDS backends per entry. */
#define WP_KERNEL_BACKENDS 17 /* 16 devices and the emulator */
typedef int (*wp_load_fn)(void *backend, const wp_artifact *a, void **fn, wp_err *err);
typedef void (*wp_unload_fn)(void *backend, void *fn);
int wp_kernel_function(wp_kernel *k, void *backend, wp_load_fn load, wp_unload_fn unload, void **fn, wp_err *err);

/* misses: asks found in neither memory nor disk (a build ran); compiles: builds that succeeded;
 * corrupt_files: disk files removed as torn or damaged; disk_errors: reads or writes that failed
 * (the entry still serves from memory); stale_tmp_removed: temp files of crashed writers removed at
 * open. entries/bytes: what the memory LRU holds now. */
typedef struct {
    uint64_t hits_memory, hits_disk, misses, compiles, compile_failures, evictions, corrupt_files, disk_errors;
    uint64_t stale_tmp_removed;
    uint64_t entries, bytes, cap_bytes;
    uint64_t removed; /* memory entries taken out by wp_cache_remove / wp_cache_prune */
    /* The disk store as this process last counted it (cache_disk.h): files, their bytes, the cap
     * (0: none), files evicted for the cap, files removed by wp_cache_remove / wp_cache_prune. */
    uint64_t disk_entries, disk_bytes, disk_cap_bytes, disk_evictions, disk_removed;
} wp_cache_stats;
void wp_cache_stats_get(wp_cache *c, wp_cache_stats *out);
const char *wp_cache_dir(const wp_cache *c); /* NULL when memory only */

/* ---- control: cap, listing, removal (any thread; each takes the locks it needs) ----
 * The disk store holds at most `bytes` (file sizes; 0: no cap): past it, the least recently used
 * files are removed (cache_disk.h says how last use is shared between daemons on one directory).
 * Applied at once. No effect on a memory-only cache. */
void wp_cache_set_disk_max(wp_cache *c, uint64_t bytes);
/* Whether key is in memory (ready or being built) or has a file on disk: a get would not compile. */
bool wp_cache_contains(wp_cache *c, const uint8_t key[32]);

enum { WP_TIER_MEMORY = 1, WP_TIER_DISK = 2, WP_TIER_ALL = 3 };
#define WP_CACHE_KEY_TEXT_MAX 640 /* WP_SPEC_KEY_MAX (spec.h): a long operator's key whole */
typedef struct {
    uint8_t key[32];
    char key_text[WP_CACHE_KEY_TEXT_MAX]; /* "" when unknown (a file written by warpd before 0.2) */
    uint64_t memory_bytes, disk_bytes;    /* per tier; 0 where absent */
    double created, last_used;            /* Unix seconds; created 0: unknown */
    uint64_t hits;                        /* hits in this process (memory and disk) */
    unsigned tiers;                       /* WP_TIER_MEMORY | WP_TIER_DISK */
} wp_cache_entry;
/* Every entry of both tiers (the disk rescanned first), most recently used first. *out malloc'd. */
int wp_cache_list(wp_cache *c, wp_cache_entry **out, size_t *n, wp_err *err);

/* Removes one entry from the tiers asked for; returns the tiers it was removed from (0: not there).
 * An entry in use stays alive for its users until they release it; an entry being built is not
 * cached yet and is left alone. A later get rebuilds or reloads it. */
unsigned wp_cache_remove(wp_cache *c, const uint8_t key[32], unsigned tiers);

/* Removes every entry not used for older_than_s seconds (<= 0: every entry), same rules. */
typedef struct {
    uint64_t memory_entries, memory_bytes, disk_entries, disk_bytes;
} wp_cache_pruned;
void wp_cache_prune(wp_cache *c, double older_than_s, unsigned tiers, wp_cache_pruned *out);

#endif
