/* prewarm.c — many compiles at once: a batch of specs spread over threads (POST /v1/compile with
 * "specs"), the background --prewarm run that GET /v1/ready reports on, and --prewarm --exit.
 * Owns: wp_prewarm (its thread, its document, its progress). Each spec goes through
 * wp_compile_spec (api_compile.c), so a batch answers exactly what one request per spec would. */
#include "prewarm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static const char *const doc_fields[] = {"specs", "description", NULL};

const cJSON *wp_prewarm_specs(const cJSON *doc, wp_err *err) {
    if (!cJSON_IsObject(doc)) {
        WP_FAIL(err, 400, "wrong_type", "", "the body must be an object {\"specs\":[...]}");
        return NULL;
    }
    for (const cJSON *f = doc->child; f; f = f->next) {
        bool known = false;
        for (int i = 0; doc_fields[i]; i++) known |= f->string && !strcmp(f->string, doc_fields[i]);
        if (!known) {
            WP_FAIL(err, 400, "unknown_field", f->string ? f->string : "",
                    "with \"specs\" the body takes only specs and description, not %.60s", f->string ? f->string : "");
            return NULL;
        }
    }
    const cJSON *specs = cJSON_GetObjectItemCaseSensitive(doc, "specs");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(doc, "description");
    if (desc && !cJSON_IsString(desc)) {
        WP_FAIL(err, 400, "wrong_type", "description", "description must be a string");
        return NULL;
    }
    if (!cJSON_IsArray(specs)) {
        WP_FAIL(err, 400, "wrong_type", "specs", "specs must be an array of compile requests");
        return NULL;
    }
    if (cJSON_GetArraySize(specs) > WP_PREWARM_MAX_SPECS) {
        WP_FAIL(err, 400, "too_many_specs", "specs", "specs has %d items; at most %d", cJSON_GetArraySize(specs),
                WP_PREWARM_MAX_SPECS);
        return NULL;
    }
    return specs;
}

/* ---- the batch ---- */

typedef struct {
    wp_app *app;
    const cJSON **items;
    cJSON **results;
    int n;
    atomic_int next;
    wp_batch_progress *p;
} batch;

static cJSON *error_json(const wp_err *e, int index) {
    cJSON *o = cJSON_CreateObject();
    cJSON *error = cJSON_AddObjectToObject(o, "error");
    char field[96];
    snprintf(field, sizeof field, "specs[%d]%s%s", index, e->field[0] ? "." : "", e->field);
    cJSON_AddStringToObject(error, "code", e->code ? e->code : "internal");
    cJSON_AddStringToObject(error, "message", e->msg);
    cJSON_AddStringToObject(error, "field", field);
    cJSON_AddNumberToObject(error, "status", e->status ? e->status : 500);
    return o;
}

static void *batch_worker(void *arg) {
    batch *b = arg;
    for (int i; (i = atomic_fetch_add(&b->next, 1)) < b->n;) {
        wp_err err = {0};
        cJSON *out = NULL;
        if (atomic_load(&b->p->stop))
            WP_FAIL(&err, 503, "stopped", "", "the batch was stopped before this spec");
        else if (wp_compile_spec(b->app, b->items[i], &out, &err) == 0 && out) {
            const cJSON *cache = cJSON_GetObjectItemCaseSensitive(out, "cache");
            if (cJSON_IsString(cache) && !strcmp(cache->valuestring, "compile")) atomic_fetch_add(&b->p->compiled, 1);
        }
        if (!out) {
            out = error_json(&err, i);
            atomic_fetch_add(&b->p->failed, 1);
        }
        b->results[i] = out;
        atomic_fetch_add(&b->p->done, 1);
    }
    return NULL;
}

cJSON *wp_compile_batch(wp_app *app, const cJSON *specs, int threads, wp_batch_progress *p) {
    int n = cJSON_GetArraySize(specs);
    batch b = {.app = app, .n = n, .p = p};
    b.items = calloc((size_t)n + 1, sizeof *b.items);
    b.results = calloc((size_t)n + 1, sizeof *b.results);
    cJSON *arr = cJSON_CreateArray();
    if (!b.items || !b.results || !arr) goto out;
    int i = 0;
    for (const cJSON *s = specs->child; s && i < n; s = s->next) b.items[i++] = s;
    if (threads > n) threads = n;
    if (threads < 1) threads = 1;
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0;
    while (tid && started < threads - 1 && pthread_create(&tid[started], NULL, batch_worker, &b) == 0) started++;
    batch_worker(&b); /* this thread works too, so a batch finishes even when no thread starts */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    for (i = 0; i < n; i++) cJSON_AddItemToArray(arr, b.results[i] ? b.results[i] : cJSON_CreateNull());
out:
    free(b.items);
    free(b.results);
    return arr;
}

void wp_api_compile_many(wp_app *app, const cJSON *body, wp_resp *resp) {
    wp_err err = {0};
    const cJSON *specs = wp_prewarm_specs(body, &err);
    if (!specs) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_batch_progress p = {.total = cJSON_GetArraySize(specs)};
    uint64_t t0 = wp_now_ns();
    cJSON *results = wp_compile_batch(app, specs, app->compile_threads, &p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", p.total);
    cJSON_AddNumberToObject(o, "ok", p.total - atomic_load(&p.failed));
    cJSON_AddNumberToObject(o, "failed", atomic_load(&p.failed));
    cJSON_AddNumberToObject(o, "compiled", atomic_load(&p.compiled));
    cJSON_AddNumberToObject(o, "elapsed_ms", wp_ms_since(t0));
    cJSON_AddItemToObject(o, "results", results);
    wp_resp_json(resp, 200, o);
}

/* ---- --prewarm FILE ---- */

cJSON *wp_prewarm_load(const char *path, wp_err *err) {
    size_t len = 0;
    char *text = wp_read_file(path, &len);
    if (!text) {
        WP_FAIL(err, 400, "prewarm_file", "", "cannot read %.200s", path);
        return NULL;
    }
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    if (!doc) {
        WP_FAIL(err, 400, "bad_json", "", "%.200s is not valid JSON", path);
        return NULL;
    }
    if (!wp_prewarm_specs(doc, err)) {
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

struct wp_prewarm {
    wp_app *app;
    cJSON *doc;
    int threads;
    wp_batch_progress p;
    pthread_t thread;
    atomic_bool running;
    uint64_t started_ns;
    _Atomic uint64_t finished_ns;
};

static void *prewarm_main(void *arg) {
    wp_prewarm *w = arg;
    cJSON *results = wp_compile_batch(w->app, cJSON_GetObjectItemCaseSensitive(w->doc, "specs"), w->threads, &w->p);
    int i = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next, i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (cJSON_IsString(msg) && !atomic_load(&w->p.stop))
            fprintf(stderr, "warpd: prewarm spec %d: %s\n", i, msg->valuestring);
    }
    cJSON_Delete(results);
    atomic_store(&w->finished_ns, wp_now_ns());
    atomic_store(&w->running, false);
    return NULL;
}

wp_prewarm *wp_prewarm_start(wp_app *app, cJSON *doc, int threads, wp_err *err) {
    wp_prewarm *w = calloc(1, sizeof *w);
    if (!w) {
        cJSON_Delete(doc);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory starting the prewarm");
        return NULL;
    }
    *w = (wp_prewarm){.app = app, .doc = doc, .threads = threads, .started_ns = wp_now_ns()};
    w->p.total = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "specs"));
    atomic_store(&w->running, true);
    if (pthread_create(&w->thread, NULL, prewarm_main, w)) {
        cJSON_Delete(doc);
        free(w);
        WP_FAIL(err, 500, "thread", "", "cannot start the prewarm thread");
        return NULL;
    }
    return w;
}

void wp_prewarm_progress(wp_prewarm *w, int *total, int *done, int *failed, bool *running, double *elapsed_s) {
    *total = w->p.total;
    *done = atomic_load(&w->p.done);
    *failed = atomic_load(&w->p.failed);
    *running = atomic_load(&w->running);
    uint64_t end = *running ? wp_now_ns() : atomic_load(&w->finished_ns);
    *elapsed_s = (double)(end - w->started_ns) / 1e9;
}

int wp_prewarm_ready_json(wp_prewarm *w, cJSON *ready) {
    int total, done, failed;
    bool running;
    double elapsed;
    wp_prewarm_progress(w, &total, &done, &failed, &running, &elapsed);
    cJSON_ReplaceItemInObjectCaseSensitive(ready, "status", cJSON_CreateString(running ? "warming" : "ready"));
    cJSON *p = cJSON_AddObjectToObject(ready, "prewarm");
    cJSON_AddNumberToObject(p, "total", total);
    cJSON_AddNumberToObject(p, "done", done);
    cJSON_AddNumberToObject(p, "failed", failed);
    cJSON_AddNumberToObject(p, "elapsed_s", elapsed);
    return running ? 503 : 200;
}

void wp_prewarm_stop(wp_prewarm *w) {
    if (!w) return;
    atomic_store(&w->p.stop, true);
    pthread_join(w->thread, NULL);
    cJSON_Delete(w->doc);
    free(w);
}

int wp_prewarm_run_and_exit(wp_app *app, cJSON *doc, int threads) {
    wp_batch_progress p = {.total = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "specs"))};
    uint64_t t0 = wp_now_ns();
    cJSON *results = wp_compile_batch(app, cJSON_GetObjectItemCaseSensitive(doc, "specs"), threads, &p);
    double secs = (double)(wp_now_ns() - t0) / 1e9;
    int i = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next, i++) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "error"), "message");
        if (cJSON_IsString(msg)) fprintf(stderr, "warpd: prewarm spec %d: %s\n", i, msg->valuestring);
    }
    cJSON_Delete(results);
    int failed = atomic_load(&p.failed);
    printf("warpd: prewarm: %d specs, %d compiled, %d already cached, %d failed in %.2f s on %d threads\n", p.total,
           atomic_load(&p.compiled), p.total - failed - atomic_load(&p.compiled), failed, secs, threads);
    fflush(stdout);
    return failed ? 1 : 0;
}
