/* buffers.c — the buffer registry (see buffers.h): entries in creation order, each a wp_buf with a
 * type, a TTL since last use and a user count; a quota over all their bytes; a reaper thread that
 * frees expired ones while nobody asks.
 * Owns: wp_buffers, its entries and their wp_bufs. One mutex guards the table; wp_buf_free runs
 * outside it (on cuda it may wait for the device). */
#include "buffers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WP_BUFFERS_REAP_PERIOD_MS 1000 /* the reaper looks at least this often */

typedef enum { ENTRY_PENDING, ENTRY_LIVE, ENTRY_DEAD } entry_state;

typedef struct entry {
    struct entry *prev, *next;
    char id[WP_BUFFER_ID_LEN]; /* "" while pending */
    entry_state state;
    wp_buf *buf;
    wp_type type;
    uint64_t count, bytes;
    uint64_t charged; /* bytes counted against the quota: bytes, or 0 for another process's memory */
    double ttl_s, created;
    uint64_t last_use_ns;
    int users;
    char owner[WP_USER_NAME_MAX + 1]; /* the user who made it (users.h) */
} entry;

struct wp_buffers {
    wp_buffers_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t reap_cv; /* stopping */
    entry *head, *tail;
    uint64_t bytes, live; /* bytes of every entry; visible entries */
    uint64_t created, deleted, expired, rejected_quota;
    bool stopping;
    pthread_t reaper;
    bool reaper_started;
};

/* Unguessable ids, so one client cannot walk another's data. */
static void make_id(char out[WP_BUFFER_ID_LEN]) {
    snprintf(out, WP_BUFFER_ID_LEN, "b-%016llx", (unsigned long long)wp_random_u64());
}

static entry *find_id(wp_buffers *bs, const char *id) {
    for (entry *e = bs->head; e; e = e->next)
        if (e->state == ENTRY_LIVE && !strcmp(e->id, id)) return e;
    return NULL;
}

/* The visible entry id that who may see: another user's is as unknown as an id never made. */
static entry *find_seen(wp_buffers *bs, const wp_user *who, const char *id) {
    entry *e = find_id(bs, id);
    return e && wp_user_sees(who, e->owner) ? e : NULL;
}

/* Bytes charged to owner now. With bs->mu held. */
static uint64_t owner_bytes(const wp_buffers *bs, const char *owner) {
    uint64_t sum = 0;
    for (const entry *e = bs->head; e; e = e->next)
        if (!strcmp(e->owner, owner)) sum += e->charged;
    return sum;
}

static entry *find_buf(wp_buffers *bs, const wp_buf *buf) {
    for (entry *e = bs->head; e; e = e->next)
        if (e->buf == buf) return e;
    return NULL;
}

/* Appends e to the table (creation order). With bs->mu held. */
static void link_entry(wp_buffers *bs, entry *e) {
    e->prev = bs->tail;
    if (bs->tail)
        bs->tail->next = e;
    else
        bs->head = e;
    bs->tail = e;
}

static void unlink_entry(wp_buffers *bs, entry *e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        bs->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        bs->tail = e->prev;
    e->prev = e->next = NULL;
    bs->bytes -= e->charged;
}

/* Takes a visible entry out of the listing: unlinked into *to_free now if unused, else left dead
 * for the last release. With bs->mu held. */
static void retire(wp_buffers *bs, entry *e, entry **to_free) {
    bs->live--;
    if (e->users > 0) {
        e->state = ENTRY_DEAD;
        return;
    }
    unlink_entry(bs, e);
    e->next = *to_free;
    *to_free = e;
}

static void free_entries(entry *e) {
    while (e) {
        entry *next = e->next;
        wp_buf_free(e->buf);
        free(e);
        e = next;
    }
}

static double expires_in(const entry *e, uint64_t now) {
    if (e->users > 0) return e->ttl_s;
    double left = e->ttl_s - (double)(now - e->last_use_ns) / 1e9;
    return left > 0 ? left : 0;
}

/* Retires visible, unused entries past their TTL. With bs->mu held. */
static void reap_locked(wp_buffers *bs, entry **to_free) {
    uint64_t now = wp_now_ns();
    for (entry *e = bs->head, *next; e; e = next) {
        next = e->next;
        if (e->state == ENTRY_LIVE && e->users == 0 && expires_in(e, now) <= 0) {
            retire(bs, e, to_free);
            bs->expired++;
        }
    }
}

static void fill_info(const entry *e, wp_buffer_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    memcpy(out->id, e->id, sizeof out->id);
    memcpy(out->owner, e->owner, sizeof out->owner);
    out->type = e->type;
    out->count = e->count;
    out->bytes = e->bytes;
    out->backend = wp_backend_name(wp_buf_backend(e->buf));
    out->device = wp_backend_index(wp_buf_backend(e->buf));
    out->shards = wp_buf_shards(e->buf);
    for (int i = 0; i < out->shards; i++) {
        size_t off;
        wp_buf *p = wp_buf_shard(e->buf, i, &off);
        size_t esize = wp_type_size(e->type);
        out->shard[i].device = wp_backend_index(wp_buf_backend(p));
        out->shard[i].offset = off / esize;
        out->shard[i].count = wp_buf_size(p) / esize;
    }
    out->external = wp_buf_is_ipc(e->buf);
    out->ttl_s = e->ttl_s;
    out->expires_in_s = expires_in(e, wp_now_ns());
    out->created = e->created;
    out->users = e->users;
}

static void *reaper_main(void *arg) {
    wp_buffers *bs = arg;
    pthread_mutex_lock(&bs->mu);
    while (!bs->stopping) {
        long period_ms = WP_BUFFERS_REAP_PERIOD_MS;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += period_ms / 1000;
        ts.tv_nsec += (period_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&bs->reap_cv, &bs->mu, &ts);
        if (bs->stopping) break;
        entry *to_free = NULL;
        reap_locked(bs, &to_free);
        pthread_mutex_unlock(&bs->mu);
        free_entries(to_free);
        pthread_mutex_lock(&bs->mu);
    }
    pthread_mutex_unlock(&bs->mu);
    return NULL;
}

wp_buffers *wp_buffers_open(const wp_buffers_config *cfg, wp_err *err) {
    if (!cfg || cfg->ttl_s <= 0 || cfg->max_ttl_s < cfg->ttl_s) {
        WP_FAIL(err, 500, "internal", "", "wp_buffers_open needs 0 < ttl <= max_ttl");
        return NULL;
    }
    wp_buffers *bs = calloc(1, sizeof *bs);
    if (!bs) {
        WP_FAIL(err, 500, "no_memory", "", "out of memory");
        return NULL;
    }
    bs->cfg = *cfg;
    pthread_mutex_init(&bs->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&bs->reap_cv, &ca);
    pthread_condattr_destroy(&ca);
    bs->reaper_started = pthread_create(&bs->reaper, NULL, reaper_main, bs) == 0;
    if (bs->reaper_started) pthread_setname_np(bs->reaper, "wp-buf-reaper");
    if (!bs->reaper_started) {
        WP_FAIL(err, 500, "internal", "", "cannot start the buffer reaper");
        wp_buffers_close(bs);
        return NULL;
    }
    return bs;
}

void wp_buffers_close(wp_buffers *bs) {
    if (!bs) return;
    pthread_mutex_lock(&bs->mu);
    bs->stopping = true;
    pthread_cond_broadcast(&bs->reap_cv);
    pthread_mutex_unlock(&bs->mu);
    if (bs->reaper_started) pthread_join(bs->reaper, NULL);
    free_entries(bs->head);
    pthread_mutex_destroy(&bs->mu);
    pthread_cond_destroy(&bs->reap_cv);
    free(bs);
}

static wp_buf *create(wp_buffers *bs, const wp_user *who, wp_backend *be, wp_backend *const *devs, int n, wp_type t,
                      uint64_t count, wp_err *err);

wp_buf *wp_buffers_create(wp_buffers *bs, const wp_user *who, wp_backend *be, wp_type t, uint64_t count, wp_err *err) {
    return create(bs, who, be, NULL, 0, t, count, err);
}

wp_buf *wp_buffers_create_sharded(wp_buffers *bs, const wp_user *who, wp_backend *const *devs, int n, wp_type t,
                                  uint64_t count, wp_err *err) {
    return create(bs, who, devs[0], devs, n, t, count, err);
}

wp_buf *wp_buffers_create_like(wp_buffers *bs, const wp_user *who, const wp_buf *like, wp_backend *be, wp_type t,
                               uint64_t count, wp_err *err) {
    if (!like || !wp_buf_shards(like)) return create(bs, who, be, NULL, 0, t, count, err);
    wp_backend *devs[WP_BUF_SHARDS_MAX];
    for (int i = 0; i < wp_buf_shards(like); i++) devs[i] = wp_buf_backend(wp_buf_shard(like, i, NULL));
    return create(bs, who, devs[0], devs, wp_buf_shards(like), t, count, err);
}

/* Reserves bytes for who under the global quota and who's buffer_bytes; 0, or -1 with err. With bs->mu held. */
static int reserve_locked(wp_buffers *bs, const wp_user *who, const char *owner, uint64_t bytes, wp_err *err) {
    uint64_t mine = wp_user_quota(who)->buffer_bytes, held = mine ? owner_bytes(bs, owner) : 0;
    if (mine && (bytes > mine || held > mine - bytes)) {
        bs->rejected_quota++;
        return WP_FAIL(err, 413, "quota_buffer_bytes", "buffer_bytes",
                       "%llu bytes do not fit: %s holds %llu of their buffer_bytes quota of %llu",
                       (unsigned long long)bytes, owner, (unsigned long long)held, (unsigned long long)mine);
    }
    if (bytes <= bs->cfg.quota && bs->bytes <= bs->cfg.quota - bytes) {
        bs->bytes += bytes; /* reserved now, so two uploads cannot both take the last room */
        return 0;
    }
    bs->rejected_quota++;
    return WP_FAIL(err, 507, "quota_exceeded", "",
                   "%llu bytes do not fit: %llu of the %llu-byte buffer quota are in use (--buffer-quota)",
                   (unsigned long long)bytes, (unsigned long long)bs->bytes, (unsigned long long)bs->cfg.quota);
}

static wp_buf *create(wp_buffers *bs, const wp_user *who, wp_backend *be, wp_backend *const *devs, int n, wp_type t,
                      uint64_t count, wp_err *err) {
    size_t size = wp_type_size(t);
    if (count > UINT64_MAX / size || count * size > SIZE_MAX || count * size > bs->cfg.quota) {
        pthread_mutex_lock(&bs->mu);
        bs->rejected_quota++;
        pthread_mutex_unlock(&bs->mu);
        WP_FAIL(err, 507, "quota_exceeded", "", "%llu %s elements are more than the %llu-byte buffer quota holds",
                (unsigned long long)count, wp_type_name(t), (unsigned long long)bs->cfg.quota);
        return NULL;
    }
    uint64_t bytes = count * size;
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        WP_FAIL(err, 500, "no_memory", "", "out of memory");
        return NULL;
    }
    e->state = ENTRY_PENDING;
    e->type = t, e->count = count, e->bytes = e->charged = bytes;
    wp_user_name_copy(who, e->owner);
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    reap_locked(bs, &to_free);
    bool fits = reserve_locked(bs, who, e->owner, bytes, err) == 0;
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
    if (!fits) {
        free(e);
        return NULL;
    }
    e->buf = n ? wp_buf_alloc_sharded(devs, n, size, count, err) : wp_buf_alloc(be, (size_t)bytes, err);
    pthread_mutex_lock(&bs->mu);
    if (!e->buf)
        bs->bytes -= bytes;
    else
        link_entry(bs, e);
    pthread_mutex_unlock(&bs->mu);
    if (!e->buf) {
        free(e);
        return NULL;
    }
    return e->buf;
}

wp_buf *wp_buffers_adopt(wp_buffers *bs, const wp_user *who, wp_buf *buf, wp_type t, uint64_t count, wp_err *err) {
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        wp_buf_free(buf);
        WP_FAIL(err, 500, "no_memory", "", "out of memory");
        return NULL;
    }
    e->state = ENTRY_PENDING;
    e->buf = buf;
    e->type = t, e->count = count, e->bytes = wp_buf_size(buf);
    wp_user_name_copy(who, e->owner);
    pthread_mutex_lock(&bs->mu);
    link_entry(bs, e);
    pthread_mutex_unlock(&bs->mu);
    return buf;
}

int wp_buffers_commit(wp_buffers *bs, wp_buf *buf, double ttl_s, wp_buffer_info *out, wp_err *err) {
    if (ttl_s < 0 || ttl_s > bs->cfg.max_ttl_s) {
        wp_buffers_abort(bs, buf);
        return WP_FAIL(err, 400, "bad_value", "ttl", "ttl %g is outside 0..%g seconds (0: the default, %g)", ttl_s,
                       bs->cfg.max_ttl_s, bs->cfg.ttl_s);
    }
    pthread_mutex_lock(&bs->mu);
    entry *e = find_buf(bs, buf);
    if (!e || e->state != ENTRY_PENDING) {
        pthread_mutex_unlock(&bs->mu);
        return WP_FAIL(err, 500, "internal", "", "wp_buffers_commit: not a created buffer");
    }
    do make_id(e->id); /* bs->mu held: find_id sees every id */
    while (find_id(bs, e->id));
    e->state = ENTRY_LIVE;
    e->ttl_s = ttl_s > 0 ? ttl_s : bs->cfg.ttl_s;
    e->created = wp_unix_now();
    e->last_use_ns = wp_now_ns();
    bs->live++;
    bs->created++;
    fill_info(e, out);
    pthread_mutex_unlock(&bs->mu);
    return 0;
}

void wp_buffers_abort(wp_buffers *bs, wp_buf *buf) {
    if (!buf) return;
    pthread_mutex_lock(&bs->mu);
    entry *e = find_buf(bs, buf);
    if (e && e->state == ENTRY_PENDING)
        unlink_entry(bs, e);
    else
        e = NULL;
    pthread_mutex_unlock(&bs->mu);
    if (e) e->next = NULL;
    free_entries(e);
}

static int unknown(wp_err *err, const char *id) {
    return WP_FAIL(err, 404, "unknown_buffer", "buffer", "no buffer \"%.40s\" (never made, deleted, or expired)", id);
}

wp_buf *wp_buffers_get(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *info, wp_err *err) {
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    reap_locked(bs, &to_free);
    entry *e = find_seen(bs, who, id);
    if (e) {
        e->users++;
        e->last_use_ns = wp_now_ns();
        fill_info(e, info);
    }
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
    if (!e) unknown(err, id);
    return e ? e->buf : NULL;
}

void wp_buffers_release(wp_buffers *bs, wp_buf *buf) {
    if (!buf) return;
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    entry *e = find_buf(bs, buf);
    if (e && e->users > 0) {
        e->users--;
        e->last_use_ns = wp_now_ns(); /* the TTL counts from the end of the last use */
        if (e->state == ENTRY_DEAD && e->users == 0) {
            unlink_entry(bs, e);
            to_free = e;
        }
    }
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
}

int wp_buffers_info(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *out, wp_err *err) {
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    reap_locked(bs, &to_free);
    entry *e = find_seen(bs, who, id);
    if (e) fill_info(e, out);
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
    return e ? 0 : unknown(err, id);
}

int wp_buffers_delete(wp_buffers *bs, const wp_user *who, const char *id, wp_buffer_info *out, wp_err *err) {
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    reap_locked(bs, &to_free);
    entry *e = find_seen(bs, who, id);
    if (e) {
        fill_info(e, out);
        retire(bs, e, &to_free);
        bs->deleted++;
    }
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
    return e ? 0 : unknown(err, id);
}

int wp_buffers_list(wp_buffers *bs, const wp_user *who, wp_buffer_info **out, size_t *n, wp_err *err) {
    entry *to_free = NULL;
    pthread_mutex_lock(&bs->mu);
    reap_locked(bs, &to_free);
    wp_buffer_info *list = calloc(bs->live ? bs->live : 1, sizeof *list);
    size_t k = 0;
    for (entry *e = bs->head; list && e; e = e->next)
        if (e->state == ENTRY_LIVE && wp_user_sees(who, e->owner)) fill_info(e, &list[k++]);
    pthread_mutex_unlock(&bs->mu);
    free_entries(to_free);
    if (!list) return WP_FAIL(err, 500, "no_memory", "", "out of memory");
    *out = list;
    *n = k;
    return 0;
}

void wp_buffers_stats_get(wp_buffers *bs, wp_buffers_stats *out) {
    memset(out, 0, sizeof *out);
    if (!bs) return;
    pthread_mutex_lock(&bs->mu);
    out->buffers = bs->live;
    out->bytes = bs->bytes;
    out->created = bs->created;
    out->deleted = bs->deleted;
    out->expired = bs->expired;
    out->rejected_quota = bs->rejected_quota;
    pthread_mutex_unlock(&bs->mu);
    out->quota = bs->cfg.quota;
    out->ttl_s = bs->cfg.ttl_s;
    out->max_ttl_s = bs->cfg.max_ttl_s;
}
