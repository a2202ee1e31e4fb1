/* fairq.c — round-robin by owner over FIFO lanes (see fairq.h). Owns: the lanes of each wp_fairq. */
#include "fairq.h"

#include <stdio.h>
#include <string.h>

void wp_fairq_init(wp_fairq *q) { memset(q, 0, sizeof *q); }

/* owner's lane: the one it has, else an empty one (renamed), else a new one, else the last. */
static int lane_of(wp_fairq *q, const char *owner) {
    int empty = -1;
    for (int i = 0; i < q->lanes; i++) {
        if (!strncmp(q->lane[i].owner, owner, WP_FAIRQ_NAME_MAX)) return i;
        if (empty < 0 && !q->lane[i].head) empty = i;
    }
    int l = empty >= 0 ? empty : q->lanes < WP_FAIRQ_LANES ? q->lanes++ : WP_FAIRQ_LANES - 1;
    if (!q->lane[l].head) snprintf(q->lane[l].owner, sizeof q->lane[l].owner, "%s", owner);
    return l;
}

void wp_fairq_push(wp_fairq *q, wp_fair_node *n, const char *owner) {
    int l = lane_of(q, owner ? owner : "");
    n->next = NULL;
    n->lane = l;
    if (q->lane[l].tail)
        q->lane[l].tail->next = n;
    else
        q->lane[l].head = n;
    q->lane[l].tail = n;
    q->depth++;
}

wp_fair_node *wp_fairq_pop(wp_fairq *q) {
    if (!q->depth) return NULL;
    for (int k = 0; k < q->lanes; k++) {
        int l = (q->cursor + k) % q->lanes;
        wp_fair_node *n = q->lane[l].head;
        if (!n) continue;
        q->lane[l].head = n->next;
        if (!n->next) q->lane[l].tail = NULL;
        n->next = NULL;
        q->cursor = l + 1; /* the lane after it, or (modulo the lanes then) the first */
        q->depth--;
        q->taken++;
        return n;
    }
    return NULL; /* not reached: depth counts the lanes' nodes */
}

bool wp_fairq_remove(wp_fairq *q, wp_fair_node *n) {
    if (n->lane < 0 || n->lane >= q->lanes) return false;
    wp_fair_node *prev = NULL;
    for (wp_fair_node *it = q->lane[n->lane].head; it; prev = it, it = it->next) {
        if (it != n) continue;
        if (prev)
            prev->next = n->next;
        else
            q->lane[n->lane].head = n->next;
        if (q->lane[n->lane].tail == n) q->lane[n->lane].tail = prev;
        n->next = NULL;
        q->depth--;
        return true;
    }
    return false;
}
