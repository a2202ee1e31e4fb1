/* test_cache.c — the kernel cache with a fake build callback: memory hits, LRU eviction by bytes,
 * evicted entries kept alive by their users, restart from disk, corrupted files, one build for
 * many concurrent asks, failures not cached, one backend load per entry and device. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile/cache.h"
#include "t.h"
#include "util/sha256.h"

/* ---- the fake compiler ---- */

typedef struct {
    atomic_int builds;
    int sleep_ms;
    int fail; /* builds fail with 500 fake_fail */
    size_t cubin_len;
    int seed;
    int no_source; /* leave artifact.source NULL (a NULL field must round-trip) */
} fake_build;

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

static int fake_build_fn(void *ctx, wp_artifact *out, wp_err *err) {
    fake_build *fb = ctx;
    atomic_fetch_add(&fb->builds, 1);
    if (fb->sleep_ms) sleep_ms(fb->sleep_ms);
    if (fb->fail) {
        out->log = strdup("partial output the cache must free"); /* a failing build may leave things */
        return WP_FAIL(err, 500, "fake_fail", "", "the fake build failed");
    }
    out->cubin = malloc(fb->cubin_len);
    for (size_t i = 0; i < fb->cubin_len; i++) out->cubin[i] = (uint8_t)(i * 31 + (size_t)fb->seed);
    out->cubin_len = fb->cubin_len;
    char text[64];
    snprintf(text, sizeof text, ".version 9.0 // seed %d", fb->seed);
    out->ptx = strdup(text);
    out->log = strdup("ptxas info    : Used 17 registers\n");
    out->lowered = strdup("_Z4fakev");
    out->source = fb->no_source ? NULL : strdup("// fake source\n");
    out->regs = 17;
    out->spills = 3;
    out->compile_ms = 1.25 + fb->seed;
    return 0;
}

static void key_of(const char *name, uint8_t key[32]) { wp_sha256(name, strlen(name), key); }

static wp_kernel *get(wp_cache *c, const char *name, fake_build *fb, wp_source *src) {
    uint8_t key[32];
    key_of(name, key);
    wp_err err = {0};
    wp_kernel *k = wp_cache_get(c, key, fake_build_fn, fb, src, &err);
    if (!k && !fb->fail) fprintf(stderr, "get %s: %s %s\n", name, err.code, err.msg);
    return k;
}

static bool same_artifact(const wp_artifact *a, const wp_artifact *b) {
#define SAME_STR(f) ((a->f == NULL) == (b->f == NULL) && (!a->f || strcmp(a->f, b->f) == 0))
    return a->cubin_len == b->cubin_len && memcmp(a->cubin, b->cubin, a->cubin_len) == 0 && SAME_STR(ptx) &&
           SAME_STR(log) && SAME_STR(lowered) && SAME_STR(source) && a->regs == b->regs && a->spills == b->spills &&
           a->compile_ms == b->compile_ms;
#undef SAME_STR
}

static void copy_artifact(const wp_artifact *a, wp_artifact *out) {
    *out = *a;
    out->cubin = malloc(a->cubin_len);
    memcpy(out->cubin, a->cubin, a->cubin_len);
    out->ptx = a->ptx ? strdup(a->ptx) : NULL;
    out->log = a->log ? strdup(a->log) : NULL;
    out->lowered = a->lowered ? strdup(a->lowered) : NULL;
    out->source = a->source ? strdup(a->source) : NULL;
}

static void file_of(const char *dir, const char *name, char *path, size_t n) {
    uint8_t key[32];
    char hex[65];
    key_of(name, key);
    wp_hex(key, 32, hex);
    snprintf(path, n, "%s/%.2s/%s.wpk", dir, hex, hex);
}

static int count_files(const char *dir, const char *needle) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char sub[600];
        snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            n += count_files(sub, needle);
        else if (strstr(de->d_name, needle))
            n++;
    }
    if (d) closedir(d);
    return n;
}

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- cases ---- */

static void test_memory_hit(void) {
    T_CASE("memory hit");
    fake_build fb = {.cubin_len = 100};
    wp_cache *c = wp_cache_open(NULL, 1 << 20, NULL);
    CHECK(c != NULL);
    CHECK(wp_cache_dir(c) == NULL);
    wp_source src = WP_SRC_DISK;
    wp_kernel *k1 = get(c, "a", &fb, &src);
    CHECK(k1 && src == WP_SRC_COMPILE);
    wp_kernel *k2 = get(c, "a", &fb, &src);
    CHECK(k2 == k1 && src == WP_SRC_MEMORY);
    CHECK(atomic_load(&fb.builds) == 1);
    CHECK(wp_kernel_artifact(k1)->regs == 17 && wp_kernel_artifact(k1)->cubin_len == 100);
    wp_kernel_release(c, k1);
    wp_kernel_release(c, k2);
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.hits_memory == 1 && st.misses == 1 && st.compiles == 1 && st.hits_disk == 0);
    CHECK(st.entries == 1 && st.bytes == wp_artifact_bytes(wp_kernel_artifact(k1)) && st.cap_bytes == 1 << 20);
    CHECK(strcmp(wp_source_name(WP_SRC_MEMORY), "memory") == 0 && strcmp(wp_source_name(WP_SRC_DISK), "disk") == 0 &&
          strcmp(wp_source_name(WP_SRC_COMPILE), "compile") == 0);
    wp_cache_close(c);
}

static void test_lru_eviction(void) {
    T_CASE("LRU eviction by bytes");
    fake_build fb = {.cubin_len = 1000};
    /* Measure one entry, then allow three and a half. */
    wp_cache *probe = wp_cache_open(NULL, 1 << 20, NULL);
    wp_source src;
    wp_kernel *k = get(probe, "probe", &fb, &src);
    size_t one = wp_artifact_bytes(wp_kernel_artifact(k));
    wp_kernel_release(probe, k);
    wp_cache_close(probe);

    wp_cache *c = wp_cache_open(NULL, one * 7 / 2, NULL);
    atomic_store(&fb.builds, 0);
    const char *names[] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) wp_kernel_release(c, get(c, names[i], &fb, &src));
    wp_kernel_release(c, get(c, "A", &fb, &src)); /* A is now the most recent: B is the coldest */
    CHECK(src == WP_SRC_MEMORY);
    wp_kernel_release(c, get(c, "D", &fb, &src));
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.evictions == 1 && st.entries == 3 && st.bytes <= st.cap_bytes);
    CHECK(atomic_load(&fb.builds) == 4);
    wp_kernel_release(c, get(c, "A", &fb, &src));
    CHECK(src == WP_SRC_MEMORY);
    wp_kernel_release(c, get(c, "C", &fb, &src));
    CHECK(src == WP_SRC_MEMORY);
    wp_kernel_release(c, get(c, "B", &fb, &src)); /* evicted: built again, evicting D */
    CHECK(src == WP_SRC_COMPILE && atomic_load(&fb.builds) == 5);
    wp_kernel_release(c, get(c, "D", &fb, &src));
    CHECK(src == WP_SRC_COMPILE && atomic_load(&fb.builds) == 6);

    T_CASE("evicted entry lives while held");
    wp_kernel *held = get(c, "held", &fb, &src);
    for (int i = 0; i < 8; i++) { /* push it out */
        char name[32];
        snprintf(name, sizeof name, "filler%d", i);
        wp_kernel_release(c, get(c, name, &fb, &src));
    }
    uint8_t key[32];
    key_of("held", key);
    wp_kernel *again = get(c, "held", &fb, &src);
    CHECK(src == WP_SRC_COMPILE && again != held); /* it was evicted ... */
    const wp_artifact *a = wp_kernel_artifact(held);
    CHECK(a->cubin_len == 1000 && a->cubin[999] == (uint8_t)(999 * 31)); /* ... yet still readable (ASan) */
    wp_kernel_release(c, held);
    wp_kernel_release(c, again);

    T_CASE("entry bigger than the cap");
    fb.cubin_len = one * 10;
    wp_kernel *big = get(c, "big", &fb, &src);
    CHECK(big && src == WP_SRC_COMPILE && wp_kernel_artifact(big)->cubin_len == one * 10);
    wp_cache_stats_get(c, &st);
    CHECK(st.bytes <= st.cap_bytes);
    wp_kernel_release(c, big);
    wp_cache_close(c);

    T_CASE("many keys (index growth)");
    c = wp_cache_open(NULL, 1 << 26, NULL);
    fb.cubin_len = 16;
    atomic_store(&fb.builds, 0);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 600; i++) {
            char name[32];
            snprintf(name, sizeof name, "k%d", i);
            wp_kernel_release(c, get(c, name, &fb, &src));
        }
    wp_cache_stats_get(c, &st);
    CHECK(atomic_load(&fb.builds) == 600 && st.hits_memory == 600 && st.entries == 600);
    wp_cache_close(c);
}

static void test_disk(const char *root) {
    T_CASE("restart from disk");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/store/nested", root); /* created, parents too */
    fake_build fb = {.cubin_len = 5000, .seed = 7, .no_source = 1};
    wp_cache *c = wp_cache_open(dir, 1 << 20, NULL);
    CHECK(c && strcmp(wp_cache_dir(c), dir) == 0);
    wp_source src;
    wp_kernel *k = get(c, "persist", &fb, &src);
    CHECK(k && src == WP_SRC_COMPILE);
    wp_artifact before;
    copy_artifact(wp_kernel_artifact(k), &before);
    wp_kernel_release(c, k);
    wp_cache_close(c);

    char path[600];
    file_of(dir, "persist", path, sizeof path);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && S_ISREG(sb.st_mode));
    char sub[600];
    snprintf(sub, sizeof sub, "%s", path);
    *strrchr(sub, '/') = 0;
    CHECK(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    CHECK(count_files(dir, ".tmp.") == 0);

    c = wp_cache_open(dir, 1 << 20, NULL);
    k = get(c, "persist", &fb, &src);
    CHECK(k && src == WP_SRC_DISK && atomic_load(&fb.builds) == 1);
    CHECK(k && same_artifact(&before, wp_kernel_artifact(k)));
    wp_kernel_release(c, k);
    k = get(c, "persist", &fb, &src);
    CHECK(src == WP_SRC_MEMORY);
    wp_kernel_release(c, k);
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.hits_disk == 1 && st.hits_memory == 1 && st.misses == 0 && st.corrupt_files == 0);
    wp_cache_close(c);

    /* Timing of a disk hit: open, read, check, parse. */
    double total_us = 0;
    int reps = 50;
    for (int i = 0; i < reps; i++) {
        c = wp_cache_open(dir, 1 << 20, NULL);
        uint64_t t0 = wp_now_ns();
        k = get(c, "persist", &fb, &src);
        total_us += wp_us_since(t0);
        CHECK(src == WP_SRC_DISK);
        wp_kernel_release(c, k);
        wp_cache_close(c);
    }
    printf("disk hit (5000-byte cubin): %.1f us mean over %d\n", total_us / reps, reps);

    T_CASE("corrupted files are removed and rebuilt");
    struct {
        const char *what;
        int kind;
    } damage[] = {
        {"flip a payload byte", 0}, {"flip a checksum byte", 1}, {"truncate by one", 2}, {"truncate to 10 bytes", 3},
        {"empty file", 4},          {"append junk", 5},          {"bad magic", 6},       {"bad version", 7},
        {"wrong length field", 8},  {"another key's file", 9}};
    fb.no_source = 0;
    for (size_t d = 0; d < WP_ARRAY_LEN(damage); d++) {
        T_CASE(damage[d].what);
        size_t len = 0;
        char *bytes = wp_read_file(path, &len);
        CHECK(bytes != NULL && len > 100);
        if (!bytes) continue;
        FILE *f = fopen(path, "wb");
        switch (damage[d].kind) {
        case 0:
            bytes[len / 2] ^= 0x10;
            fwrite(bytes, 1, len, f);
            break;
        case 1:
            bytes[20] ^= 1;
            fwrite(bytes, 1, len, f);
            break;
        case 2:
            fwrite(bytes, 1, len - 1, f);
            break;
        case 3:
            fwrite(bytes, 1, 10, f);
            break;
        case 4:
            break;
        case 5:
            fwrite(bytes, 1, len, f);
            fwrite("junk", 1, 4, f);
            break;
        case 6:
            bytes[0] = 'X';
            fwrite(bytes, 1, len, f);
            break;
        case 7:
            bytes[4] = 99;
            fwrite(bytes, 1, len, f);
            break;
        case 8:
            bytes[8] ^= 4;
            fwrite(bytes, 1, len, f);
            break;
        case 9: { /* a valid file of another key under this key's name */
            char other[600];
            file_of(dir, "other", other, sizeof other);
            c = wp_cache_open(dir, 1 << 20, NULL);
            wp_kernel_release(c, get(c, "other", &fb, &src));
            wp_cache_close(c);
            size_t olen;
            char *obytes = wp_read_file(other, &olen);
            if (obytes) fwrite(obytes, 1, olen, f);
            free(obytes);
            break;
        }
        }
        fclose(f);
        free(bytes);
        int builds = atomic_load(&fb.builds);
        c = wp_cache_open(dir, 1 << 20, NULL);
        k = get(c, "persist", &fb, &src);
        CHECKF(k && src == WP_SRC_COMPILE && atomic_load(&fb.builds) == builds + 1, "src %d", (int)src);
        wp_kernel_release(c, k);
        wp_cache_stats_get(c, &st);
        CHECK(st.corrupt_files == 1 && st.hits_disk == 0);
        wp_cache_close(c);
        /* The rebuild rewrote a good file. */
        c = wp_cache_open(dir, 1 << 20, NULL);
        k = get(c, "persist", &fb, &src);
        CHECK(k && src == WP_SRC_DISK);
        wp_kernel_release(c, k);
        wp_cache_close(c);
    }

    T_CASE("a disk that cannot be written still serves");
    char blocked[600];
    file_of(dir, "blocked", blocked, sizeof blocked);
    *strrchr(blocked, '/') = 0; /* make the 2-hex subdir a plain file */
    FILE *f = fopen(blocked, "wb");
    fclose(f);
    c = wp_cache_open(dir, 1 << 20, NULL);
    k = get(c, "blocked", &fb, &src);
    CHECK(k && src == WP_SRC_COMPILE);
    wp_kernel_release(c, k);
    k = get(c, "blocked", &fb, &src);
    CHECK(k && src == WP_SRC_MEMORY);
    wp_kernel_release(c, k);
    wp_cache_stats_get(c, &st);
    CHECK(st.disk_errors >= 1);
    wp_cache_close(c);
    unlink(blocked);

    T_CASE("bad cache dir");
    wp_err err = {0};
    snprintf(blocked, sizeof blocked, "%s/afile", root);
    f = fopen(blocked, "wb");
    fclose(f);
    snprintf(sub, sizeof sub, "%s/afile/sub", root);
    CHECK(wp_cache_open(sub, 1 << 20, &err) == NULL && err.status == 500 && strcmp(err.code, "cache_dir") == 0);
    wp_artifact_free(&before);
}

/* Another host or container sharing the directory can have our pid and tid (each has its own pid
 * namespace): a temp file by that name is someone else's write in progress. Ours must not open,
 * truncate or rename it, and the entry must still land whole. */
static void test_tmp_name_taken(const char *root) {
    T_CASE("a temp file with our pid and tid belongs to another writer: left alone");
    char dir[300], path[600], theirs[700];
    snprintf(dir, sizeof dir, "%s/shared", root);
    wp_cache *c = wp_cache_open(dir, 1 << 20, NULL);
    CHECK(c != NULL);
    file_of(dir, "shared-key", path, sizeof path);
    char sub[600];
    snprintf(sub, sizeof sub, "%s", path);
    *strrchr(sub, '/') = 0;
    CHECK(mkdir(sub, 0700) == 0);
    snprintf(theirs, sizeof theirs, "%s.tmp.%d.%d", path, (int)getpid(), (int)gettid());
    const char partial[] = "half of another writer's file";
    int fd = open(theirs, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && write(fd, partial, sizeof partial) == (ssize_t)sizeof partial);
    if (fd >= 0) close(fd);
    char prefix[720]; /* the same name with a suffix: what the old naming would have opened */
    snprintf(prefix, sizeof prefix, "%s.", theirs);
    CHECK(symlink("/nonexistent", prefix) == 0); /* a decoy a non-exclusive create would follow */
    fake_build fb = {.cubin_len = 300, .seed = 11};
    wp_source src;
    wp_kernel_release(c, get(c, "shared-key", &fb, &src));
    CHECK(src == WP_SRC_COMPILE);
    wp_cache_close(c);
    char got[sizeof partial] = "";
    fd = open(theirs, O_RDONLY);
    CHECK(fd >= 0 && read(fd, got, sizeof got) == (ssize_t)sizeof partial && !memcmp(got, partial, sizeof got));
    if (fd >= 0) close(fd);
    CHECK(count_files(dir, ".tmp.") == 2); /* theirs and the decoy; ours is renamed */
    c = wp_cache_open(dir, 1 << 20, NULL);
    wp_kernel *k = get(c, "shared-key", &fb, &src);
    CHECK(k && src == WP_SRC_DISK && atomic_load(&fb.builds) == 1 && wp_kernel_artifact(k)->cubin_len == 300);
    wp_kernel_release(c, k);
    wp_cache_close(c);
}

/* ---- many threads ---- */

typedef struct {
    wp_cache *c;
    fake_build *fb;
    const char *name;
    pthread_barrier_t *start;
    wp_kernel *got;
    wp_source src;
    wp_err err;
} asker;

static void *ask(void *arg) {
    asker *a = arg;
    uint8_t key[32];
    key_of(a->name, key);
    pthread_barrier_wait(a->start);
    a->got = wp_cache_get(a->c, key, fake_build_fn, a->fb, &a->src, &a->err);
    return NULL;
}

enum { ASKERS = 32 };

static int run_askers(wp_cache *c, fake_build *fb, const char *name, asker *as) {
    pthread_t th[ASKERS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, ASKERS);
    for (int i = 0; i < ASKERS; i++) {
        as[i] = (asker){.c = c, .fb = fb, .name = name, .start = &start};
        pthread_create(&th[i], NULL, ask, &as[i]);
    }
    for (int i = 0; i < ASKERS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    return 0;
}

static void test_single_flight(const char *root) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/flight", root);
    for (int with_disk = 0; with_disk < 2; with_disk++) {
        T_CASE(with_disk ? "32 threads, one cold key (disk)" : "32 threads, one cold key");
        fake_build fb = {.cubin_len = 256, .sleep_ms = 100};
        wp_cache *c = wp_cache_open(with_disk ? dir : NULL, 1 << 20, NULL);
        asker as[ASKERS];
        run_askers(c, &fb, "cold", as);
        int compiled = 0, from_memory = 0, same = 1;
        for (int i = 0; i < ASKERS; i++) {
            compiled += as[i].got && as[i].src == WP_SRC_COMPILE;
            from_memory += as[i].got && as[i].src == WP_SRC_MEMORY;
            same &= as[i].got == as[0].got && as[i].got != NULL;
        }
        CHECK(atomic_load(&fb.builds) == 1);
        CHECK(same && compiled == 1 && from_memory == ASKERS - 1);
        for (int i = 0; i < ASKERS; i++) wp_kernel_release(c, as[i].got);
        wp_cache_stats st;
        wp_cache_stats_get(c, &st);
        CHECK(st.compiles == 1 && st.misses == 1 && st.hits_memory == ASKERS - 1);
        wp_cache_close(c);
    }

    T_CASE("32 threads, failing build: one build, all told, not cached");
    fake_build fb = {.cubin_len = 256, .sleep_ms = 100, .fail = 1};
    wp_cache *c = wp_cache_open(NULL, 1 << 20, NULL);
    asker as[ASKERS];
    run_askers(c, &fb, "doomed", as);
    int told = 0;
    for (int i = 0; i < ASKERS; i++)
        told += !as[i].got && as[i].err.status == 500 && strcmp(as[i].err.code, "fake_fail") == 0;
    CHECK(told == ASKERS && atomic_load(&fb.builds) == 1);
    wp_source src;
    wp_err err = {0};
    uint8_t key[32];
    key_of("doomed", key);
    CHECK(wp_cache_get(c, key, fake_build_fn, &fb, &src, &err) == NULL && strcmp(err.code, "fake_fail") == 0);
    CHECK(atomic_load(&fb.builds) == 2);
    fb.fail = 0;
    fb.sleep_ms = 0;
    wp_kernel *k = wp_cache_get(c, key, fake_build_fn, &fb, &src, &err);
    CHECK(k && src == WP_SRC_COMPILE && atomic_load(&fb.builds) == 3);
    wp_kernel_release(c, k);
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.compile_failures == 2 && st.compiles == 1 && st.entries == 1);
    wp_cache_close(c);
}

/* ---- backend load ---- */

typedef struct {
    atomic_int loads, unloads, fail_next;
    int token;
} fake_backend;

static int fake_load(void *backend, const wp_artifact *a, void **fn, wp_err *err) {
    fake_backend *b = backend;
    atomic_fetch_add(&b->loads, 1);
    sleep_ms(50);
    if (atomic_exchange(&b->fail_next, 0)) return WP_FAIL(err, 500, "load_failed", "", "fake load failed");
    if (!a->cubin) return WP_FAIL(err, 500, "load_failed", "", "no cubin");
    *fn = &b->token;
    return 0;
}

static void fake_unload(void *backend, void *fn) {
    fake_backend *b = backend;
    if (fn == &b->token) atomic_fetch_add(&b->unloads, 1);
}

typedef struct {
    wp_kernel *k;
    fake_backend *b;
    pthread_barrier_t *start;
    void *fn;
    int rc;
} loader;

static void *load_thread(void *arg) {
    loader *l = arg;
    pthread_barrier_wait(l->start);
    wp_err err = {0};
    l->rc = wp_kernel_function(l->k, l->b, fake_load, fake_unload, &l->fn, &err);
    return NULL;
}

static void test_function(void) {
    T_CASE("backend load: once across threads, unload at free");
    fake_build fb = {.cubin_len = 64};
    fake_backend be = {0};
    wp_cache *c = wp_cache_open(NULL, 1 << 20, NULL);
    wp_source src;
    wp_kernel *k = get(c, "fn", &fb, &src);

    enum { LOADERS = 16 };
    pthread_t th[LOADERS];
    loader ls[LOADERS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, LOADERS);
    for (int i = 0; i < LOADERS; i++) {
        ls[i] = (loader){.k = k, .b = &be, .start = &start};
        pthread_create(&th[i], NULL, load_thread, &ls[i]);
    }
    int ok = 0;
    for (int i = 0; i < LOADERS; i++) {
        pthread_join(th[i], NULL);
        ok += ls[i].rc == 0 && ls[i].fn == &be.token;
    }
    pthread_barrier_destroy(&start);
    CHECK(ok == LOADERS && atomic_load(&be.loads) == 1 && atomic_load(&be.unloads) == 0);

    void *fn = NULL;
    wp_err err = {0};
    /* a second device loads its own function from the same entry, once, and unloads it at free */
    fake_backend other = {0};
    CHECK(wp_kernel_function(k, &other, fake_load, fake_unload, &fn, &err) == 0 && fn == &other.token);
    CHECK(wp_kernel_function(k, &other, fake_load, fake_unload, &fn, &err) == 0 && fn == &other.token);
    CHECK(wp_kernel_function(k, &be, fake_load, fake_unload, &fn, &err) == 0 && fn == &be.token);
    CHECK(atomic_load(&other.loads) == 1 && atomic_load(&be.loads) == 1);
    wp_kernel_release(c, k);
    CHECK(atomic_load(&be.unloads) == 0); /* still indexed */
    wp_cache_close(c);
    CHECK(atomic_load(&be.unloads) == 1 && atomic_load(&other.unloads) == 1);

    T_CASE("backend load failure is not sticky");
    c = wp_cache_open(NULL, 1 << 20, NULL);
    k = get(c, "fn2", &fb, &src);
    atomic_store(&be.fail_next, 1);
    atomic_store(&be.loads, 0);
    CHECK(wp_kernel_function(k, &be, fake_load, fake_unload, &fn, &err) == -1 && strcmp(err.code, "load_failed") == 0);
    CHECK(wp_kernel_function(k, &be, fake_load, fake_unload, &fn, &err) == 0 && fn == &be.token);
    CHECK(atomic_load(&be.loads) == 2);

    T_CASE("evicted loaded entry unloads at its last release");
    wp_cache *small = wp_cache_open(NULL, 1, NULL); /* everything is evicted at once */
    wp_kernel *e = get(small, "fn3", &fb, &src);
    CHECK(wp_kernel_function(e, &be, fake_load, fake_unload, &fn, &err) == 0);
    int unloads = atomic_load(&be.unloads);
    wp_kernel_release(small, e);
    CHECK(atomic_load(&be.unloads) == unloads + 1);
    wp_cache_close(small);

    wp_kernel_release(c, k);
    wp_cache_close(c);
    CHECK(atomic_load(&be.unloads) == unloads + 2);
}

/* A crashed writer's temp file is removed when the cache opens; one that is fresh, or whose process
 * is alive, is kept (another daemon may be writing into the same directory). */
static bool touch_file(const char *path, time_t age_s) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return false;
    close(fd);
    struct timespec ts[2] = {{.tv_sec = time(NULL) - age_s}, {.tv_sec = time(NULL) - age_s}};
    return utimensat(AT_FDCWD, path, ts, 0) == 0;
}
static void test_stale_tmp(const char *root) {
    T_CASE("temp files of crashed writers are removed at open");
    char dir[300], sub[340], dead_old[420], dead_new[420], live_old[420], other[420];
    snprintf(dir, sizeof dir, "%s/tmpsweep", root);
    snprintf(sub, sizeof sub, "%s/ab", dir);
    CHECK(mkdir(dir, 0700) == 0 && mkdir(sub, 0700) == 0);
    pid_t child = fork(); /* a pid that is certainly gone once reaped */
    if (child == 0) _exit(0);
    CHECK(child > 0 && waitpid(child, NULL, 0) == child);
    const char *h = "ab00000000000000000000000000000000000000000000000000000000000000";
    snprintf(dead_old, sizeof dead_old, "%s/%s.wpk.tmp.%d.%d", sub, h, (int)child, (int)child);
    snprintf(dead_new, sizeof dead_new, "%s/%s.wpk.tmp.%d.7", sub, h + 1, (int)child);
    snprintf(live_old, sizeof live_old, "%s/%s.wpk.tmp.%d.7", sub, h + 2, (int)getppid());
    snprintf(other, sizeof other, "%s/%s.wpk", sub, h);
    CHECK(touch_file(dead_old, 7200) && touch_file(dead_new, 0) && touch_file(live_old, 7200) &&
          touch_file(other, 7200));
    wp_err err = {0};
    wp_cache *c = wp_cache_open(dir, 1 << 20, &err);
    CHECK(c != NULL);
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.stale_tmp_removed == 1);
    CHECK(access(dead_old, F_OK) != 0 && access(dead_new, F_OK) == 0 && access(live_old, F_OK) == 0 &&
          access(other, F_OK) == 0);
    wp_cache_close(c);
}

/* ---- disk cap, listing, removal, pruning ---- */

static wp_kernel *get_named(wp_cache *c, const char *name, fake_build *fb, wp_source *src) {
    uint8_t key[32];
    key_of(name, key);
    wp_err err = {0};
    char text[64];
    snprintf(text, sizeof text, "text of %s", name);
    return wp_cache_get_named(c, key, text, fake_build_fn, fb, src, &err);
}

static void put_named(wp_cache *c, const char *name, fake_build *fb) {
    wp_source src;
    wp_kernel_release(c, get_named(c, name, fb, &src));
}

static bool on_disk(const char *dir, const char *name) {
    char path[600];
    struct stat sb;
    file_of(dir, name, path, sizeof path);
    return stat(path, &sb) == 0;
}

/* Sets a file's last use (its mtime) to `ago` seconds before now. */
static void age(const char *dir, const char *name, double ago) {
    char path[600];
    file_of(dir, name, path, sizeof path);
    struct timespec now, t[2];
    clock_gettime(CLOCK_REALTIME, &now);
    t[0] = t[1] = (struct timespec){now.tv_sec - (time_t)ago, now.tv_nsec};
    CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
}

static const wp_cache_entry *find_entry(const wp_cache_entry *v, size_t n, const char *name) {
    uint8_t key[32];
    key_of(name, key);
    for (size_t i = 0; i < n; i++)
        if (memcmp(v[i].key, key, 32) == 0) return &v[i];
    return NULL;
}

static uint64_t file_bytes(const char *dir, const char *name) {
    char path[600];
    struct stat sb;
    file_of(dir, name, path, sizeof path);
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

static void test_disk_cap(const char *root) {
    T_CASE("disk cap evicts the least recently used file");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/capped", root);
    fake_build fb = {.cubin_len = 5000};
    wp_cache *c = wp_cache_open(dir, 1 << 20, NULL);
    put_named(c, "A", &fb);
    uint64_t one = file_bytes(dir, "A");
    CHECK(one > 5000);
    wp_cache_set_disk_max(c, one * 7 / 2); /* room for three and a half */
    put_named(c, "B", &fb);
    put_named(c, "C", &fb);
    put_named(c, "A", &fb); /* a memory hit: A is now more recent than B */
    put_named(c, "D", &fb);
    CHECK(on_disk(dir, "A") && !on_disk(dir, "B") && on_disk(dir, "C") && on_disk(dir, "D"));
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECKF(st.disk_evictions == 1 && st.disk_entries == 3 && st.disk_bytes == 3 * one &&
               st.disk_cap_bytes == one * 7 / 2,
           "evictions %llu entries %llu", (unsigned long long)st.disk_evictions, (unsigned long long)st.disk_entries);
    wp_source src;
    wp_kernel *k = get_named(c, "B", &fb, &src);
    CHECK(k && src == WP_SRC_MEMORY); /* evicted from the disk only: memory still serves it */
    wp_kernel_release(c, k);
    wp_cache_close(c);

    T_CASE("the order survives a restart: last use is the file's mtime");
    age(dir, "A", 300);
    age(dir, "C", 200);
    age(dir, "D", 100);
    c = wp_cache_open(dir, 1 << 20, NULL);
    wp_cache_set_disk_max(c, one * 7 / 2);
    k = get_named(c, "A", &fb, &src); /* a disk hit makes A the most recent */
    CHECK(k && src == WP_SRC_DISK);
    wp_kernel_release(c, k);
    put_named(c, "E", &fb);
    CHECK(on_disk(dir, "A") && !on_disk(dir, "C") && on_disk(dir, "D") && on_disk(dir, "E"));

    T_CASE("the total stays under the cap");
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "many%d", i);
        put_named(c, name, &fb);
    }
    wp_cache_stats_get(c, &st);
    CHECK(st.disk_bytes <= one * 7 / 2 && st.disk_entries == 3 && count_files(dir, ".wpk") == 3);
    CHECK(on_disk(dir, "many11") && !on_disk(dir, "A"));

    T_CASE("a lower cap applies at once");
    wp_cache_set_disk_max(c, one + one / 2);
    CHECK(count_files(dir, ".wpk") == 1 && on_disk(dir, "many11"));
    wp_cache_close(c);
    rm_rf(dir);
}

typedef struct {
    wp_cache *c;
    fake_build *fb;
    wp_kernel *got;
} slow_get;

static void *slow_get_run(void *arg) {
    slow_get *sg = arg;
    wp_source src;
    sg->got = get_named(sg->c, "slow", sg->fb, &src);
    return NULL;
}

static void test_list_remove(const char *root) {
    T_CASE("list: both tiers, key text, hits");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/listed", root);
    fake_build fb = {.cubin_len = 300};
    wp_cache *c = wp_cache_open(dir, 1 << 20, NULL);
    put_named(c, "one", &fb);
    put_named(c, "one", &fb);
    put_named(c, "two", &fb);
    wp_cache_close(c);
    c = wp_cache_open(dir, 1 << 20, NULL);
    put_named(c, "two", &fb); /* disk hit: both tiers now */
    put_named(c, "two", &fb);
    wp_source src;
    uint8_t key[32];
    key_of("three", key);
    wp_err err = {0};
    wp_kernel_release(c, wp_cache_get(c, key, fake_build_fn, &fb, &src, &err)); /* no key text */
    wp_cache_entry *v = NULL;
    size_t n = 0;
    CHECK(wp_cache_list(c, &v, &n, &err) == 0 && n == 3);
    const wp_cache_entry *one = find_entry(v, n, "one"), *two = find_entry(v, n, "two");
    const wp_cache_entry *three = find_entry(v, n, "three");
    CHECK(one && one->tiers == WP_TIER_DISK && strcmp(one->key_text, "text of one") == 0 && one->hits == 0 &&
          one->disk_bytes == file_bytes(dir, "one") && one->memory_bytes == 0 && one->created > 0);
    CHECK(two && two->tiers == WP_TIER_ALL && strcmp(two->key_text, "text of two") == 0 && two->hits == 2 &&
          two->memory_bytes > 0 && two->disk_bytes > 0);
    CHECK(three && three->tiers == WP_TIER_ALL && three->key_text[0] == 0);
    CHECK(v[0].last_used >= v[1].last_used && v[1].last_used >= v[2].last_used); /* most recent first */
    free(v);

    T_CASE("remove: an entry in use stays alive for its user; the next get rebuilds");
    wp_kernel *held = get_named(c, "two", &fb, &src);
    key_of("two", key);
    CHECK(wp_cache_remove(c, key, WP_TIER_ALL) == WP_TIER_ALL);
    CHECK(!on_disk(dir, "two"));
    CHECK(held && wp_kernel_artifact(held)->cubin_len == 300 && wp_kernel_artifact(held)->cubin[1] == 31);
    int builds = atomic_load(&fb.builds);
    wp_kernel *again = get_named(c, "two", &fb, &src);
    CHECK(again && again != held && src == WP_SRC_COMPILE && atomic_load(&fb.builds) == builds + 1);
    wp_kernel_release(c, held);
    wp_kernel_release(c, again);
    CHECK(wp_cache_remove(c, key, WP_TIER_ALL) == WP_TIER_ALL);
    CHECK(wp_cache_remove(c, key, WP_TIER_ALL) == 0); /* gone */

    T_CASE("remove one tier");
    key_of("three", key);
    CHECK(wp_cache_remove(c, key, WP_TIER_DISK) == WP_TIER_DISK);
    wp_kernel *k = wp_cache_get(c, key, fake_build_fn, &fb, &src, &err);
    CHECK(k && src == WP_SRC_MEMORY);
    wp_kernel_release(c, k);
    key_of("one", key);
    CHECK(wp_cache_remove(c, key, WP_TIER_MEMORY) == 0 && on_disk(dir, "one"));

    T_CASE("prune older_than: by last use, both tiers");
    put_named(c, "old", &fb);
    wp_cache_close(c);
    c = wp_cache_open(dir, 1 << 20, NULL);
    put_named(c, "fresh", &fb);
    age(dir, "old", 1000);
    age(dir, "one", 1000);
    wp_cache_pruned pr;
    wp_cache_prune(c, 500, WP_TIER_ALL, &pr);
    CHECKF(pr.disk_entries == 2 && pr.memory_entries == 0 && !on_disk(dir, "old") && !on_disk(dir, "one"),
           "disk %llu memory %llu", (unsigned long long)pr.disk_entries, (unsigned long long)pr.memory_entries);
    CHECK(on_disk(dir, "fresh"));
    wp_cache_prune(c, 0, WP_TIER_ALL, &pr); /* everything */
    CHECKF(pr.disk_entries == 1 && pr.memory_entries == 1 && pr.memory_bytes > 0 && count_files(dir, ".wpk") == 0,
           "disk %llu memory %llu", (unsigned long long)pr.disk_entries, (unsigned long long)pr.memory_entries);
    CHECK(wp_cache_list(c, &v, &n, &err) == 0 && n == 0);
    free(v);
    wp_cache_stats st;
    wp_cache_stats_get(c, &st);
    CHECK(st.disk_entries == 0 && st.disk_bytes == 0 && st.entries == 0 && st.disk_removed == 3 && st.removed == 1);
    k = get_named(c, "fresh", &fb, &src);
    CHECK(k && src == WP_SRC_COMPILE);
    wp_kernel_release(c, k);
    wp_cache_close(c);

    T_CASE("prune while a build runs: the build finishes and is cached");
    c = wp_cache_open(dir, 1 << 20, NULL);
    fake_build slow = {.cubin_len = 100, .sleep_ms = 200};
    slow_get sg = {c, &slow, NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, slow_get_run, &sg) == 0);
    while (atomic_load(&slow.builds) == 0) sleep_ms(1); /* the build has started */
    wp_cache_prune(c, 0, WP_TIER_ALL, &pr);
    CHECK(pr.memory_entries == 0 && pr.disk_entries == 1); /* "fresh" from before; not the one being built */
    pthread_join(t, NULL);
    CHECK(sg.got != NULL);
    wp_kernel_release(c, sg.got);
    k = get_named(c, "slow", &slow, &src);
    CHECK(k && src == WP_SRC_MEMORY && atomic_load(&slow.builds) == 1 && on_disk(dir, "slow"));
    wp_kernel_release(c, k);
    wp_cache_close(c);
    rm_rf(dir);
}

/* A file of format 1 (no created time, no key text), as warpd before format 2 wrote: still read. */
static void test_format1(const char *root) {
    T_CASE("format 1 files are read");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/fmt1", root);
    fake_build fb = {.cubin_len = 400, .seed = 3};
    wp_cache *c = wp_cache_open(dir, 1 << 20, NULL);
    put_named(c, "legacy", &fb);
    wp_cache_close(c);
    file_of(dir, "legacy", path, sizeof path);
    size_t len = 0;
    uint8_t *f = (uint8_t *)wp_read_file(path, &len);
    CHECK(f && len > 48 + 32 + 8 + 8);
    if (!f) return;
    uint64_t text_len = 0;
    memcpy(&text_len, f + 48 + 32 + 8, 8); /* little-endian host assumed by this test */
    size_t cut = 8 + 8 + (size_t)text_len, n1 = len - cut;
    uint8_t *g = malloc(n1);
    memcpy(g, f, 48 + 32);
    memcpy(g + 48 + 32, f + 48 + 32 + cut, len - 48 - 32 - cut);
    g[4] = 1;
    uint64_t payload = n1 - 48;
    memcpy(g + 8, &payload, 8);
    wp_sha256(g + 48, (size_t)payload, g + 16);
    FILE *out = fopen(path, "wb");
    fwrite(g, 1, n1, out);
    fclose(out);
    c = wp_cache_open(dir, 1 << 20, NULL);
    wp_source src;
    wp_kernel *k = get_named(c, "legacy", &fb, &src);
    CHECK(k && src == WP_SRC_DISK && atomic_load(&fb.builds) == 1 && wp_kernel_artifact(k)->cubin_len == 400);
    wp_kernel_release(c, k);
    wp_cache_close(c);
    free(f);
    free(g);
}

int main(void) {
    char root[] = "/tmp/wp_test_cache_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_memory_hit();
    test_lru_eviction();
    test_disk(root);
    test_tmp_name_taken(root);
    test_single_flight(root);
    test_function();
    test_stale_tmp(root);
    test_disk_cap(root);
    test_list_remove(root);
    test_format1(root);
    rm_rf(root);
    return t_done("cache");
}
