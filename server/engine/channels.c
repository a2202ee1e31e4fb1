/* channels.c — doorbell channels (channels.h): the listing, each channel's thread, and the doorbell's
 * words in the client's region, read and written under the SIGBUS guard with atomic loads and stores
 * (the client is another process: the words are shared memory, the futex calls non-private). */
#include "channels.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/on_behalf.h"
#include "util/sigbus.h"

/* Word offsets of the layout (channels.h). */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 8,
    OFF_REQ_AREA = 12,
    OFF_REQ_MAX = 16,
    OFF_ANS_AREA = 20,
    OFF_ANS_MAX = 24,
    OFF_REQ_SEQ = 64,
    OFF_REQ_ROUTE = 68,
    OFF_REQ_LEN = 72,
    OFF_TAKEN = 128,
    OFF_DAEMON_SLEEPING = 132,
    OFF_ANS_SEQ = 192,
    OFF_ANS_STATUS = 196,
    OFF_ANS_LEN = 200,
    OFF_ANS_OCTETS = 204,
    OFF_CLIENT_SLEEPING = 256,
};
#define CHANNEL_VERSION 1
#define TICK_NS 200000000ull /* a sleeping channel looks at its state this often */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

typedef struct channel {
    struct channel *next;
    wp_channels *owner;
    wp_region *region;
    unsigned char *base;  /* byte 0 of the channel in the mapping */
    wp_channel_info info; /* requests, last_used: under the owner's mu */
    uint32_t last_seq;    /* the req_seq answered last (the channel's thread only) */
    uint64_t last_ns;     /* wp_now_ns of the last request (or the open): the idle clock, under mu */
    char *req;            /* request_bytes + 1: a request's body, copied out of the region */
    atomic_bool stop;     /* closed: the thread ends at its next look */
    atomic_bool sleeping;
    pthread_t thread;
    const wp_user *user; /* its owner: its requests run as this user (users.h keeps it valid) */
} channel;

struct wp_channels {
    pthread_mutex_t mu;
    wp_channels_config cfg;
    channel *head; /* open, oldest first */
    channel *dead; /* ended by themselves (idle, region gone, truncated): joined and freed by reap */
    bool stopping; /* wp_channels_stop ran: no channel opens any more */
    wp_channels_stats st;
};

/* ---- the shared words ---- */

static uint32_t *word(const channel *c, size_t off) { return (uint32_t *)(void *)(c->base + off); }
/* Sequentially consistent both ways: each side's "store my word, then load the other's" (the sleeping
 * flags against the seq words) needs its store seen before its load. */
static uint32_t load(const channel *c, size_t off) { return __atomic_load_n(word(c, off), __ATOMIC_SEQ_CST); }
static void store(const channel *c, size_t off, uint32_t v) { __atomic_store_n(word(c, off), v, __ATOMIC_SEQ_CST); }

static void futex_wait(uint32_t *addr, uint32_t val, uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}
/* Every waiter: the word is the client's too, and another waiter of its own must not take the wake. */
static void futex_wake(uint32_t *addr) { syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0); }

/* ---- the channel's thread ---- */

/* A request as the channel took it. */
typedef struct {
    channel *c;
    bool got;                 /* a new req_seq: the rest is set */
    uint32_t seq, route, len; /* len 0 when the body did not fit (fits false) */
    bool fits;                /* req_len within the request area and --max-body: its bytes are in c->req */
} take_args;

/* The request now in the region: its words, its body into c->req when it fits, req_taken. */
static void take(take_args *t) {
    channel *c = t->c;
    t->seq = load(c, OFF_REQ_SEQ);
    t->route = load(c, OFF_REQ_ROUTE);
    t->len = load(c, OFF_REQ_LEN);
    t->fits = t->len <= c->info.request_bytes && t->len <= c->owner->cfg.max_body;
    if (!t->fits) t->len = 0;
    memcpy(c->req, c->base + WP_CHANNEL_HEADER, t->len);
    c->req[t->len] = 0;
    store(c, OFF_TAKEN, t->seq);
}

/* Spins on req_seq for spin_us, then sleeps on it for at most a tick; takes a request that came. All of
 * it under the guard: one guard per wait, whatever the spin touches. */
static void wait_fn(void *arg) {
    take_args *t = arg;
    channel *c = t->c;
    const uint64_t until = wp_now_ns() + (uint64_t)c->info.spin_us * 1000u;
    for (unsigned i = 0;; i++) {
        if ((t->got = load(c, OFF_REQ_SEQ) != c->last_seq)) return take(t);
        if (atomic_load(&c->stop)) return;
        if ((i & 63) == 0 && wp_now_ns() >= until) break;
        CPU_RELAX();
    }
    atomic_store(&c->sleeping, true);
    store(c, OFF_DAEMON_SLEEPING, 1); /* then the client's next req_seq comes with a wake */
    if (load(c, OFF_REQ_SEQ) == c->last_seq && !atomic_load(&c->stop)) /* a stop's wake before the wait: seen */
        futex_wait(word(c, OFF_REQ_SEQ), c->last_seq, TICK_NS);
    store(c, OFF_DAEMON_SLEEPING, 0);
    atomic_store(&c->sleeping, false);
    if ((t->got = load(c, OFF_REQ_SEQ) != c->last_seq)) take(t);
}

typedef struct {
    channel *c;
    uint32_t seq;
    const wp_resp *ans;
} answer_args;

static void answer_fn(void *arg) {
    answer_args *a = arg;
    channel *c = a->c;
    const wp_resp *r = a->ans;
    const bool octets = r->content_type && !strcmp(r->content_type, "application/octet-stream");
    if (r->body_len) memcpy(c->base + WP_CHANNEL_HEADER + c->info.request_bytes, r->body, r->body_len);
    store(c, OFF_ANS_STATUS, (uint32_t)r->status);
    store(c, OFF_ANS_LEN, (uint32_t)r->body_len);
    store(c, OFF_ANS_OCTETS, octets);
    store(c, OFF_ANS_SEQ, a->seq); /* after the bytes (release): the client reads them once it sees it */
    if (load(c, OFF_CLIENT_SLEEPING)) futex_wake(word(c, OFF_ANS_SEQ));
}

/* A refusal of the channel's own, as an HTTP route answers one (http/http.h's wp_resp_error). */
static void refuse(wp_resp *r, int status, const char *code, const char *field, const char *message) {
    free(r->body);
    *r = (wp_resp){0};
    wp_err e;
    WP_FAIL(&e, status, code, field, "%s", message);
    wp_resp_error(r, &e);
}

/* The answer to the request t describes (its body read): the route's handler's, or a refusal. */
static void answer_of(channel *c, const take_args *t, wp_resp *r) {
    const wp_channels_config *cfg = &c->owner->cfg;
    if (t->route != WP_CHANNEL_REDUCE && t->route != WP_CHANNEL_SCAN) {
        refuse(r, 400, "bad_route", "req_route", "req_route must be 1 (POST /v1/reduce) or 2 (POST /v1/scan)");
        return;
    }
    cfg->serve(cfg->ctx, c->user, t->route, c->req, t->len, r);
    if (!r->body)
        refuse(r, 500, "out_of_memory", "", "no memory for the answer");
    else if (r->body_len > c->info.answer_bytes)
        refuse(r, 413, "answer_too_large", "",
               "the answer does not fit the channel's answer area: use a larger channel, an output region, or HTTP");
}

static void count_request(channel *c) {
    pthread_mutex_lock(&c->owner->mu);
    c->info.requests++;
    c->info.last_used = wp_unix_now();
    c->last_ns = wp_now_ns();
    c->owner->st.requests++;
    pthread_mutex_unlock(&c->owner->mu);
}

/* One request, taken: served and answered. -1 when the region faulted. */
static int serve_one(channel *c, const take_args *t) {
    wp_resp ans = {0};
    if (!t->fits)
        refuse(&ans, 413, "body_too_large", "req_len", "req_len is larger than the channel's request area");
    else
        answer_of(c, t, &ans);
    count_request(c); /* before the answer: a client that has it sees it counted */
    answer_args a = {.c = c, .seq = t->seq, .ans = &ans};
    const int rc = wp_guarded_run(answer_fn, &a);
    free(ans.body);
    c->last_seq = t->seq;
    return rc;
}

/* Off the listing (with cs->mu held). */
static void take_off(wp_channels *cs, channel *c) {
    for (channel **p = &cs->head; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    cs->st.open--;
    cs->st.closed++;
}

/* On the channel's own thread, its end not asked by a remove: off the listing, to be reaped. */
static void end_self(channel *c, bool truncated) {
    wp_channels *cs = c->owner;
    pthread_mutex_lock(&cs->mu);
    const bool mine = !atomic_load(&c->stop); /* else a remove or a stop took it off and joins it */
    if (mine) {
        take_off(cs, c);
        cs->st.truncated += truncated;
    }
    pthread_mutex_unlock(&cs->mu);
    if (!mine) return;
    /* the region and the body's buffer go now (the quota, the mapping), the thread's join at a reap */
    wp_region_put(c->region);
    c->region = NULL;
    free(c->req);
    c->req = NULL;
    pthread_mutex_lock(&cs->mu);
    c->next = cs->dead;
    cs->dead = c;
    pthread_mutex_unlock(&cs->mu);
}

static bool idle_too_long(channel *c) {
    pthread_mutex_lock(&c->owner->mu);
    const bool idle = wp_now_ns() - c->last_ns > (uint64_t)c->info.ttl_s * 1000000000u;
    pthread_mutex_unlock(&c->owner->mu);
    return idle;
}

static void *channel_main(void *arg) {
    channel *c = arg;
    bool faulted = false;
    wp_on_behalf_set(wp_user_name(c->user)); /* this thread serves its owner alone */
    while (!atomic_load(&c->stop)) {
        take_args t = {.c = c};
        if ((faulted = wp_guarded_run(wait_fn, &t) != 0)) break;
        if (atomic_load(&c->stop)) break;
        if (t.got && (faulted = serve_one(c, &t) != 0)) break;
        if (!t.got && (idle_too_long(c) || !wp_region_listed(c->region))) break;
    }
    end_self(c, faulted);
    return NULL;
}

/* ---- the listing ---- */

wp_channels *wp_channels_open(const wp_channels_config *cfg, wp_err *err) {
    wp_channels *cs = calloc(1, sizeof *cs);
    if (!cs || wp_sigbus_install()) {
        free(cs);
        WP_FAIL(err, 500, "internal", "", "cannot set up the channels");
        return NULL;
    }
    pthread_mutex_init(&cs->mu, NULL);
    cs->cfg = *cfg;
    return cs;
}

static void channel_free(channel *c) {
    pthread_join(c->thread, NULL);
    wp_region_put(c->region);
    free(c->req);
    free(c);
}

/* Joins and frees every channel of a list taken off the listing. */
static void free_all(channel *list) {
    while (list) {
        channel *next = list->next;
        channel_free(list);
        list = next;
    }
}

/* Joins and frees the channels that ended by themselves. */
static void reap(wp_channels *cs) {
    pthread_mutex_lock(&cs->mu);
    channel *dead = cs->dead;
    cs->dead = NULL;
    pthread_mutex_unlock(&cs->mu);
    free_all(dead);
}

/* Asks c's thread to end (it is off the listing): a sleeping one is woken (a futex wake touches no
 * byte of the mapping: a truncated object answers EFAULT, not SIGBUS). */
static void ask_stop(channel *c) {
    atomic_store(&c->stop, true);
    futex_wake(word(c, OFF_REQ_SEQ));
}

void wp_channels_stop(wp_channels *cs) {
    if (!cs) return;
    pthread_mutex_lock(&cs->mu);
    cs->stopping = true;
    channel *open = cs->head;
    cs->head = NULL;
    for (channel *c = open; c; c = c->next) atomic_store(&c->stop, true); /* under mu: end_self leaves them */
    cs->st.closed += cs->st.open;
    cs->st.open = 0;
    pthread_mutex_unlock(&cs->mu);
    for (channel *c = open; c; c = c->next) ask_stop(c);
    free_all(open);
    reap(cs);
}

void wp_channels_close(wp_channels *cs) {
    if (!cs) return;
    wp_channels_stop(cs);
    pthread_mutex_destroy(&cs->mu);
    free(cs);
}

/* ---- open, describe, close one ---- */

typedef struct {
    channel *c;
    uint32_t seq;
} init_args;

static void init_fn(void *arg) {
    init_args *a = arg;
    channel *c = a->c;
    memcpy(c->base + OFF_MAGIC, "WARPDCH1", 8);
    store(c, OFF_VERSION, CHANNEL_VERSION);
    store(c, OFF_REQ_AREA, WP_CHANNEL_HEADER);
    store(c, OFF_REQ_MAX, c->info.request_bytes);
    store(c, OFF_ANS_AREA, WP_CHANNEL_HEADER + c->info.request_bytes);
    store(c, OFF_ANS_MAX, c->info.answer_bytes);
    a->seq = load(c, OFF_REQ_SEQ); /* what the client wrote before is no request */
    store(c, OFF_TAKEN, a->seq);
    store(c, OFF_DAEMON_SLEEPING, 0);
    store(c, OFF_ANS_SEQ, a->seq);
}

/* Where the channel lies in its region: 0, or -1 with err. */
static int place(channel *c, const wp_channel_args *a, wp_err *err) {
    wp_region_info ri;
    wp_region_describe(a->region, &ri);
    if (ri.read_only)
        return WP_FAIL(err, 403, "read_only", "shm.id",
                       "region %s is read-only to the daemon: a channel writes its answers into it", ri.id);
    if (a->offset > ri.bytes)
        return WP_FAIL(err, 400, "out_of_range", "shm.offset", "shm.offset is past the region's end");
    const uint64_t bytes = a->bytes ? a->bytes : ri.bytes - a->offset;
    if (bytes > ri.bytes - a->offset)
        return WP_FAIL(err, 400, "out_of_range", "bytes", "bytes reach past the region's end");
    if (bytes < WP_CHANNEL_MIN_BYTES)
        return WP_FAIL(err, 400, "out_of_range", "bytes", "a channel needs at least %d bytes of the region",
                       WP_CHANNEL_MIN_BYTES);
    c->base = wp_region_span(a->region, a->offset, bytes);
    if (!c->base || (uintptr_t)c->base % 64)
        return WP_FAIL(err, 400, "out_of_range", "shm.offset",
                       "a channel begins 64-byte aligned in memory: shm.offset and the region's offset decide");
    /* the request area: half the rest, at most --max-body (a longer request is refused anyway); the
     * answer area: the rest, at most 4 GiB */
    uint64_t req = (bytes - WP_CHANNEL_HEADER) / 2 / 64 * 64, max_body = c->owner->cfg.max_body / 64 * 64;
    if (req > max_body) req = max_body;
    if (req > UINT32_MAX / 2 / 64 * 64) req = UINT32_MAX / 2 / 64 * 64; /* the offsets stay 32-bit words */
    uint64_t ans = (bytes - WP_CHANNEL_HEADER - req) / 64 * 64;
    if (ans > UINT32_MAX / 2 / 64 * 64) ans = UINT32_MAX / 2 / 64 * 64;
    c->info.request_bytes = (uint32_t)req;
    c->info.answer_bytes = (uint32_t)ans;
    snprintf(c->info.shm, sizeof c->info.shm, "%s", ri.id);
    c->info.offset = a->offset;
    c->info.bytes = bytes;
    return 0;
}

static void new_id(char *id) { snprintf(id, WP_CHANNEL_ID_LEN, "ch-%016" PRIx64, wp_random_u64()); }

static void describe(const channel *c, wp_channel_info *out) {
    *out = c->info;
    out->sleeping = atomic_load(&c->sleeping);
}

/* Whether c's span meets an open channel's in the same region (with cs->mu held). */
static bool overlaps(const wp_channels *cs, const channel *c) {
    for (const channel *o = cs->head; o; o = o->next)
        if (o->region == c->region && c->info.offset < o->info.offset + o->info.bytes &&
            o->info.offset < c->info.offset + c->info.bytes)
            return true;
    return false;
}

/* c's owner has as many channels open as their quota allows (with cs->mu held). */
static bool over_quota(const wp_channels *cs, const channel *c) {
    uint64_t mine = wp_user_quota(c->user)->channels, open = 0;
    if (!mine) return false;
    for (const channel *o = cs->head; o; o = o->next) open += !strcmp(o->info.owner, c->info.owner);
    return open >= mine;
}

/* Under cs->mu, so no other open can race it: the limit, a span of its own, the header written, the
 * thread started and listed. */
static int start(wp_channels *cs, channel *c, wp_err *err) {
    pthread_mutex_lock(&cs->mu);
    int rc = 0;
    init_args in = {.c = c};
    if (cs->stopping) {
        rc = WP_FAIL(err, 503, "shutting_down", "", "the daemon is stopping");
    } else if (cs->st.open >= cs->cfg.max_channels) {
        rc = WP_FAIL(err, 429, "too_many_channels", "",
                     "%u channels are open, the most this daemon keeps (--channels-max)", cs->cfg.max_channels);
    } else if (over_quota(cs, c)) {
        rc = WP_FAIL(err, 429, "quota_channels", "channels", "%s has %llu channels open, their channels quota",
                     c->info.owner, (unsigned long long)wp_user_quota(c->user)->channels);
    } else if (overlaps(cs, c)) {
        rc = WP_FAIL(err, 409, "channel_overlap", "shm.offset",
                     "another open channel holds bytes of region %s in this span", c->info.shm);
    } else if (wp_guarded_run(init_fn, &in)) {
        rc = WP_FAIL(err, 409, "region_truncated", "shm.id",
                     "the object of region %s was truncated below the mapped bytes; register it again", c->info.shm);
    } else if ((c->last_seq = in.seq, c->last_ns = wp_now_ns(), pthread_create(&c->thread, NULL, channel_main, c))) {
        rc = WP_FAIL(err, 500, "internal", "", "cannot start the channel's thread");
    } else {
        pthread_setname_np(c->thread, "wp-channel"); /* top -H, perf and gdb show what each thread is */
        channel **p = &cs->head;
        while (*p) p = &(*p)->next;
        *p = c;
        cs->st.open++;
        cs->st.opened++;
    }
    pthread_mutex_unlock(&cs->mu);
    return rc;
}

int wp_channels_add(wp_channels *cs, const wp_channel_args *a, wp_channel_info *out, wp_err *err) {
    reap(cs);
    channel *c = calloc(1, sizeof *c);
    if (!c) {
        wp_region_put(a->region);
        return WP_FAIL(err, 507, "out_of_memory", "", "no memory for a channel");
    }
    c->owner = cs;
    c->region = a->region;
    c->user = a->user;
    wp_user_name_copy(a->user, c->info.owner);
    c->info.spin_us = a->spin_us;
    c->info.ttl_s = a->ttl_s;
    c->info.created = c->info.last_used = wp_unix_now();
    new_id(c->info.id);
    int rc = place(c, a, err);
    if (rc == 0 && !(c->req = malloc((size_t)c->info.request_bytes + 1)))
        rc = WP_FAIL(err, 507, "out_of_memory", "", "no memory for a channel");
    if (rc == 0 && out) describe(c, out); /* before its thread runs: it may end at once (its region gone) */
    if (rc == 0) rc = start(cs, c, err);
    if (rc) {
        wp_region_put(c->region);
        free(c->req);
        free(c);
    }
    return rc;
}

static channel *find(wp_channels *cs, const wp_user *who, const char *id) {
    for (channel *c = cs->head; c; c = c->next)
        if (!strcmp(c->info.id, id)) return wp_user_sees(who, c->info.owner) ? c : NULL;
    return NULL;
}

static int unknown(const char *id, wp_err *err) {
    return WP_FAIL(err, 404, "unknown_channel", "id", "no open channel has the id %.40s", id);
}

int wp_channels_info(wp_channels *cs, const wp_user *who, const char *id, wp_channel_info *out, wp_err *err) {
    pthread_mutex_lock(&cs->mu);
    const channel *c = find(cs, who, id);
    if (c) describe(c, out);
    pthread_mutex_unlock(&cs->mu);
    return c ? 0 : unknown(id, err);
}

int wp_channels_remove(wp_channels *cs, const wp_user *who, const char *id, wp_channel_info *out, wp_err *err) {
    pthread_mutex_lock(&cs->mu);
    channel *c = find(cs, who, id);
    if (c) {
        take_off(cs, c);
        describe(c, out);
        atomic_store(&c->stop, true); /* under mu: the thread's end_self leaves it to us */
    }
    pthread_mutex_unlock(&cs->mu);
    if (!c) return unknown(id, err);
    ask_stop(c);
    channel_free(c);
    reap(cs);
    return 0;
}

int wp_channels_list(wp_channels *cs, const wp_user *who, wp_channel_info **out, size_t *n, wp_err *err) {
    reap(cs);
    pthread_mutex_lock(&cs->mu);
    size_t k = 0;
    for (const channel *c = cs->head; c; c = c->next) k += wp_user_sees(who, c->info.owner);
    wp_channel_info *arr = calloc(k ? k : 1, sizeof *arr);
    size_t i = 0;
    for (const channel *c = cs->head; arr && c; c = c->next)
        if (wp_user_sees(who, c->info.owner)) describe(c, &arr[i++]);
    pthread_mutex_unlock(&cs->mu);
    if (!arr) return WP_FAIL(err, 507, "out_of_memory", "", "no memory for the listing");
    *out = arr;
    *n = k;
    return 0;
}

void wp_channels_stats_get(wp_channels *cs, wp_channels_stats *out) {
    pthread_mutex_lock(&cs->mu);
    *out = cs->st;
    pthread_mutex_unlock(&cs->mu);
}
