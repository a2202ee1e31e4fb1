/* bgbuild.c — the background builder (bgbuild.h): a FIFO of asks (a spec copy, its key text and the
 * device), one mutex, one thread that takes the oldest ask and builds it through wp_app_kernel_get.
 * An ask stays in the list while it builds, so a repeat of it is recognised until it is done.
 * Owns: wp_bgbuild, bg_ask. */
#include "bgbuild.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "util/log.h"

typedef struct bg_ask {
    struct bg_ask *next;
    wp_spec spec;
    wp_backend *backend;
    char key[WP_SPEC_KEY_MAX];
} bg_ask;

/* A key asked for lately: the weight of its asks so far, or when it may be tried again after failing. */
typedef struct {
    wp_backend *backend; /* NULL key[0]: a free slot */
    char key[WP_SPEC_KEY_MAX];
    int weight;
    uint64_t retry_ns; /* nonzero: its build failed; refused until then */
} bg_recent;

struct wp_bgbuild {
    wp_app *app;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    bg_ask *head, **tail; /* oldest first; the one building is head */
    int queued;
    bool stopping;
    wp_bgbuild_stats stats;
    bg_recent recent[WP_BGBUILD_RECENT];
};

static void ask_free(bg_ask *a) {
    wp_spec_free(&a->spec);
    free(a);
}

/* Lock held: the slot of (b, key), or NULL. */
static bg_recent *recent_find(wp_bgbuild *bg, const wp_backend *b, const char *key) {
    for (int i = 0; i < WP_BGBUILD_RECENT; i++)
        if (bg->recent[i].key[0] && bg->recent[i].backend == b && !strcmp(bg->recent[i].key, key))
            return &bg->recent[i];
    return NULL;
}

/* Lock held: a slot for (b, key): a free one, else the lightest that has not failed lately. */
static bg_recent *recent_take(wp_bgbuild *bg, wp_backend *b, const char *key, uint64_t now) {
    bg_recent *pick = NULL;
    for (int i = 0; i < WP_BGBUILD_RECENT; i++) {
        bg_recent *r = &bg->recent[i];
        if (!r->key[0]) {
            pick = r;
            break;
        }
        if (r->retry_ns > now) continue;
        if (!pick || r->weight < pick->weight) pick = r;
    }
    if (!pick) pick = &bg->recent[0]; /* every slot failed lately: forget one */
    pick->backend = b;
    snprintf(pick->key, sizeof pick->key, "%s", key);
    pick->weight = 0;
    pick->retry_ns = 0;
    return pick;
}

static void build(wp_bgbuild *bg, bg_ask *a) {
    wp_ready_kernel rk;
    wp_err err = {0};
    int rc = wp_app_kernel_get(bg->app, &a->spec, a->backend, &rk, &err);
    if (rc == 0) {
        wp_log(WP_LOG_DEBUG, "background build %s: %s", rk.hash,
               rk.source == WP_SRC_COMPILE ? "compiled"
               : rk.source == WP_SRC_DISK  ? "from disk"
                                           : "in memory");
        wp_app_kernel_put(bg->app, &rk);
    } else {
        wp_log(WP_LOG_WARN, "background build of %s failed (not tried again for %d s): %s", a->key, WP_BGBUILD_RETRY_S,
               err.msg);
    }
    pthread_mutex_lock(&bg->lock);
    bg_recent *r = recent_find(bg, a->backend, a->key);
    if (rc == 0) {
        bg->stats.built++;
        if (r) memset(r, 0, sizeof *r); /* in memory now; if it leaves the cache, asks weigh up again */
    } else {
        bg->stats.failed++;
        if (!r) r = recent_take(bg, a->backend, a->key, wp_now_ns());
        r->weight = 0;
        r->retry_ns = wp_now_ns() + (uint64_t)WP_BGBUILD_RETRY_S * 1000000000ull;
    }
    pthread_mutex_unlock(&bg->lock);
}

static void *bg_main(void *arg) {
    wp_bgbuild *bg = arg;
    pthread_mutex_lock(&bg->lock);
    for (;;) {
        while (!bg->head && !bg->stopping) pthread_cond_wait(&bg->wake, &bg->lock);
        if (bg->stopping) break;
        bg_ask *a = bg->head; /* stays head (asked() sees it) until built */
        pthread_mutex_unlock(&bg->lock);
        build(bg, a);
        pthread_mutex_lock(&bg->lock);
        bg->head = a->next;
        if (!bg->head) bg->tail = &bg->head;
        bg->queued--;
        ask_free(a);
    }
    pthread_mutex_unlock(&bg->lock);
    return NULL;
}

wp_bgbuild *wp_bgbuild_open(wp_app *app) {
    wp_bgbuild *bg = calloc(1, sizeof *bg);
    if (!bg) return NULL;
    bg->app = app;
    bg->tail = &bg->head;
    bool lock = pthread_mutex_init(&bg->lock, NULL) == 0;
    bool cond = lock && pthread_cond_init(&bg->wake, NULL) == 0;
    if (!cond || pthread_create(&bg->thread, NULL, bg_main, bg) != 0) {
        if (cond) pthread_cond_destroy(&bg->wake);
        if (lock) pthread_mutex_destroy(&bg->lock);
        free(bg);
        return NULL;
    }
    pthread_setname_np(bg->thread, "wp-bgbuild"); /* top -H, perf and gdb show what each thread is */
    return bg;
}

void wp_bgbuild_close(wp_bgbuild *bg) {
    if (!bg) return;
    pthread_mutex_lock(&bg->lock);
    bg->stopping = true;
    pthread_cond_signal(&bg->wake);
    pthread_mutex_unlock(&bg->lock);
    pthread_join(bg->thread, NULL);
    for (bg_ask *a = bg->head, *next; a; a = next) {
        next = a->next;
        ask_free(a);
    }
    pthread_cond_destroy(&bg->wake);
    pthread_mutex_destroy(&bg->lock);
    free(bg);
}

/* Lock held: whether (b, key) is queued or building. */
static bool asked(const wp_bgbuild *bg, const wp_backend *b, const char *key) {
    for (const bg_ask *a = bg->head; a; a = a->next)
        if (a->backend == b && !strcmp(a->key, key)) return true;
    return false;
}

/* Lock held: queues a (taking it) unless it is known or there is no room; returns whether (b, key)
 * is queued now, and frees a when it was not taken. */
static bool enqueue(wp_bgbuild *bg, bg_ask *a) {
    if (asked(bg, a->backend, a->key)) {
        ask_free(a);
        return true;
    }
    if (bg->queued >= WP_BGBUILD_QUEUE_MAX || bg->stopping) {
        bg->stats.dropped++;
        ask_free(a);
        return false;
    }
    *bg->tail = a;
    bg->tail = &a->next;
    bg->queued++;
    bg->stats.asked++;
    pthread_cond_signal(&bg->wake);
    return true;
}

bool wp_bgbuild_want(wp_bgbuild *bg, const wp_spec *s, wp_backend *b, int weight) {
    if (!bg) return false;
    char key[WP_SPEC_KEY_MAX];
    if (wp_spec_key_text(s, key, sizeof key) < 0) return false;
    if (weight < 1) weight = 1;
    /* a repeat (every batch until the build is done) copies nothing; a key under its weight neither */
    pthread_mutex_lock(&bg->lock);
    bool known = asked(bg, b, key), ready = false;
    if (!known) {
        const uint64_t now = wp_now_ns();
        bg_recent *r = recent_find(bg, b, key);
        if (r && r->retry_ns > now) {
            pthread_mutex_unlock(&bg->lock);
            return false; /* failed lately */
        }
        if (!r) r = recent_take(bg, b, key, now);
        r->retry_ns = 0;
        r->weight += weight;
        ready = r->weight >= WP_BGBUILD_THRESHOLD;
    }
    pthread_mutex_unlock(&bg->lock);
    if (known) return true;
    if (!ready) return false;
    bg_ask *a = calloc(1, sizeof *a);
    if (!a || wp_spec_copy(&a->spec, s)) {
        free(a);
        return false;
    }
    a->backend = b;
    memcpy(a->key, key, sizeof key);
    pthread_mutex_lock(&bg->lock);
    bool queued = enqueue(bg, a); /* another thread may have asked meanwhile */
    pthread_mutex_unlock(&bg->lock);
    return queued;
}

void wp_bgbuild_stats_get(wp_bgbuild *bg, wp_bgbuild_stats *out) {
    memset(out, 0, sizeof *out);
    if (!bg) return;
    pthread_mutex_lock(&bg->lock);
    *out = bg->stats;
    out->queued = bg->queued;
    pthread_mutex_unlock(&bg->lock);
}
