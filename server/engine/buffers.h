/* buffers.h — device-resident buffers by id: the registry behind PUT/GET/DELETE /v1/buffers
 * (api_buffers.c) and the `buffer` input of /v1/reduce and /v1/scan. Each entry is a wp_buf
 * (buffer.h) with an element type, a TTL refreshed on use, and a count of users; all entries
 * together stay under a byte quota.
 * Owns: wp_buffers and every wp_buf registered in it. A buffer that is deleted or expires while a
 * job uses it leaves the listing at once and is freed when the last user releases it.
 *
 *   create (charged to the quota, invisible) -> fill with wp_buf_write -> commit (visible, has an id)
 *                                                                       -> or abort (freed)
 *   get (a reference; refreshes the TTL) -> read or launch on it -> release
 *
 * Owners: every buffer records the user who made it (who, users.h; NULL: the daemon, "default"). Only
 * that user, or an admin, may get, describe, delete or list it: to anyone else its id answers 404
 * "unknown_buffer", as one never made. A user's buffer_bytes quota is checked with the global one:
 * 413 "quota_buffer_bytes" (field "buffer_bytes"). */
#ifndef WP_BUFFERS_H
#define WP_BUFFERS_H

#include "backend/buffer.h"
#include "http/users.h"
#include "kernels/types.h"
#include "util/common.h"

#define WP_BUFFER_ID_LEN 24 /* "b-" + 16 hex digits + NUL, rounded up */

typedef struct wp_buffers wp_buffers; /* opaque */

typedef struct {
    uint64_t quota;   /* bytes of all buffers at once (being filled, or deleted but in use, included) */
    double ttl_s;     /* default TTL of a buffer (seconds since its last use) */
    double max_ttl_s; /* largest TTL a client may ask for */
} wp_buffers_config;

typedef struct {
    char id[WP_BUFFER_ID_LEN];
    wp_type type;
    uint64_t count, bytes;
    const char *backend; /* "cuda" / "emu" */
    int device;          /* the device's ordinal (placement.h); a sharded buffer's first part's */
    int shards;          /* 0, or the parts of a sharded buffer (buffer.h), each: */
    struct {
        int device;
        uint64_t offset, count; /* elements */
    } shard[WP_BUF_SHARDS_MAX];
    bool external;                    /* another process's memory (CUDA IPC): not charged to the quota */
    double ttl_s;                     /* its TTL */
    double expires_in_s;              /* time left before it is freed unless used */
    double created;                   /* Unix time (s) */
    int users;                        /* references held now (jobs running on it) */
    char owner[WP_USER_NAME_MAX + 1]; /* the user who made it */
} wp_buffer_info;

wp_buffers *wp_buffers_open(const wp_buffers_config *cfg, wp_err *err);
/* Frees every buffer: call after the jobs that may hold references have stopped. */
void wp_buffers_close(wp_buffers *bs);

/* Allocates count elements of t on backend be, charged to the quota: 507 "quota_exceeded" when the
 * quota cannot hold it, or the backend's 507 "out_of_memory". Invisible until committed. */
wp_buf *wp_buffers_create(wp_buffers *bs, const wp_user *who, wp_backend *be, wp_type t, uint64_t count, wp_err *err);
/* The same, split into contiguous parts on devs[0..n) (buffer.h: wp_buf_alloc_sharded). */
wp_buf *wp_buffers_create_sharded(wp_buffers *bs, const wp_user *who, wp_backend *const *devs, int n, wp_type t,
                                  uint64_t count, wp_err *err);
/* On be, or split like `like` when it is sharded (a job's result over a sharded input). */
wp_buf *wp_buffers_create_like(wp_buffers *bs, const wp_user *who, const wp_buf *like, wp_backend *be, wp_type t,
                               uint64_t count, wp_err *err);
/* Takes a buffer made elsewhere (another process's memory: wp_buf_open_ipc) as a created one, not
 * charged to the quota; commit or abort it as one. On failure the buffer is freed. */
wp_buf *wp_buffers_adopt(wp_buffers *bs, const wp_user *who, wp_buf *buf, wp_type t, uint64_t count, wp_err *err);
/* Publishes a created buffer under a new id with the TTL (0: the default; 400 "bad_value" field
 * "ttl" beyond max_ttl_s). On failure the buffer is freed. */
int wp_buffers_commit(wp_buffers *bs, wp_buf *buf, double ttl_s, wp_buffer_info *out, wp_err *err);
/* Frees a created, uncommitted buffer. */
void wp_buffers_abort(wp_buffers *bs, wp_buf *buf);

/* The buffer with this id, held until wp_buffers_release, its TTL refreshed; info (if non-NULL)
 * describes it. 404 "unknown_buffer" (field "buffer") for an id never made, deleted or expired. */
wp_buf *wp_buffers_get(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *info, wp_err *err);
void wp_buffers_release(wp_buffers *bs, wp_buf *buf);

/* Describes a buffer without using it (the TTL is not refreshed). 404 "unknown_buffer". */
int wp_buffers_info(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *out, wp_err *err);
/* Removes the id now (freed at once, or when its last user releases it). 404 "unknown_buffer". */
int wp_buffers_delete(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *out, wp_err *err);
/* Every visible buffer, oldest first: a malloc'd array of *n (free it). */
int wp_buffers_list(wp_buffers *bs, const wp_user *who, wp_buffer_info **out, size_t *n, wp_err *err);

typedef struct {
    uint64_t buffers, bytes, quota; /* held now (bytes counts all, in use or being filled) */
    uint64_t created, deleted, expired, rejected_quota;
    double ttl_s, max_ttl_s;
} wp_buffers_stats;
void wp_buffers_stats_get(wp_buffers *bs, wp_buffers_stats *out);

#endif
