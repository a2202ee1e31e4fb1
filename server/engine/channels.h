/* channels.h — doorbell channels: a request and its answer passed through a shared-memory region
 * instead of a socket (POST /v1/channels, api/api_channel.c). A local client that repeats small calls
 * over data already in place (a CUDA IPC buffer's reduce) spends most of an HTTP round trip in the
 * socket, the kernel's wake-ups and the HTTP parser; a channel's thread polls a word the client writes
 * and runs the same handler on the same JSON body, so the answer is byte for byte the HTTP one.
 *
 * The layout of the region (little-endian u32 words; the daemon writes its words, the client its own):
 *   0    "WARPDCH1" (8 bytes)  daemon, at open     8   version (1)             daemon
 *   12   request area offset   daemon              16  request area bytes      daemon
 *   20   answer area offset    daemon              24  answer area bytes       daemon
 *   64   req_seq               client: +1 once the request's route, length and bytes are written
 *   68   req_route             client: WP_CHANNEL_REDUCE or WP_CHANNEL_SCAN
 *   72   req_len               client: bytes of the JSON body in the request area
 *   128  req_taken             daemon: the req_seq it took (a client that sees it unchanged for long
 *                              knows the channel is gone)
 *   132  daemon_sleeping       daemon: 1 while it sleeps on req_seq (FUTEX_WAIT); the client then
 *                              wakes it (FUTEX_WAKE on req_seq) after a new req_seq
 *   192  ans_seq               daemon: = req_seq once the answer's status, length and bytes are written
 *   196  ans_status            daemon: the HTTP status                200 ans_len: answer bytes
 *   204  ans_octets            daemon: 1 when the answer is application/octet-stream (a raw array), 0 JSON
 *   256  client_sleeping       client: 1 while it sleeps on ans_seq; the daemon then wakes it
 * The request area begins at 4096 and takes half the rest (at most --max-body); the answer area the rest.
 *
 * Owns: wp_channels, each channel's thread and its hold on the region. A channel's thread spins on
 * req_seq for spin_us after each request, then sleeps on it (futex), waking every 200 ms to see whether
 * it was closed, its region deleted, or it stood idle for ttl_s. Every touch of the region runs under
 * util/sigbus.h's guard: an object truncated under a channel closes it (counted), never the daemon.
 * Any thread may call any function. Shutdown: wp_channels_stop before the HTTP server stops (a channel's
 * request asks the server how busy it is) and before the engine the handlers use; wp_channels_close once
 * nothing can call in any more. */
#ifndef WP_CHANNELS_H
#define WP_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "regions.h"
#include "util/common.h"

#define WP_CHANNEL_ID_LEN 24            /* "ch-" + 16 hex digits + NUL, rounded up */
#define WP_CHANNEL_HEADER 4096          /* bytes before the request area */
#define WP_CHANNEL_MIN_BYTES 16384      /* a region smaller than this cannot hold a channel */
#define WP_CHANNEL_SPIN_DEFAULT_US 1000 /* spin_us when the request names none */
#define WP_CHANNEL_SPIN_MAX_US 100000
#define WP_CHANNEL_TTL_DEFAULT_S 600
#define WP_CHANNEL_TTL_MAX_S 86400
#define WP_CHANNELS_DEFAULT_MAX 16 /* --channels-max */

typedef struct wp_channels wp_channels; /* opaque */

enum { WP_CHANNEL_REDUCE = 1, WP_CHANNEL_SCAN = 2 }; /* req_route: POST /v1/reduce, POST /v1/scan */

/* Runs one request (route, its NUL-terminated JSON body) as its route's handler would, as user (the
 * channel's owner, who opened it), and fills *out,
 * an answer as an HTTP handler gives it (the caller frees out->body; out->defer is never set). Called on
 * the channel's thread, one request at a time per channel. */
typedef void (*wp_channel_serve)(void *ctx, const wp_user *user, unsigned route, const char *body, size_t len,
                                 wp_resp *out);

typedef struct {
    unsigned max_channels; /* open at once (429 "too_many_channels" beyond) */
    size_t max_body;       /* a request's bytes at most (the HTTP limit), whatever the area holds */
    wp_channel_serve serve;
    void *ctx;
} wp_channels_config;

typedef struct {
    char id[WP_CHANNEL_ID_LEN];
    char shm[WP_REGION_ID_LEN]; /* the region's id */
    uint64_t offset, bytes;     /* where in the region, how much */
    uint32_t request_bytes, answer_bytes;
    uint32_t spin_us, ttl_s;
    uint64_t requests;                /* served */
    bool sleeping;                    /* its thread sleeps on the doorbell now */
    double created, last_used;        /* Unix time (s) */
    char owner[WP_USER_NAME_MAX + 1]; /* the user who opened it: its requests run as that user */
} wp_channel_info;

typedef struct {
    uint64_t open, opened, closed, requests, truncated;
} wp_channels_stats;

wp_channels *wp_channels_open(const wp_channels_config *cfg, wp_err *err);
/* Stops every channel's thread (a request it runs finishes first) and puts its region; from then on
 * wp_channels_add answers 503 "shutting_down". */
void wp_channels_stop(wp_channels *cs);
/* wp_channels_stop, then frees cs. */
void wp_channels_close(wp_channels *cs);

typedef struct {
    wp_region *region; /* held by the caller; the channel takes the hold (also on failure) */
    uint64_t offset;   /* within the region; a multiple of 64 */
    uint64_t bytes;    /* 0: to the region's end */
    uint32_t spin_us, ttl_s;
    const wp_user *user; /* who opens it (users.h; NULL: the daemon): its owner, as whom its requests run */
} wp_channel_args;

/* Opens a channel: writes the header, starts its thread. 400 "out_of_range" (field "shm.offset" or
 * "bytes": not inside the region, misaligned, under WP_CHANNEL_MIN_BYTES), 403 "read_only" (field
 * "shm.id"), 409 "channel_overlap" (field "shm.offset": an open channel holds bytes of the span; nothing
 * of the region is written then), 409 "region_truncated", 429 "too_many_channels", 503 "shutting_down",
 * 500 on a thread that cannot start; 429 "quota_channels" (field "channels") past the user's channels quota. */
int wp_channels_add(wp_channels *cs, const wp_channel_args *a, wp_channel_info *out, wp_err *err);
/* Owners: only the channel's owner or an admin (who, users.h; NULL: the daemon) may describe, remove or
 * list it; to anyone else its id is 404 "unknown_channel", as one never opened. */
/* 404 "unknown_channel" (field "id"). */
int wp_channels_info(wp_channels *cs, const wp_user *who, const char *id, wp_channel_info *out, wp_err *err);
/* Closes it: its thread ends after the request it runs, if any. 404 "unknown_channel". */
int wp_channels_remove(wp_channels *cs, const wp_user *who, const char *id, wp_channel_info *out, wp_err *err);
/* Every open channel, oldest first: a malloc'd array of *n (free it). */
int wp_channels_list(wp_channels *cs, const wp_user *who, wp_channel_info **out, size_t *n, wp_err *err);
void wp_channels_stats_get(wp_channels *cs, wp_channels_stats *out);

#endif
