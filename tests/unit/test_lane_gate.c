/* test_lane_gate.c — a device's lanes handed out in turn by user (server/backend/lane_gate.c) and the
 * per-thread note that names the user (server/util/on_behalf.c): one user's single operation waiting
 * behind another's queue gets the next lane given back; first come first served within a user; round-robin
 * over three users; the user holding fewer lanes first; a lost device waking every waiter with no lane;
 * slots shared past WP_LANE_GATE_USERS and reused once idle.
 *
 * Each operation is a thread that really waits in the gate. The test starts them one at a time and waits
 * until the gate counts each one queued before starting the next (a handshake on the gate's own state),
 * so the queue's order is fixed; each thread records its turn when it gets a lane and gives the lane
 * straight back, so with one lane in play the record is the order the gate chose. No timing decides. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/lane_gate.h"
#include "t.h"
#include "util/on_behalf.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* the device's mutex: guards gate and the record */
static wp_lane_gate gate;
static char record[128]; /* the ops' tags, in the order they got a lane ("-": woken with none) */

typedef struct {
    const char *user; /* NULL: the daemon */
    const char *tag;
    pthread_t thread;
} op;

/* One operation: takes a lane as its user (named by its thread's note, as a worker's would be),
 * records its turn and gives the lane back at once. */
static void *op_main(void *p) {
    op *o = p;
    wp_on_behalf_set(o->user);
    pthread_mutex_lock(&mu);
    int who = -1;
    void *lane = wp_lane_gate_take(&gate, &mu, wp_on_behalf(), &who);
    snprintf(record + strlen(record), sizeof record - strlen(record), "%s%s", *record ? " " : "", lane ? o->tag : "-");
    if (lane) wp_lane_gate_give(&gate, who, lane);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Waits (mu held) until n threads are queued in the gate: the handshake, not a timing. */
static void await_waiting(int n) {
    while (wp_lane_gate_waiting(&gate) < n) {
        pthread_mutex_unlock(&mu);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&mu);
    }
}

/* Starts ops[0..n) one after another, each queued before the next starts. mu held. */
static void queue_ops(op *ops, int n) {
    int base = wp_lane_gate_waiting(&gate);
    for (int i = 0; i < n; i++) {
        pthread_create(&ops[i].thread, NULL, op_main, &ops[i]);
        await_waiting(base + i + 1);
    }
}

static void join_ops(op *ops, int n) {
    for (int i = 0; i < n; i++) pthread_join(ops[i].thread, NULL);
}

/* A fresh gate of n lanes (their addresses: lanes[0..n)), the record empty. */
static char lanes[WP_LANE_GATE_LANES];
static void reset(int n) {
    wp_lane_gate_init(&gate);
    for (int i = n - 1; i >= 0; i--) wp_lane_gate_put(&gate, &lanes[i]);
    record[0] = 0;
}

static void test_small_one_next(void) {
    T_CASE("one lane: a flood's three waiters, then one tiny op: the tiny op gets the lane next");
    reset(1);
    pthread_mutex_lock(&mu);
    int who;
    void *lane = wp_lane_gate_take(&gate, &mu, "flood", &who); /* the flood's op running */
    CHECK(lane == &lanes[0] && wp_lane_gate_waiting(&gate) == 0 && !wp_lane_gate_idle(&gate));
    op ops[] = {{"flood", "f1", 0}, {"flood", "f2", 0}, {"flood", "f3", 0}, {"tiny", "t1", 0}};
    queue_ops(ops, 4);
    wp_lane_gate_give(&gate, who, lane);
    pthread_mutex_unlock(&mu);
    join_ops(ops, 4);
    CHECKF(!strcmp(record, "t1 f1 f2 f3"), "%s", record); /* first come first served: f1 f2 f3 t1 */
    CHECK(wp_lane_gate_idle(&gate) && wp_lane_gate_waiting(&gate) == 0);
}

static void test_round_robin(void) {
    T_CASE("one lane, three users waiting: in turn by user, first come first served within each");
    reset(1);
    pthread_mutex_lock(&mu);
    int who;
    void *lane = wp_lane_gate_take(&gate, &mu, "a", &who);
    op ops[] = {{"a", "a1", 0}, {"a", "a2", 0}, {"b", "b1", 0}, {"b", "b2", 0}, {"c", "c1", 0}, {NULL, "d1", 0}};
    queue_ops(ops, 6);
    wp_lane_gate_give(&gate, who, lane);
    pthread_mutex_unlock(&mu);
    join_ops(ops, 6);
    /* a was served last (the lane it gave back); b, c and the daemon never: by their first waiter's arrival */
    CHECKF(!strcmp(record, "b1 c1 d1 a1 b2 a2"), "%s", record);
}

static void test_fewest_held(void) {
    T_CASE("the user holding fewer lanes first, though served more recently");
    reset(3);
    pthread_mutex_lock(&mu);
    int wb1, wb2, wa;
    void *x = wp_lane_gate_take(&gate, &mu, "b", &wb1), *y = wp_lane_gate_take(&gate, &mu, "b", &wb2);
    void *z = wp_lane_gate_take(&gate, &mu, "a", &wa); /* b holds 2, a 1 and was served last */
    CHECK(x == &lanes[0] && y == &lanes[1] && z == &lanes[2] && wb1 == wb2 && wa != wb1);
    op ops[] = {{"b", "b1", 0}, {"a", "a1", 0}};
    queue_ops(ops, 2);
    wp_lane_gate_give(&gate, wa, z); /* a holds none now, b still 2 */
    pthread_mutex_unlock(&mu);
    join_ops(ops, 2);
    CHECKF(!strcmp(record, "a1 b1"), "%s", record);
    pthread_mutex_lock(&mu);
    wp_lane_gate_give(&gate, wb1, x);
    wp_lane_gate_give(&gate, wb2, y);
    CHECK(gate.n_free == 3 && wp_lane_gate_idle(&gate));
    pthread_mutex_unlock(&mu);
}

static void test_wake_all(void) {
    T_CASE("a lost device: every waiter woken with no lane");
    reset(1);
    pthread_mutex_lock(&mu);
    int who;
    void *lane = wp_lane_gate_take(&gate, &mu, "a", &who);
    op ops[] = {{"a", "a1", 0}, {"b", "b1", 0}};
    queue_ops(ops, 2);
    wp_lane_gate_wake_all(&gate);
    CHECK(wp_lane_gate_waiting(&gate) == 0);
    pthread_mutex_unlock(&mu);
    join_ops(ops, 2);
    CHECKF(!strcmp(record, "- -"), "%s", record);
    pthread_mutex_lock(&mu);
    wp_lane_gate_give(&gate, who, lane);
    CHECK(wp_lane_gate_idle(&gate));
    pthread_mutex_unlock(&mu);
}

static void test_slots(void) {
    T_CASE("slots: one per user, the daemon's own, shared past the limit, reused once idle");
    reset(WP_LANE_GATE_LANES);
    pthread_mutex_lock(&mu);
    int who[WP_LANE_GATE_USERS + 8];
    void *got[WP_LANE_GATE_USERS + 8];
    int n = WP_LANE_GATE_USERS + 8;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "user%d", i);
        got[i] = wp_lane_gate_take(&gate, &mu, name, &who[i]);
    }
    CHECK(who[0] == 0 && who[WP_LANE_GATE_USERS - 1] == WP_LANE_GATE_USERS - 1);
    CHECK(who[WP_LANE_GATE_USERS] == WP_LANE_GATE_USERS - 1 && who[n - 1] == WP_LANE_GATE_USERS - 1);
    int w1, w2;
    void *again = wp_lane_gate_take(&gate, &mu, "user3", &w1); /* its slot, found again */
    CHECK(again && w1 == 3 && gate.user[3].held == 2);
    wp_lane_gate_give(&gate, w1, again);
    for (int i = 0; i < n; i++) wp_lane_gate_give(&gate, who[i], got[i]);
    CHECK(gate.n_free == WP_LANE_GATE_LANES);
    void *l1 = wp_lane_gate_take(&gate, &mu, "someone-new", &w1); /* every slot idle: the first, renamed */
    void *l2 = wp_lane_gate_take(&gate, &mu, NULL, &w2);          /* the daemon: a slot of its own */
    CHECK(w1 == 0 && w2 == 1 && !strcmp(gate.user[0].name, "someone-new") && !strcmp(gate.user[1].name, ""));
    wp_lane_gate_give(&gate, w1, l1);
    wp_lane_gate_give(&gate, w2, l2);
    pthread_mutex_unlock(&mu);
}

static void *note_of_new_thread(void *p) {
    *(const char **)p = wp_on_behalf();
    return NULL;
}

static void test_note(void) {
    T_CASE("on_behalf: the thread's own note, copied and cut; NULL for the daemon");
    CHECK(wp_on_behalf() == NULL);
    char name[] = "alice";
    wp_on_behalf_set(name);
    name[0] = 'X'; /* copied */
    CHECK(wp_on_behalf() && !strcmp(wp_on_behalf(), "alice"));
    wp_on_behalf_set(wp_on_behalf()); /* its own note again: unchanged */
    CHECK(!strcmp(wp_on_behalf(), "alice"));
    const char *other = "unset";
    pthread_t t;
    pthread_create(&t, NULL, note_of_new_thread, &other);
    pthread_join(t, NULL);
    CHECK(other == NULL); /* another thread starts with none */
    wp_on_behalf_set("0123456789abcdef0123456789abcdefTAIL");
    CHECK(strlen(wp_on_behalf()) == WP_ON_BEHALF_MAX && !strncmp(wp_on_behalf(), "0123456789abcdef", 16));
    wp_on_behalf_set("");
    CHECK(wp_on_behalf() == NULL);
    wp_on_behalf_set("bob");
    wp_on_behalf_set(NULL);
    CHECK(wp_on_behalf() == NULL);
}

int main(void) {
    test_note();
    test_small_one_next();
    test_round_robin();
    test_fewest_held();
    test_wake_all();
    test_slots();
    return t_done("lane_gate");
}
