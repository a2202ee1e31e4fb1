/* prewarm.c — many compiles at once: a batch of specs spread over threads (POST /v1/compile with
 * "specs"), the background --prewarm run that GET /v1/ready reports on, and --prewarm --exit.
 * Owns: wp_prewarm (its thread, its document, its progress). Each spec goes through
 * wp_compile_spec (compile.c), so a batch answers exactly what one request per spec would. */
#include "prewarm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app.h"
#include "compile.h"
#include "kernels/data.h"
#include "util/json.h"
#include "util/log.h"

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
    const cJSON *specs = wp_json_get(doc, "specs");
    const cJSON *desc = wp_json_get(doc, "description");
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

/* ---- the batch ----
 * Cold specs that can share an NVRTC program (same template and options: wp_jit_group_id) compile
 * together, which parses the template and its headers once per program instead of once per spec.
 * That saves the front end (≈45 ms a program, more with the fp16 headers), which is most of a warp
 * primitive's cost but little of a data-parallel kernel's, whose optimizer and ptxas time grows with
 * the program (a program of 3 device_scan kernels took as long as the 3 alone). So each spec has an
 * estimated cost, a program takes specs of its group while their cost stays under BATCH_TASK_CAP_MS
 * (at most BATCH_MAX_CHUNK): a float device_scan compiles alone, an integer one (its look-back a
 * warp tree: cheaper) and device_reduce in pairs, warp primitives by eight. The tasks are handed
 * out longest first (LPT), from one counter that every worker (thread or --exit process) takes
 * from, so the last tasks are short ones. bench/RESULTS.md has the numbers. Every spec then goes
 * through wp_compile_spec with its prebuilt kernel, so the cache, the answer and the errors are what
 * a request per spec would give. */

#define BATCH_MAX_CHUNK 8 /* a grouped entry keeps its program's whole cubin: this caps the disk it takes */
#define BATCH_TASK_CAP_MS 400
#define COST_PROGRAM_MS 45    /* front end of a template and its headers */
#define COST_FP16_MS 25       /* cuda_fp16.h and cuda_bf16.h on top */
#define COST_SCAN_MS 280      /* a device_scan kernel, beyond the front end */
#define COST_SCAN_TREE_MS 150 /* one with a builtin integer operator (its look-back is a warp tree) */
#define COST_DATA_MS 130      /* another data-parallel kernel (device_reduce) */
#define COST_WARP_MS 15       /* a warp primitive */

typedef struct {
    int first, n; /* a run of batch.order */
    int cost_ms;  /* estimated */
} task;

typedef struct {
    bool parsed, cold;
    int cost_ms;    /* estimated NVRTC time beyond the program's front end */
    int program_ms; /* estimated front end */
    uint64_t group; /* wp_jit_group_id, for cold specs only; 0: compiles alone */
    uint8_t key[32];
    bool same_as_prev; /* in batch.order, the spec before it has its kernel (an i32 and a u32 sum) */
    wp_spec spec;
} planned;

typedef struct {
    wp_app *app;
    const cJSON **items;
    cJSON **results;
    planned *plan;
    int *order;
    task *tasks;
    int n, n_tasks;
    bool print_errors; /* --exit's processes: print each error and keep no results */
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

static void plan_one(batch *b, int i) {
    planned *pl = &b->plan[i];
    wp_err err = {0};
    if (!cJSON_IsObject(b->items[i])) return;
    pl->parsed = true; /* freed at the end, whether it parsed or not */
    if (wp_spec_from_json(b->items[i], b->app->arch, &pl->spec, &err)) return;
    if (!pl->spec.family->template_file || wp_jit_key(b->app->jit, &pl->spec, pl->key, NULL, 0, &err)) return;
    pl->cold = !wp_cache_contains(b->app->cache, pl->key);
    if (!pl->cold) return; /* a cache read: costs next to nothing */
    uint32_t flags = pl->spec.family->flags;
    bool fp16 = pl->spec.type == WP_F16 || pl->spec.type == WP_BF16;
    pl->cost_ms = (flags & WP_F_SCAN)   ? (wp_data_order_free(&pl->spec) ? COST_SCAN_TREE_MS : COST_SCAN_MS)
                  : (flags & WP_F_DATA) ? COST_DATA_MS
                                        : COST_WARP_MS;
    pl->program_ms = COST_PROGRAM_MS + (fp16 ? COST_FP16_MS : 0);
    pl->group = wp_jit_group_id(b->app->jit, &pl->spec);
}

static int by_group(const void *a, const void *b, void *plan) {
    const planned *x = &((const planned *)plan)[*(const int *)a], *y = &((const planned *)plan)[*(const int *)b];
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->group) { /* specs of one kernel side by side */
        int c = memcmp(x->key, y->key, sizeof x->key);
        if (c) return c;
    }
    return *(const int *)a - *(const int *)b;
}

static int by_cost(const void *a, const void *b) {
    const task *x = a, *y = b;
    if (x->cost_ms != y->cost_ms) return x->cost_ms > y->cost_ms ? -1 : 1;
    return x->first - y->first;
}

/* Orders the specs by group, cuts them into tasks, longest first. */
static void plan_tasks(batch *b) {
    for (int i = 0; i < b->n; i++) {
        plan_one(b, i);
        b->order[i] = i;
    }
    qsort_r(b->order, (size_t)b->n, sizeof *b->order, by_group, b->plan);
    for (int k = 1; k < b->n; k++) {
        const planned *x = &b->plan[b->order[k - 1]];
        planned *y = &b->plan[b->order[k]];
        y->same_as_prev = x->group && y->group == x->group && !memcmp(x->key, y->key, sizeof x->key);
    }
    /* A spec whose kernel the one before it compiles costs nothing and stays in that task: it reads
     * the kernel from the memory cache after it (tasks run whole in one worker). */
    for (int k = 0; k < b->n;) {
        const planned *first = &b->plan[b->order[k]];
        int len = 1, cost = first->program_ms + first->cost_ms;
        while (first->group && len < BATCH_MAX_CHUNK && k + len < b->n) {
            const planned *next = &b->plan[b->order[k + len]];
            if (next->group != first->group) break;
            if (!next->same_as_prev) {
                if (cost + next->cost_ms > BATCH_TASK_CAP_MS) break;
                cost += next->cost_ms;
            }
            len++;
        }
        b->tasks[b->n_tasks++] = (task){k, len, cost};
        k += len;
    }
    qsort(b->tasks, (size_t)b->n_tasks, sizeof *b->tasks, by_cost);
}

/* One spec: its answer or its error into results[i]. */
static void run_spec(batch *b, int i, wp_artifact *prebuilt, bool again) {
    wp_err err = {0};
    cJSON *out = NULL;
    if (atomic_load(&b->p->stop))
        WP_FAIL(&err, 503, "stopped", "", "the batch was stopped before this spec");
    else if (wp_compile_spec(b->app, b->items[i], prebuilt, &out, &err) == 0 && out) {
        const cJSON *cache = wp_json_get(out, "cache");
        if (cJSON_IsString(cache) && !strcmp(cache->valuestring, "compile"))
            atomic_fetch_add(&b->p->compiled, 1);
        else if (again)
            atomic_fetch_add(&b->p->shared, 1);
    }
    if (!out) {
        out = error_json(&err, i);
        atomic_fetch_add(&b->p->failed, 1);
        if (b->print_errors) fprintf(stderr, "warpd: prewarm spec %d: %s\n", i, err.msg);
    }
    if (b->print_errors)
        cJSON_Delete(out);
    else
        b->results[i] = out;
    atomic_fetch_add(&b->p->done, 1);
}

static void run_task(batch *b, const task *t) {
    uint64_t t0 = wp_now_ns();
    wp_artifact arts[BATCH_MAX_CHUNK] = {0}, none = {0};
    const wp_spec *specs[BATCH_MAX_CHUNK];
    int n = 0; /* the distinct kernels, each once in the program */
    for (int k = 0; k < t->n; k++)
        if (k == 0 || !b->plan[b->order[t->first + k]].same_as_prev) specs[n++] = &b->plan[b->order[t->first + k]].spec;
    wp_err err = {0};
    if (n > 1 && !atomic_load(&b->p->stop) && wp_jit_compile_group(b->app->jit, specs, n, arts, &err))
        memset(arts, 0, sizeof arts); /* each compiles alone below */
    for (int k = 0, a = -1; k < t->n; k++) {
        const bool again = k > 0 && b->plan[b->order[t->first + k]].same_as_prev;
        if (!again) a++;
        run_spec(b, b->order[t->first + k], again ? &none : &arts[a], again);
        if (!again) wp_artifact_free(&arts[a]); /* what the cache did not take (it had the kernel already) */
    }
    wp_log(WP_LOG_DEBUG, "prewarm: %d %s spec(s) (estimated %d ms) took %.0f ms in process %d", t->n,
           specs[0]->family ? specs[0]->family->name : "?", t->cost_ms, wp_ms_since(t0), (int)getpid());
}

static void *batch_worker(void *arg) {
    batch *b = arg;
    for (int t; (t = atomic_fetch_add(&b->p->next_task, 1)) < b->n_tasks;) run_task(b, &b->tasks[t]);
    return NULL;
}

static void run_threads(batch *b, int threads) {
    if (threads > b->n_tasks) threads = b->n_tasks;
    pthread_t *tid = threads > 1 ? calloc((size_t)threads, sizeof *tid) : NULL;
    int started = 0;
    while (tid && started < threads - 1 && pthread_create(&tid[started], NULL, batch_worker, b) == 0)
        pthread_setname_np(tid[started++], "wp-prewarm");
    batch_worker(b); /* this thread works too, so a batch finishes even when no thread starts */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
}

/* Plans the batch; -1 when out of memory (batch_close it anyway). */
static int batch_open(batch *b, wp_app *app, const cJSON *specs, wp_batch_progress *p) {
    int n = cJSON_GetArraySize(specs);
    size_t slots = (size_t)n + 1;
    *b = (batch){.app = app, .n = n, .p = p};
    b->items = calloc(slots, sizeof *b->items);
    b->results = calloc(slots, sizeof *b->results);
    b->plan = calloc(slots, sizeof *b->plan);
    b->order = calloc(slots, sizeof *b->order);
    b->tasks = calloc(slots, sizeof *b->tasks);
    if (!b->items || !b->results || !b->plan || !b->order || !b->tasks) return -1;
    int i = 0;
    for (const cJSON *s = specs->child; s && i < n; s = s->next) b->items[i++] = s;
    plan_tasks(b);
    return 0;
}

static void batch_close(batch *b) {
    for (int i = 0; b->plan && i < b->n; i++)
        if (b->plan[i].parsed) wp_spec_free(&b->plan[i].spec);
    free(b->items);
    free(b->results);
    free(b->plan);
    free(b->order);
    free(b->tasks);
}

cJSON *wp_compile_batch(wp_app *app, const cJSON *specs, int threads, wp_batch_progress *p) {
    batch b;
    cJSON *arr = cJSON_CreateArray();
    if (batch_open(&b, app, specs, p) == 0 && arr) {
        run_threads(&b, threads);
        for (int i = 0; i < b.n; i++) cJSON_AddItemToArray(arr, b.results[i] ? b.results[i] : cJSON_CreateNull());
    }
    batch_close(&b);
    return arr;
}

/* ---- --prewarm FILE ---- */

cJSON *wp_prewarm_load(const char *path, wp_err *err) {
    size_t len = 0;
    char *text = wp_read_file(path, &len);
    if (!text) {
        WP_FAIL(err, 400, "prewarm_file", "", "cannot read %.200s", path);
        return NULL;
    }
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    const bool trailing = doc && wp_json_trailing(text, len, end) < len; /* one JSON text: nothing after it */
    free(text);
    if (trailing) {
        cJSON_Delete(doc);
        doc = NULL;
    }
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
    cJSON *results = wp_compile_batch(w->app, wp_json_get(w->doc, "specs"), w->threads, &w->p);
    int i = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next, i++) {
        const cJSON *e = wp_json_get(r, "error");
        const cJSON *msg = wp_json_get(e, "message");
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
    /* one compile slot (jit.c) stays for requests: a serving daemon's first callers do not wait behind
     * the whole set */
    if (threads > 1) threads--;
    *w = (wp_prewarm){.app = app, .doc = doc, .threads = threads, .started_ns = wp_now_ns()};
    w->p.total = cJSON_GetArraySize(wp_json_get(doc, "specs"));
    atomic_store(&w->running, true);
    if (pthread_create(&w->thread, NULL, prewarm_main, w)) {
        cJSON_Delete(doc);
        free(w);
        WP_FAIL(err, 500, "thread", "", "cannot start the prewarm thread");
        return NULL;
    }
    pthread_setname_np(w->thread, "wp-prewarm");
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

/* NVRTC's heap (LLVM's many small allocations) in transparent huge pages: glibc's malloc asks for
 * them (madvise) with this tunable, read only when a program starts. bench/RESULTS.md has the gain. */
#define PREWARM_TUNABLES "glibc.malloc.hugetlb=1"

/* Runs the batch on `workers` processes: this one and workers-1 forked children, which take tasks
 * from the same counter (p lives in shared memory), print their own errors and _exit (the CUDA
 * driver's exit handlers belong to the parent). */
static void run_processes(batch *b, int workers) {
    pid_t *kids = workers > 1 ? calloc((size_t)workers, sizeof *kids) : NULL;
    int n_kids = 0;
    fflush(stdout);
    fflush(stderr);
    while (kids && n_kids < workers - 1 && n_kids < b->n_tasks - 1) {
        pid_t pid = fork();
        if (pid == 0) {
            batch_worker(b);
            fflush(stderr);
            _exit(0);
        }
        if (pid < 0) break; /* fewer processes: the rest is done here */
        kids[n_kids++] = pid;
    }
    batch_worker(b);
    for (int k = 0; k < n_kids; k++)
        while (waitpid(kids[k], NULL, 0) < 0 && errno == EINTR) {
        }
    free(kids);
}

void wp_prewarm_exec_tuned(char **argv) {
    if (getenv("GLIBC_TUNABLES")) return; /* set already: by us before this exec, or by the user */
    if (setenv("GLIBC_TUNABLES", PREWARM_TUNABLES, 1)) return;
    execv("/proc/self/exe", argv);
    unsetenv("GLIBC_TUNABLES"); /* no exec: carry on as we are */
}

int wp_prewarm_run_and_exit(wp_app *app, cJSON *doc, int workers) {
    wp_batch_progress *p =
        mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0); /* seen by every process */
    if (p == MAP_FAILED) {
        fprintf(stderr, "warpd: prewarm: cannot map shared memory: %s\n", strerror(errno));
        return 1;
    }
    memset(p, 0, sizeof *p);
    const cJSON *specs = wp_json_get(doc, "specs");
    p->total = cJSON_GetArraySize(specs);
    uint64_t t0 = wp_now_ns();
    batch b;
    int rc = batch_open(&b, app, specs, p);
    if (rc == 0) {
        b.print_errors = true;
        run_processes(&b, workers);
    }
    batch_close(&b);
    double secs = (double)(wp_now_ns() - t0) / 1e9;
    int failed = atomic_load(&p->failed), compiled = atomic_load(&p->compiled), done = atomic_load(&p->done);
    if (rc || done != p->total) {
        fprintf(stderr, "warpd: prewarm: only %d of %d specs were tried (out of memory, or a worker died)\n", done,
                p->total);
        failed += p->total - done;
    }
    const int shared = atomic_load(&p->shared);
    printf("warpd: prewarm: %d specs, %d compiled, %d already cached, %d failed, %d sharing a kernel compiled here, in "
           "%.2f s on %d processes\n",
           p->total, compiled, done - atomic_load(&p->failed) - compiled - shared, failed, shared, secs, workers);
    fflush(stdout);
    munmap(p, sizeof *p);
    return failed ? 1 : 0;
}
