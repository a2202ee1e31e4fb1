/* cache_file.h — one kernel's file in the disk cache (format in cache_file.c): read and checked,
 * written whole and atomically, or its header's metadata peeked. Pure file I/O: any thread. */
#ifndef WP_CACHE_FILE_H
#define WP_CACHE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jit.h"

#define WP_CACHE_FILE_PATH_MAX 4352

typedef enum { WP_FILE_HIT, WP_FILE_MISS, WP_FILE_CORRUPT } wp_file_result;

/* The open file fd for key: WP_FILE_HIT with *a (wp_artifact_free it), *created (Unix s; 0 in format 1)
 * and *key_text (malloc'd, or NULL); WP_FILE_MISS when fd is not a regular file (or out of memory);
 * WP_FILE_CORRUPT when it is torn, too large, of another format, fails its checksum or holds another key. */
wp_file_result wp_cache_file_read(int fd, const uint8_t key[32], wp_artifact *a, double *created, char **key_text);

/* Writes key's file at path (its directory made when missing) through a temp file, fsync and rename.
 * Returns the file's size, or 0 when nothing was stored. */
uint64_t wp_cache_file_write(const char *path, const uint8_t key[32], double created, const char *key_text,
                             const wp_artifact *a);

/* The created time and key text in a file's header (format 2; format 1 files give 0 and ""). false
 * when the file is not a cache file. */
bool wp_cache_file_meta(const char *path, double *created, char *key_text, size_t n);

/* The cache's directory made, with its parents (0700), or -1 with errno. */
int wp_cache_dir_make(const char *dir);
/* Removes <dir>/<2 hex>/<64 hex>.wpk.tmp.<pid>.<tid>... files whose writer is gone and that are over a
 * minute old (another daemon sharing the directory may be writing its own); returns how many. */
uint64_t wp_cache_file_sweep(const char *dir);

#endif
