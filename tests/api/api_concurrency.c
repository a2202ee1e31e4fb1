/* api_concurrency.c — against a live daemon: 32 clients ask at once for one kernel nobody compiled
 * yet; exactly one NVRTC compile may happen (GET /v1/info's cache.compiles), all 32 get the same
 * answer, and exactly one of them reports "cache":"compile". Usage: api_concurrency BASE_URL */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/http_client.h"
#include "tests/unit/t.h"

#define CLIENTS 32

typedef struct {
    const char *host;
    int port;
    const char *body;
    hc_resp resp;
    int rc;
} client;

static pthread_barrier_t start_line;

static void *run_client(void *arg) {
    client *c = arg;
    pthread_barrier_wait(&start_line);
    c->rc = hc_request(c->host, c->port, "POST", "/v1/warp", NULL, c->body, strlen(c->body), 0, &c->resp, NULL, 0);
    return NULL;
}

static long compiles(const char *host, int port) {
    hc_resp r;
    if (hc_request(host, port, "GET", "/v1/info", NULL, NULL, 0, 0, &r, NULL, 0)) return -1;
    const char *p = r.body ? strstr(r.body, "\"compiles\":") : NULL;
    long n = p ? strtol(p + 11, NULL, 10) : -1;
    hc_resp_free(&r);
    return n;
}

/* The part of a response that must be the same for everyone: up to the timing-dependent fields. */
static size_t stable_prefix(const char *body) {
    const char *p = strstr(body, "\"backend\"");
    return p ? (size_t)(p - body) : strlen(body);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    char host[256], prefix[64];
    int port;
    if (hc_parse_url(argv[1], host, sizeof host, &port, prefix, sizeof prefix)) return 2;
    /* A spec no other test uses, unique per run so a reused cache dir can't pre-warm it. */
    char body[256];
    snprintf(body, sizeof body,
             "{\"family\":\"warp_allreduce\",\"type\":\"i32\",\"op\":\"a + b * %ld\",\"input\":{\"iota\":32}}",
             (long)(time(NULL) % 100000) + 3);
    T_CASE("32 concurrent cold requests");
    long before = compiles(host, port);
    CHECK(before >= 0);
    client cl[CLIENTS];
    pthread_t th[CLIENTS];
    pthread_barrier_init(&start_line, NULL, CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        cl[i] = (client){.host = host, .port = port, .body = body};
        pthread_create(&th[i], NULL, run_client, &cl[i]);
    }
    for (int i = 0; i < CLIENTS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start_line);
    long after = compiles(host, port);
    CHECKF(after - before == 1, "compiles went from %ld to %ld", before, after);
    int fresh = 0;
    for (int i = 0; i < CLIENTS; i++) {
        CHECKF(cl[i].rc == 0 && cl[i].resp.status == 200, "client %d: rc %d status %d", i, cl[i].rc, cl[i].resp.status);
        if (cl[i].rc || !cl[i].resp.body) continue;
        fresh += strstr(cl[i].resp.body, "\"cache\":\"compile\"") != NULL;
        size_t n0 = stable_prefix(cl[0].resp.body ? cl[0].resp.body : ""), ni = stable_prefix(cl[i].resp.body);
        CHECKF(n0 == ni && !memcmp(cl[0].resp.body, cl[i].resp.body, ni), "client %d answered differently", i);
    }
    CHECKF(fresh == 1, "%d clients report a fresh compile", fresh);
    for (int i = 0; i < CLIENTS; i++) hc_resp_free(&cl[i].resp);
    return t_done("api_concurrency");
}
