/* api_cache_prune.c — against a live daemon: the cache is pruned (DELETE /v1/cache) while an async
 * reduce job runs from one of its entries (it has looked the entry up: the listing counts its hit).
 * The job finishes with the right value, the entry is gone
 * from both tiers, the next request recompiles it, and the rewritten file is whole (its size is
 * what the listing says, and a disk reload of it after a memory-only delete serves).
 * Usage: api_cache_prune BASE_URL (WARPD_CACHE_DIR names the daemon's cache directory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/http_client.h"
#include "tests/unit/t.h"

#define BIG_N 33554432 /* 2^25 ones: an exact f32 sum, and seconds of work on the sanitized emulator */

static char host[256];
static int port;

static int call(const char *method, const char *path, const char *body, hc_resp *r) {
    static const char *const json[] = {"Content-Type: application/json", NULL};
    return hc_request(host, port, method, path, body ? json : NULL, body, body ? strlen(body) : 0, 0, r, NULL, 0);
}

/* The string value of "name" in a flat JSON text ("" when absent). */
static void field(const char *body, const char *name, char *out, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", name);
    const char *p = body ? strstr(body, pat) : NULL;
    out[0] = 0;
    if (!p) return;
    p += strlen(pat);
    size_t len = strcspn(p, "\"");
    if (len >= n) len = n - 1;
    memcpy(out, p, len);
    out[len] = 0;
}

static const char *reduce_body(long n, char *buf, size_t cap) {
    snprintf(buf, cap,
             "{\"type\":\"f32\",\"op\":\"sum\",\"block\":256,\"compile\":true,"
             "\"generate\":{\"kind\":\"constant\",\"n\":%ld,\"value\":1}}",
             n);
    return buf;
}

/* Polls the job until its state is not `while_state`; returns the last body's state. */
static void wait_job(const char *id, const char *while_state, char *state, size_t n, hc_resp *last) {
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    for (int i = 0; i < 2400; i++) {
        hc_resp_free(last);
        if (call("GET", path, NULL, last)) break;
        field(last->body, "state", state, n);
        if (strcmp(state, while_state) != 0 && strcmp(state, "queued") != 0) return;
        usleep(25 * 1000);
    }
}

int main(int argc, char **argv) {
    char prefix[64], body[512], hash[65], path[160], state[32] = "";
    if (argc < 2 || hc_parse_url(argv[1], host, sizeof host, &port, prefix, sizeof prefix)) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    const char *dir = getenv("WARPD_CACHE_DIR");
    hc_resp r = {0};

    T_CASE("the entry the job will run from");
    CHECK(call("POST", "/v1/reduce", reduce_body(1000, body, sizeof body), &r) == 0 && r.status == 200);
    field(r.body, "hash", hash, sizeof hash);
    CHECKF(strlen(hash) == 64, "no hash in %.200s", r.body ? r.body : "");
    hc_resp_free(&r);
    char file[1024] = "";
    struct stat st;
    if (dir) snprintf(file, sizeof file, "%s/%.2s/%s.wpk", dir, hash, hash);
    CHECKF(!dir || stat(file, &st) == 0, "no file %s", file);

    T_CASE("prune while the job runs");
    char job_body[600], id[64];
    snprintf(job_body, sizeof job_body, "{\"kind\":\"reduce\",\"request\":%s}", reduce_body(BIG_N, body, sizeof body));
    CHECK(call("POST", "/v1/jobs", job_body, &r) == 0 && r.status == 202);
    field(r.body, "id", id, sizeof id);
    hc_resp_free(&r);
    /* The job holds the entry once it has looked it up: a memory hit, counted in the listing. */
    snprintf(path, sizeof path, "/v1/cache/%s", hash);
    bool held = false;
    for (int i = 0; i < 2400 && !held; i++) {
        if (call("GET", path, NULL, &r)) break;
        held = r.body && strstr(r.body, "\"hits\":1");
        hc_resp_free(&r);
        if (!held) usleep(5 * 1000);
    }
    CHECK(held);
    wait_job(id, "queued", state, sizeof state, &r);
    bool overlapped = strcmp(state, "running") == 0;
    hc_resp_free(&r);
    CHECK(call("DELETE", "/v1/cache", NULL, &r) == 0 && r.status == 200);
    CHECKF(r.body && !strstr(r.body, "\"disk\":0,"), "nothing removed from the disk: %s", r.body ? r.body : "");
    hc_resp_free(&r);
    CHECK(call("GET", path, NULL, &r) == 0 && r.status == 404);
    hc_resp_free(&r);
    CHECKF(!dir || stat(file, &st) != 0, "%s still there", file);

    T_CASE("the job finishes with the right value");
    wait_job(id, "running", state, sizeof state, &r);
    CHECKF(strcmp(state, "done") == 0 && r.body && strstr(r.body, "\"value\":33554432"), "job: %.300s",
           r.body ? r.body : "");
    hc_resp_free(&r);
    printf("the prune %s the job\n", overlapped ? "overlapped" : "came after (a fast machine)");

    T_CASE("the next request recompiles, and the new file is whole");
    CHECK(call("POST", "/v1/reduce", reduce_body(1000, body, sizeof body), &r) == 0 && r.status == 200);
    CHECKF(r.body && strstr(r.body, "\"cache\":\"compile\""), "%.300s", r.body ? r.body : "");
    hc_resp_free(&r);
    CHECK(call("GET", path, NULL, &r) == 0 && r.status == 200 && r.body && strstr(r.body, "\"tier\":\"both\""));
    char want[64];
    if (dir && stat(file, &st) == 0) {
        snprintf(want, sizeof want, "\"disk_bytes\":%lld", (long long)st.st_size);
        CHECKF(r.body && strstr(r.body, want), "listing %s, file %lld bytes", r.body ? r.body : "",
               (long long)st.st_size);
    }
    hc_resp_free(&r);
    snprintf(path, sizeof path, "/v1/cache/%s?tier=memory", hash);
    CHECK(call("DELETE", path, NULL, &r) == 0 && r.status == 200);
    hc_resp_free(&r);
    CHECK(call("POST", "/v1/reduce", reduce_body(1000, body, sizeof body), &r) == 0 && r.status == 200);
    CHECKF(r.body && strstr(r.body, "\"cache\":\"disk\"") && strstr(r.body, "\"count\":1000,"), "%.300s",
           r.body ? r.body : "");
    hc_resp_free(&r);
    return t_done("api_cache_prune");
}
