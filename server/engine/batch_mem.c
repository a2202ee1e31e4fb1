/* batch_mem.c — device memory for batched launches (batch_exec.h): a few idle buffers per daemon,
 * taken by a batch for its upload, launch and download and given back after, so a batch costs no
 * allocation. A buffer made in an older context generation (cuda reset) is dropped, not reused.
 * Owns: wp_batch_mem and its idle buffers. */
#include <pthread.h>
#include <stdlib.h>

#include "batch_exec.h"

#define BATCH_MEM_IDLE_MAX 8
#define BATCH_MEM_MIN (256u << 10)

typedef struct idle_buf {
    struct idle_buf *next;
    wp_buf *buf;
    wp_backend *backend;
    unsigned generation;
} idle_buf;

struct wp_batch_mem {
    pthread_mutex_t lock;
    idle_buf *idle;
    int n_idle;
};

wp_batch_mem *wp_batch_mem_open(void) {
    wp_batch_mem *m = calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void wp_batch_mem_close(wp_batch_mem *m) {
    if (!m) return;
    for (idle_buf *x = m->idle, *next; x; x = next) {
        next = x->next;
        wp_buf_free(x->buf);
        free(x);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

wp_buf *wp_batch_mem_take(wp_batch_mem *m, wp_backend *b, size_t need, wp_err *err) {
    const unsigned generation = wp_backend_generation(b);
    idle_buf *found = NULL, *stale = NULL;
    pthread_mutex_lock(&m->lock);
    for (idle_buf **pp = &m->idle; *pp;) {
        idle_buf *x = *pp;
        bool dead = x->backend == b && x->generation != generation;
        if (dead || (!found && x->backend == b && wp_buf_size(x->buf) >= need)) {
            *pp = x->next;
            m->n_idle--;
            if (dead) {
                x->next = stale;
                stale = x;
            } else {
                found = x;
            }
            continue;
        }
        pp = &x->next;
    }
    pthread_mutex_unlock(&m->lock);
    for (idle_buf *x = stale, *next; x; x = next) {
        next = x->next;
        wp_buf_free(x->buf);
        free(x);
    }
    if (found) {
        wp_buf *buf = found->buf;
        free(found);
        return buf;
    }
    return wp_buf_alloc(b, need < BATCH_MEM_MIN ? BATCH_MEM_MIN : need, err);
}

void wp_batch_mem_put(wp_batch_mem *m, wp_buf *buf, bool ok) {
    idle_buf *x = ok ? calloc(1, sizeof *x) : NULL;
    if (!x) {
        wp_buf_free(buf);
        return;
    }
    x->buf = buf;
    x->backend = wp_buf_backend(buf);
    x->generation = wp_backend_generation(x->backend);
    pthread_mutex_lock(&m->lock);
    bool keep = m->n_idle < BATCH_MEM_IDLE_MAX;
    if (keep) {
        x->next = m->idle;
        m->idle = x;
        m->n_idle++;
    }
    pthread_mutex_unlock(&m->lock);
    if (!keep) {
        wp_buf_free(buf);
        free(x);
    }
}
