/* cache_disk.h — internal to the cache: the index of the disk store's files and its byte cap.
 *
 * The files <dir>/<2 hex>/<64 hex>.wpk are the truth, shared by every daemon that uses the directory
 * (each writes to a temporary name and renames, so a file is whole or absent). This index is what
 * one process knows of them: size, last use, hits, key text. It is built from the directory at open
 * and rebuilt whenever it may be stale: before an eviction (when it counts more than the cap), before
 * a listing or a prune, and at a store when the last scan is older than WP_DISK_RESCAN_S.
 *
 * Last use is the file's mtime, so every daemon sees every other's: a store writes it, a disk hit
 * sets it, and a memory hit sets it at most once per WP_DISK_TOUCH_S (cache.c decides when). An
 * eviction unlinks least recently used files until the total is at most the cap minus a tenth;
 * a process reading a file while it is unlinked keeps reading the whole file.
 *
 * Thread-safe: one mutex of its own. Lock order: the disk mutex is taken before the memory cache's
 * (the `recent` callbacks below are called with it held), never after. */
#ifndef WP_CACHE_DISK_H
#define WP_CACHE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WP_DISK_RESCAN_S 300.0   /* a store rescans the directory when the last scan is older */
#define WP_DISK_TOUCH_S 60.0     /* memory hits refresh a file's mtime at most this often */
#define WP_DISK_KEY_TEXT_MAX 640 /* as WP_CACHE_KEY_TEXT_MAX */

typedef struct wp_disk wp_disk;

typedef struct {
    uint8_t key[32];
    uint64_t bytes;
    double created;   /* Unix seconds; 0 when unknown (a file of format 1) */
    double last_used; /* Unix seconds */
    uint64_t hits;    /* disk hits in this process */
    char key_text[WP_DISK_KEY_TEXT_MAX];
} wp_disk_entry;

/* A later last use than the file's that the caller knows of (memory hits), or 0. */
typedef double (*wp_disk_recent_fn)(void *ctx, const uint8_t key[32]);

wp_disk *wp_disk_open(const char *dir); /* scans dir; NULL on OOM */
void wp_disk_close(wp_disk *d);
void wp_disk_path(const char *dir, const uint8_t key[32], char *out, size_t n);

/* cap 0: no cap. */
void wp_disk_set_cap(wp_disk *d, uint64_t cap);

/* A file was written (a store) or read (a hit, counted): its last use is now, and its mtime too. */
void wp_disk_stored(wp_disk *d, const uint8_t key[32], uint64_t bytes, const char *key_text, double created);
void wp_disk_hit(wp_disk *d, const uint8_t key[32], uint64_t bytes, const char *key_text, double created);
/* A memory hit: sets the file's mtime (if it exists) so other daemons see the use. */
void wp_disk_touch(wp_disk *d, const uint8_t key[32]);
/* The file was found corrupt and removed by the caller. */
void wp_disk_forget(wp_disk *d, const uint8_t key[32]);

/* Evicts least recently used files while the total is over the cap; returns how many. */
uint64_t wp_disk_enforce(wp_disk *d, wp_disk_recent_fn recent, void *ctx);
/* Unlinks one file: true when it existed. */
bool wp_disk_remove(wp_disk *d, const uint8_t key[32]);
/* Unlinks every file last used before `cutoff` (Unix seconds; a huge value: all). Returns how many,
 * and their bytes in *bytes. */
uint64_t wp_disk_prune(wp_disk *d, double cutoff, wp_disk_recent_fn recent, void *ctx, uint64_t *bytes);

/* A snapshot after a rescan (key texts read from the files' headers once). malloc'd; free() it. */
int wp_disk_list(wp_disk *d, wp_disk_entry **out, size_t *n);

typedef struct {
    uint64_t entries, bytes, cap, evictions, removed;
} wp_disk_stats;
void wp_disk_stats_get(wp_disk *d, wp_disk_stats *out);

#endif
