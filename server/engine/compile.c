/* compile.c — one spec compiled, or found in the cache, and described: what POST /v1/compile answers
 * for one kernel (key, where it came from, compile time, NVRTC log, registers, spills, and on request
 * the PTX, the C++ that was compiled and the SASS when nvdisasm is installed). Data families take the
 * fields that choose their kernel (strategy, block, ...), so any kernel a reduce or scan runs can be
 * shown. prewarm.c calls it for each spec of a batch; api/api_compile.c for a single one. */
#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/json.h"

static const char *const compile_fields[] = {"family", "type",       "width",     "mask",      "op",     "strategy",
                                             "block",  "accumulate", "exclusive", "inclusive", "radius", "ptx",
                                             "source", "sass",       "map",       "keys",      NULL};
/* The fields only data families (device_reduce, ...) take: the kernel /v1/reduce or /v1/scan would run. */
static const char *const data_fields[] = {"strategy", "block", "accumulate", "exclusive", "inclusive",
                                          "radius",   "map",   "keys",       NULL};

/* A data-family field sent with a warp family: refused by name rather than ignored. */
static int no_data_fields(const cJSON *body, const wp_family *f, wp_err *err) {
    if (f->flags & WP_F_DATA) return 0;
    for (int i = 0; data_fields[i]; i++)
        if (wp_json_get(body, data_fields[i]))
            return WP_FAIL(err, 400, "unknown_field", data_fields[i], "family %s takes no %s", f->name, data_fields[i]);
    return 0;
}

static bool want(const cJSON *body, const char *name, wp_err *err, int *bad) {
    const cJSON *v = wp_json_get(body, name);
    if (!v) return false;
    if (!cJSON_IsBool(v)) {
        WP_FAIL(err, 400, "wrong_type", name, "%s must be true or false", name);
        *bad = 1;
        return false;
    }
    return cJSON_IsTrue(v);
}

/* SASS through nvdisasm, when the machine has it; NULL otherwise. */
static char *disassemble(wp_app *app, const wp_artifact *a) {
    (void)app;
    const char *cands[] = {WP_DEFAULT_CUDA_HOME "/bin/nvdisasm", "/usr/local/cuda/bin/nvdisasm", "/usr/bin/nvdisasm"};
    const char *nvdisasm = NULL;
    for (size_t i = 0; i < WP_ARRAY_LEN(cands) && !nvdisasm; i++)
        if (access(cands[i], X_OK) == 0) nvdisasm = cands[i];
    if (!nvdisasm || !a->cubin_len) return NULL;
    char path[] = "/tmp/warpd-sass-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    bool ok = write(fd, a->cubin, a->cubin_len) == (ssize_t)a->cubin_len;
    close(fd);
    char *out = NULL;
    if (ok) {
        char cmd[800];
        snprintf(cmd, sizeof cmd, "%s -c -g '%s' 2>&1", nvdisasm, path);
        FILE *p = popen(cmd, "r");
        if (p) {
            size_t cap = 1 << 16, n = 0;
            out = malloc(cap);
            size_t got;
            while (out && (got = fread(out + n, 1, cap - n - 1, p)) > 0) {
                n += got;
                if (n + 1 >= cap) {
                    char *nb = realloc(out, cap *= 2);
                    if (!nb) break;
                    out = nb;
                }
            }
            if (out) out[n] = 0;
            pclose(p);
        }
    }
    unlink(path);
    return out;
}

/* What POST /v1/compile answers for one spec object: 0 with *out (the result object), or -1 with err. */
int wp_compile_spec(wp_app *app, const cJSON *body, wp_artifact *prebuilt, cJSON **out, wp_err *err) {
    wp_spec spec = {0};
    wp_ready_kernel rk = {0};
    int bad = 0, rc = -1;
    *out = NULL;
    if (!cJSON_IsObject(body)) {
        WP_FAIL(err, 400, "wrong_type", "", "a spec must be a JSON object");
        return -1;
    }
    if (wp_json_only(body, "", compile_fields, err) || wp_spec_from_json(body, app->arch, &spec, err)) goto done;
    if (no_data_fields(body, spec.family, err)) goto done;
    bool want_ptx = want(body, "ptx", err, &bad), want_src = want(body, "source", err, &bad),
         want_sass = want(body, "sass", err, &bad);
    if (bad) goto done;
    if (!spec.family->template_file) {
        WP_FAIL(err, 400, "not_compiled", "family", "family %s runs on the emulator only; nothing to compile",
                spec.family->name);
        goto done;
    }
    if (wp_app_kernel_get_prebuilt(app, &spec, prebuilt, &rk, err)) goto done;
    atomic_fetch_add(&app->compile_requests, 1);
    const wp_artifact *a = wp_kernel_artifact(rk.kernel);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", rk.key_text);
    cJSON_AddStringToObject(o, "hash", rk.hash);
    cJSON_AddStringToObject(o, "cache", wp_source_name(rk.source));
    cJSON_AddBoolToObject(o, "cached", rk.source != WP_SRC_COMPILE);
    cJSON_AddNumberToObject(o, "compile_ms", a->compile_ms);
    cJSON_AddNumberToObject(o, "lookup_us", rk.key_us + rk.cache_us);
    char name[512], prelude[4096];
    if (wp_spec_name_expr(&spec, name, sizeof name, prelude, sizeof prelude) == 0)
        cJSON_AddStringToObject(o, "instantiation", name);
    cJSON_AddStringToObject(o, "lowered_name", a->lowered ? a->lowered : "");
    cJSON_AddNumberToObject(o, "regs", a->regs);
    cJSON_AddNumberToObject(o, "spills", a->spills);
    cJSON_AddNumberToObject(o, "cubin_bytes", (double)a->cubin_len);
    cJSON_AddStringToObject(o, "arch", spec.arch);
    cJSON_AddStringToObject(o, "log", a->log ? a->log : "");
    if (want_ptx) cJSON_AddStringToObject(o, "ptx", a->ptx ? a->ptx : "");
    if (want_src) cJSON_AddStringToObject(o, "source", a->source ? a->source : "");
    if (want_sass) {
        char *sass = disassemble(app, a);
        if (sass)
            cJSON_AddStringToObject(o, "sass", sass);
        else
            cJSON_AddNullToObject(o, "sass");
        free(sass);
    }
    *out = o;
    rc = 0;
done:
    wp_app_kernel_put(app, &rk);
    wp_spec_free(&spec);
    return rc;
}
