/* fuzz_shm.c — shared-memory regions through their handlers (server/api/api_shm.c, the "shm" input and
 * "output":{"shm":...} of api_reduce.c, "shm" and "cuda_ipc" of api_buffers.c) on the emulator. The first
 * byte picks the route, the rest is its body: 'p' POST /v1/shm, 'b' PUT /v1/buffers, 's' POST /v1/scan,
 * 'g' GET /v1/shm/<rest> and GET /v1/shm, 'c' POST /v1/channels (a channel it opens is described and closed),
 * 'd' a request through the doorbell of a channel opened at start (its first 8 bytes the raw req_route and
 * req_len words, the rest the request area's bytes: every length, route and body the channel must refuse
 * or serve; the answer must come, 2xx or 4xx with JSON); any other input is the body of a POST /v1/reduce. Placeholders
 * in the body become the fixtures' real names and ids, so requests find them: @ID@ a 4096-byte region, @ODD@ 10 bytes
 * at offset 3 of another object, @TID@ a region whose object was truncated to nothing (409 region_truncated),
 * @CID@ a 64 KiB region whose first 16 KiB hold the fixture channel, @NAME@ an object a POST may map, @LINK@ a symlink
 * to it and @DIR@ a directory (400 not_shared_memory),
 * @PREFIX@ the registry's prefix (/warpd-fuzz-<pid>: the harness never
 * reaches anyone else's objects). After every input: each answer 2xx or 4xx with JSON (fuzz_app.h), a
 * region a POST made is read and deleted, no region is still held by a job (users 0), the fixtures are
 * still listed, the fixture channel is the only one open, and buffers are dropped. The fixture objects are unlinked
 * once mapped; @NAME@ exists only during a 'p' input; so nothing stays in /dev/shm (stale ones of a dead harness are
 * removed at start). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_app.h"

#define FZ_SHM_DIR "/dev/shm"
#define FZ_SHM_BYTES 4096
#define FZ_SHM_QUOTA (1u << 20)
#define FZ_FIXTURES 4
#define FZ_CH_BYTES 65536            /* the channel fixture's region */
#define FZ_CH_USED 16384             /* what its channel takes */
#define FZ_CH_WAIT_NS 10000000000ull /* a doorbell's answer comes within this */

static char fz_prefix[48], fz_name[64], fz_link[64], fz_dir[64], fz_id[WP_REGION_ID_LEN], fz_odd[WP_REGION_ID_LEN],
    fz_tid[WP_REGION_ID_LEN], fz_cid[WP_REGION_ID_LEN];
static unsigned char *fz_ch;      /* the harness's own mapping of @CID@'s object: the client's side */
static wp_channel_info fz_chinfo; /* the fixture channel */

/* /dev/shm/warpd-fuzz-<pid>... of harnesses no longer running (a crash skips the clean-up). */
static void remove_stale(void) {
    DIR *d = opendir(FZ_SHM_DIR);
    for (struct dirent *e; d && (e = readdir(d));) {
        int pid = 0;
        if (sscanf(e->d_name, "warpd-fuzz-%d", &pid) != 1 || pid <= 0 || pid == getpid()) continue;
        if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* its harness still runs */
        char path[300];
        snprintf(path, sizeof path, FZ_SHM_DIR "/%s", e->d_name);
        if (unlink(path)) rmdir(path);
    }
    if (d) closedir(d);
}

/* The object name (prefix + suffix), `bytes` bytes of 0, 1, 2, ... mod 251. */
static void make_object(const char *name, size_t bytes) {
    char path[128];
    snprintf(path, sizeof path, FZ_SHM_DIR "%s", name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) abort();
    unsigned char b[FZ_SHM_BYTES];
    for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)(i % 251);
    if (bytes > sizeof b || write(fd, b, bytes) != (ssize_t)bytes) abort();
    close(fd);
}

static void unlink_object(const char *name) {
    char path[128];
    snprintf(path, sizeof path, FZ_SHM_DIR "%s", name);
    unlink(path);
}

/* A fixture region over a fresh object, unlinked once mapped (the mapping keeps its memory); *mine (if
 * not NULL) the harness's own mapping of the object. */
static void fixture(const char *suffix, size_t bytes, uint64_t offset, int64_t len, bool truncate_it, char *id,
                    unsigned char **mine) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", fz_prefix, suffix);
    make_object(name, bytes < FZ_SHM_BYTES ? bytes : FZ_SHM_BYTES);
    if (mine) {
        char path[128];
        snprintf(path, sizeof path, FZ_SHM_DIR "%s", name);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)bytes)) abort();
        *mine = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (*mine == MAP_FAILED) abort();
    }
    wp_region_info info;
    wp_err err = {0};
    if (wp_regions_add(fz_app.regions, NULL, name, offset, len, &info, &err)) {
        fprintf(stderr, "fuzz_shm: cannot register %s: %s\n", name, err.msg);
        abort();
    }
    snprintf(id, WP_REGION_ID_LEN, "%s", info.id);
    if (truncate_it) {
        char path[128];
        snprintf(path, sizeof path, FZ_SHM_DIR "%s", name);
        if (truncate(path, 0)) abort();
    }
    unlink_object(name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(NULL);
    remove_stale();
    snprintf(fz_prefix, sizeof fz_prefix, "/warpd-fuzz-%d", (int)getpid());
    snprintf(fz_name, sizeof fz_name, "%s-obj", fz_prefix);
    snprintf(fz_link, sizeof fz_link, "%s-link", fz_prefix);
    snprintf(fz_dir, sizeof fz_dir, "%s-dir", fz_prefix);
    wp_err err = {0};
    wp_regions_config rc = {.prefix = fz_prefix, .max_bytes = FZ_SHM_QUOTA, .dma = NULL};
    if (!(fz_app.regions = wp_regions_open(&rc, &err))) abort();
    fz_app.shm_remote = true; /* the synthesized requests have no peer: as if from this machine */
    fixture("-id", FZ_SHM_BYTES, 0, -1, false, fz_id, NULL);
    fixture("-odd", 64, 3, 10, false, fz_odd, NULL);
    fixture("-tid", FZ_SHM_BYTES, 0, -1, true, fz_tid, NULL);
    fixture("-ch", FZ_CH_BYTES, 0, -1, false, fz_cid, &fz_ch);
    wp_channels_config cc = {
        .max_channels = 4, .max_body = fz_app.max_body, .serve = wp_api_channel_serve, .ctx = &fz_app};
    if (!(fz_app.channels = wp_channels_open(&cc, &err))) abort();
    wp_channel_args ca = {.region = wp_regions_hold(fz_app.regions, NULL, fz_cid, "id", &err),
                          .bytes = FZ_CH_USED,
                          .spin_us = 200,
                          .ttl_s = WP_CHANNEL_TTL_MAX_S};
    if (!ca.region || wp_channels_add(fz_app.channels, &ca, &fz_chinfo, &err)) {
        fprintf(stderr, "fuzz_shm: cannot open the fixture channel: %s\n", err.msg);
        abort();
    }
    return 0;
}

/* The body with every placeholder replaced (malloc'd; *n its length). */
static char *expand(const uint8_t *data, size_t size, size_t *n) {
    static const struct {
        const char *key, *value;
    } subs[] = {{"@ID@", fz_id},     {"@ODD@", fz_odd},   {"@TID@", fz_tid}, {"@CID@", fz_cid},
                {"@NAME@", fz_name}, {"@LINK@", fz_link}, {"@DIR@", fz_dir}, {"@PREFIX@", fz_prefix}};
    size_t cap = size * 16 + 1, len = 0;
    char *out = malloc(cap);
    if (!out) abort();
    for (size_t i = 0; i < size;) {
        size_t k = 0;
        while (k < sizeof subs / sizeof subs[0] &&
               (size - i < strlen(subs[k].key) || memcmp(data + i, subs[k].key, strlen(subs[k].key))))
            k++;
        if (k < sizeof subs / sizeof subs[0]) {
            memcpy(out + len, subs[k].value, strlen(subs[k].value));
            len += strlen(subs[k].value);
            i += strlen(subs[k].key);
        } else {
            out[len++] = (char)data[i++];
        }
    }
    out[len] = 0;
    *n = len;
    return out;
}

static cJSON *call(wp_handler fn, const char *method, const char *path, const char *body, size_t n, wp_resp *r) {
    fz_call(fn, method, path, "application/json", (const uint8_t *)body, n, false, r);
    char what[160];
    snprintf(what, sizeof what, "%s %.120s", method, path);
    return fz_check_resp(what, r);
}

static void by_path(wp_handler fn, const char *method, const char *prefix, const char *id, int want) {
    char path[160];
    snprintf(path, sizeof path, "%s%.100s", prefix, id);
    wp_resp r;
    cJSON_Delete(call(fn, method, path, NULL, 0, &r));
    if (want && r.status != want) fz_fail(path, &r, "not the answer the object just made deserves");
    free(r.body);
}

/* After a POST's answer r (its JSON o): a thing it made (201) has an id with the prefix, is described,
 * deleted, then gone (404). Frees o and r's body. */
static void made_then_gone(const char *what, wp_resp *r, cJSON *o, const char *id_prefix, wp_handler get,
                           wp_handler del, const char *path) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (r->status == 201) {
        if (!cJSON_IsString(id) || strncmp(id->valuestring, id_prefix, strlen(id_prefix)))
            fz_fail(what, r, "201 without an id");
        by_path(get, "GET", path, id->valuestring, 200);
        by_path(del, "DELETE", path, id->valuestring, 200);
        by_path(get, "GET", path, id->valuestring, 404);
    }
    cJSON_Delete(o);
    free(r->body);
}

/* POST /v1/shm, with @NAME@, @LINK@ and @DIR@ there for the time of the call: a region made is described,
 * then deleted (the quota never fills). */
static void post_shm(const char *body, size_t n) {
    char path[128], target[128], dir[128];
    make_object(fz_name, FZ_SHM_BYTES);
    snprintf(target, sizeof target, FZ_SHM_DIR "%s", fz_name);
    snprintf(path, sizeof path, FZ_SHM_DIR "%s", fz_link);
    snprintf(dir, sizeof dir, FZ_SHM_DIR "%s", fz_dir);
    if (symlink(target, path) || mkdir(dir, 0700)) abort();
    wp_resp r;
    cJSON *o = call(wp_api_shm_add, "POST", "/v1/shm", body, n, &r);
    unlink_object(fz_name);
    unlink(path);
    rmdir(dir);
    made_then_gone("POST /v1/shm", &r, o, "shm-", wp_api_shm_get, wp_api_shm_delete, "/v1/shm/");
}

static void put_buffer(const char *body, size_t n) {
    wp_resp r;
    cJSON *o = call(wp_api_buffers_put, "PUT", "/v1/buffers", body, n, &r);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (r.status == 201) {
        if (!cJSON_IsString(id)) fz_fail("PUT /v1/buffers", &r, "201 without an id");
        by_path(wp_api_buffer_get, "GET", "/v1/buffers/", id->valuestring, 200);
    }
    cJSON_Delete(o);
    free(r.body);
}

static void get_shm(const char *rest) {
    char id[120];
    snprintf(id, sizeof id, "%.100s", rest);
    id[strcspn(id, "?#")] = 0; /* the path as http.c hands it over: no query */
    by_path(wp_api_shm_get, "GET", "/v1/shm/", id, 0);
    wp_resp r;
    cJSON_Delete(call(wp_api_shm_list, "GET", "/v1/shm", NULL, 0, &r));
    if (r.status != 200) fz_fail("GET /v1/shm", &r, "the list refused");
    free(r.body);
}

/* POST /v1/channels: a channel opened is described, closed, then gone. */
static void post_channel(const char *body, size_t n) {
    wp_resp r;
    cJSON *o = call(wp_api_channels_add, "POST", "/v1/channels", body, n, &r);
    made_then_gone("POST /v1/channels", &r, o, "ch-", wp_api_channel_get, wp_api_channel_delete, "/v1/channels/");
}

/* The fixture channel's words (engine/channels.h's layout). */
static uint32_t *ch_word(size_t off) { return (uint32_t *)(void *)(fz_ch + off); }

/* One request through the fixture channel's doorbell: route and len as the input gives them (any value),
 * body into the request area (cut to it); the answer must come and be one a client may get. */
static void doorbell(const uint8_t *data, size_t size) {
    uint32_t words[2] = {0, 0};
    memcpy(words, data, size < sizeof words ? size : sizeof words);
    size_t skip = size < sizeof words ? size : sizeof words, n = 0;
    char *body = expand(data + skip, size - skip, &n);
    if (fz_asks_compile((const uint8_t *)body, n)) { /* as the other routes: nothing compiles per input */
        free(body);
        return;
    }
    if (n > fz_chinfo.request_bytes) n = fz_chinfo.request_bytes;
    memcpy(fz_ch + WP_CHANNEL_HEADER, body, n);
    free(body);
    __atomic_store_n(ch_word(68), words[0], __ATOMIC_SEQ_CST);
    __atomic_store_n(ch_word(72), words[1], __ATOMIC_SEQ_CST);
    const uint32_t seq = __atomic_load_n(ch_word(64), __ATOMIC_SEQ_CST) + 1;
    __atomic_store_n(ch_word(64), seq, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(ch_word(132), __ATOMIC_SEQ_CST)) syscall(SYS_futex, ch_word(64), FUTEX_WAKE, 1, NULL, NULL, 0);
    const uint64_t t0 = wp_now_ns();
    while (__atomic_load_n(ch_word(192), __ATOMIC_ACQUIRE) != seq) {
        if (wp_now_ns() - t0 > FZ_CH_WAIT_NS) {
            fprintf(stderr, "fuzz_shm: the doorbell's answer did not come (route %u, len %u)\n", words[0], words[1]);
            abort();
        }
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    wp_resp r = {.status = (int)*ch_word(196),
                 .body_len = *ch_word(200),
                 .content_type = *ch_word(204) ? "application/octet-stream" : "application/json"};
    if (r.body_len > fz_chinfo.answer_bytes) fz_fail("the doorbell", &r, "an answer longer than its area");
    r.body = malloc(r.body_len + 1);
    if (!r.body) abort();
    memcpy(r.body, fz_ch + WP_CHANNEL_HEADER + fz_chinfo.request_bytes, r.body_len);
    r.body[r.body_len] = 0;
    cJSON_Delete(fz_check_resp("the doorbell", &r));
    free(r.body);
}

/* After each input: the fixtures are listed and no job still holds a region (the fixture channel holds
 * @CID@'s, once). */
static void check_regions(void) {
    wp_region_info *v = NULL;
    size_t n = 0;
    wp_err err = {0};
    if (wp_regions_list(fz_app.regions, NULL, &v, &n, &err)) abort();
    bool held = false;
    for (size_t i = 0; i < n; i++) held |= v[i].users != (strcmp(v[i].id, fz_cid) ? 0 : 1); /* @CID@: its channel */
    if (held || n != FZ_FIXTURES) {
        fprintf(stderr, "fuzz_shm: after the input %zu regions (want %d), %s\n", n, FZ_FIXTURES,
                held ? "one still held (a hold without its put)" : "none held");
        abort();
    }
    free(v);
    wp_regions_stats st;
    wp_regions_stats_get(fz_app.regions, &st);
    if (st.bytes != FZ_SHM_BYTES + 10 + FZ_SHM_BYTES + FZ_CH_BYTES) abort(); /* every other mapping gone */
    wp_channels_stats cs;
    wp_channels_stats_get(fz_app.channels, &cs);
    if (cs.open != 1) {
        fprintf(stderr, "fuzz_shm: %llu channels open after the input (want the fixture's alone)\n",
                (unsigned long long)cs.open);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char route = size ? (char)data[0] : 'r';
    bool routed = route == 'p' || route == 'b' || route == 'g' || route == 's' || route == 'c' || route == 'd';
    if (route == 'd') { /* the doorbell: its bytes raw (the words), placeholders in the body only */
        doorbell(data + 1, size - 1);
        check_regions();
        fz_drop_buffers();
        return 0;
    }
    size_t n = 0;
    char *body = expand(data + routed, size - routed, &n);
    switch (route) {
    case 'c':
        post_channel(body, n);
        break;
    case 'p':
        post_shm(body, n);
        break;
    case 'b':
        put_buffer(body, n);
        break;
    case 'g':
        get_shm(body);
        break;
    case 's':
        fz_try_inline("POST /v1/scan", wp_api_scan, "/v1/scan", (const uint8_t *)body, n,
                      !fz_asks_compile((const uint8_t *)body, n));
        break;
    default:
        fz_try_inline("POST /v1/reduce", wp_api_reduce, "/v1/reduce", (const uint8_t *)body, n,
                      !fz_asks_compile((const uint8_t *)body, n));
    }
    free(body);
    check_regions();
    fz_drop_buffers();
    return 0;
}
