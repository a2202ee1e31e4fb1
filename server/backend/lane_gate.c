/* lane_gate.c — a device's free lanes handed out in turn by user (see lane_gate.h). Owns: each gate's
 * free lanes, user slots and waiter queues. */
#include "lane_gate.h"

#include <stdio.h>
#include <string.h>

struct wp_lane_waiter {
    wp_lane_waiter *next;
    pthread_cond_t cv;
    uint64_t ticket; /* its place among all waiters */
    void *lane;      /* what it was given (NULL: woken by wp_lane_gate_wake_all) */
    bool done;
};

void wp_lane_gate_init(wp_lane_gate *g) { memset(g, 0, sizeof *g); }

void wp_lane_gate_put(wp_lane_gate *g, void *lane) {
    if (g->n_free < WP_LANE_GATE_LANES) g->free[g->n_free++] = lane;
}

static bool slot_idle(const wp_lane_gate *g, int s) { return !g->user[s].held && !g->user[s].head; }

/* user's slot: the one it has, else an idle one (renamed), else a new one, else the last. */
static int slot_of(wp_lane_gate *g, const char *user) {
    const char *name = user ? user : "";
    int idle = -1;
    for (int i = 0; i < g->users; i++) {
        if (!strncmp(g->user[i].name, name, WP_ON_BEHALF_MAX)) return i;
        if (idle < 0 && slot_idle(g, i)) idle = i;
    }
    int s = idle >= 0 ? idle : g->users < WP_LANE_GATE_USERS ? g->users++ : WP_LANE_GATE_USERS - 1;
    if (slot_idle(g, s)) {
        snprintf(g->user[s].name, sizeof g->user[s].name, "%s", name);
        g->user[s].served = 0;
    }
    return s;
}

static void *grant(wp_lane_gate *g, int s, void *lane) {
    g->user[s].held++;
    g->user[s].served = ++g->turns;
    return lane;
}

void *wp_lane_gate_take(wp_lane_gate *g, pthread_mutex_t *mu, const char *user, int *who) {
    int s = *who = slot_of(g, user);
    if (g->n_free) return grant(g, s, g->free[--g->n_free]); /* none waits while a lane is free */
    wp_lane_waiter w = {.ticket = ++g->arrivals};
    pthread_cond_init(&w.cv, NULL);
    if (g->user[s].tail)
        g->user[s].tail->next = &w;
    else
        g->user[s].head = &w;
    g->user[s].tail = &w;
    g->waiting++;
    while (!w.done) pthread_cond_wait(&w.cv, mu);
    pthread_cond_destroy(&w.cv);
    return w.lane;
}

static wp_lane_waiter *dequeue(wp_lane_gate *g, int s) {
    wp_lane_waiter *w = g->user[s].head;
    g->user[s].head = w->next;
    if (!w->next) g->user[s].tail = NULL;
    g->waiting--;
    return w;
}

/* Whether slot a's turn comes before slot b's (both with a waiter): see lane_gate.h. */
static bool before(const wp_lane_gate *g, int a, int b) {
    if (g->user[a].held != g->user[b].held) return g->user[a].held < g->user[b].held;
    if (g->user[a].served != g->user[b].served) return g->user[a].served < g->user[b].served;
    return g->user[a].head->ticket < g->user[b].head->ticket;
}

void wp_lane_gate_give(wp_lane_gate *g, int who, void *lane) {
    if (who >= 0 && who < WP_LANE_GATE_USERS && g->user[who].held > 0) g->user[who].held--;
    int next = -1;
    for (int i = 0; g->waiting && i < g->users; i++)
        if (g->user[i].head && (next < 0 || before(g, i, next))) next = i;
    if (next < 0) {
        wp_lane_gate_put(g, lane);
        return;
    }
    wp_lane_waiter *w = dequeue(g, next);
    w->lane = grant(g, next, lane);
    w->done = true;
    pthread_cond_signal(&w->cv);
}

void wp_lane_gate_wake_all(wp_lane_gate *g) {
    for (int i = 0; i < g->users; i++) {
        while (g->user[i].head) {
            wp_lane_waiter *w = dequeue(g, i);
            w->lane = NULL;
            w->done = true;
            pthread_cond_signal(&w->cv);
        }
    }
}

bool wp_lane_gate_idle(const wp_lane_gate *g) { return g->n_free > 0 && !g->waiting; }

int wp_lane_gate_waiting(const wp_lane_gate *g) { return g->waiting; }
