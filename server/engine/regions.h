/* regions.h — shared-memory regions: POSIX shared-memory objects that local clients created, mapped
 * by id (POST/GET/DELETE /v1/shm, api_shm.c) and used as a job's input or output (the "shm" forms of
 * /v1/reduce, /v1/scan and PUT /v1/buffers). On cuda each mapping is registered with the driver, so
 * copies DMA straight between the client's pages and the device.
 * Owns: wp_regions, every mapping and its descriptor. A region deleted while a job holds it leaves the
 * listing at once and is unmapped when the last holder puts it. Any thread may call any function.
 *
 * Safety: a name must begin with the configured prefix, have no "/" after its first character and no
 * "..", and open (without following links) as a regular shared-memory object; the mapped total stays
 * under max_bytes; every offset and count is checked without overflow; a copy from or to an object
 * that was truncated under its mapping fails with 409 "region_truncated" (util/sigbus.h), never kills
 * the daemon. Messages name only what the client named.
 *
 * Owners: every region records the user who mapped it (who, users.h; NULL: the daemon). Only that user
 * or an admin may describe, hold, remove or list it: to anyone else its id is 404 "unknown_shm". A
 * user's shm_bytes quota is checked with --shm-max: 413 "quota_shm_bytes" (field "shm_bytes"). */
#ifndef WP_REGIONS_H
#define WP_REGIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/buffer.h"
#include "http/users.h"
#include "util/common.h"

#define WP_REGION_ID_LEN 24    /* "shm-" + 16 hex digits + NUL, rounded up */
#define WP_REGION_NAME_MAX 200 /* characters of a name, its "/" included */

typedef struct wp_regions wp_regions; /* opaque */
typedef struct wp_region wp_region;   /* one mapping, held by a job */

typedef struct {
    const char *prefix; /* every name begins with it ("/warpd") */
    uint64_t max_bytes; /* all mappings together */
    wp_backend *dma;    /* registers the mappings (the first GPU), or NULL: none (emu) */
} wp_regions_config;

typedef struct {
    char id[WP_REGION_ID_LEN];
    char name[WP_REGION_NAME_MAX + 1];
    uint64_t offset, bytes;           /* the mapped part of the object */
    uint64_t object_bytes;            /* the object's size when it was mapped */
    bool registered;                  /* page-locked with the driver: copies DMA */
    bool read_only;                   /* the object opened only for reading: no output into it */
    int users;                        /* jobs holding it now */
    double created;                   /* Unix time (s) */
    char owner[WP_USER_NAME_MAX + 1]; /* the user who mapped it */
} wp_region_info;

typedef struct {
    uint64_t regions, bytes, max_bytes;
    uint64_t added, removed, refused_quota, truncated;
} wp_regions_stats;

wp_regions *wp_regions_open(const wp_regions_config *cfg, wp_err *err);
/* Unmaps everything: after the jobs that may hold regions have stopped. */
void wp_regions_close(wp_regions *rs);

/* Maps bytes [offset, offset + bytes) of the object `name` (bytes < 0: to its end). 400 "bad_name",
 * 404 "shm_not_found", 403 "shm_denied", 400 "not_shared_memory", 400 "out_of_range" (field offset or
 * bytes), 413 "shm_quota". */
int wp_regions_add(wp_regions *rs, const wp_user *who, const char *name, uint64_t offset, int64_t bytes,
                   wp_region_info *out, wp_err *err);
/* 404 "unknown_shm" (field "id"). */
int wp_regions_info(wp_regions *rs, const wp_user *who, const char *id, wp_region_info *out, wp_err *err);
/* Removes the id now; *pending: a job still holds it (unmapped when it puts it). 404 "unknown_shm". */
int wp_regions_remove(wp_regions *rs, const wp_user *who, const char *id, wp_region_info *out, bool *pending,
                      wp_err *err);
/* Every region, oldest first: a malloc'd array of *n (free it). */
int wp_regions_list(wp_regions *rs, const wp_user *who, wp_region_info **out, size_t *n, wp_err *err);
void wp_regions_stats_get(wp_regions *rs, wp_regions_stats *out);

/* The region with this id, held until wp_region_put. field names the id in errors (404 "unknown_shm"). */
wp_region *wp_regions_hold(wp_regions *rs, const wp_user *who, const char *id, const char *field, wp_err *err);
void wp_region_put(wp_region *g);
void wp_region_describe(const wp_region *g, wp_region_info *out);
/* Whether the region is still listed (no DELETE since it was held). */
bool wp_region_listed(wp_region *g);
/* The mapped bytes [offset, offset + len) for a caller that reads and writes them itself (a doorbell,
 * engine/channels.c), or NULL when out of range. Every touch of them must run under util/sigbus.h's
 * guard: the object's owner may truncate it at any time. */
unsigned char *wp_region_span(wp_region *g, uint64_t offset, uint64_t len);
/* Bytes [offset, offset + len) of the region into buf at buf_offset, or the other way. The range is the
 * caller's to check (wp_region_info.bytes); 409 "region_truncated" (field `field`) when the object no
 * longer holds the mapping, before or during the copy; 403 "read_only" for a write into a read-only one. */
int wp_region_to_buf(wp_region *g, uint64_t offset, wp_buf *buf, size_t buf_offset, size_t len, const char *field,
                     wp_err *err);
int wp_region_from_buf(wp_region *g, uint64_t offset, const wp_buf *buf, size_t buf_offset, size_t len,
                       const char *field, wp_err *err);
/* The same between the region and host memory. */
int wp_region_read(wp_region *g, uint64_t offset, void *dst, size_t len, const char *field, wp_err *err);
int wp_region_write(wp_region *g, uint64_t offset, const void *src, size_t len, const char *field, wp_err *err);

#endif
