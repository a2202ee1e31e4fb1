/* fuzz_compile.c — POST /v1/compile's request → spec path (server/api/api_compile.c, kernels/spec.c): any
 * bytes as the body. A body whose spec is valid for a family with a template would be compiled by NVRTC
 * (seconds; not per input): its spec is checked instead — its canonical key text and cache key, the
 * name expression NVRTC would instantiate, a copy with the same key that validates again. Every other
 * body goes through the handler, which must refuse it with a 4xx and JSON (fuzz_app.h), but for
 * {"specs":[...]}, which answers 200 with each spec's error. Bodies are read as the daemon reads
 * them: one JSON text, nothing after it but whitespace. */
#include "api/jsonval.h"
#include "fuzz_app.h"

static void check_spec(const wp_spec *s) {
    char key[WP_SPEC_KEY_MAX], key2[WP_SPEC_KEY_MAX], name[WP_SPEC_NAME_MAX], prelude[WP_SPEC_PRELUDE_MAX];
    uint8_t hash[32];
    wp_err err = {0};
    if (wp_spec_key_text(s, key, sizeof key) < 0 || !memchr(key, 0, sizeof key)) abort();
    if (s->family->template_file) { /* what NVRTC would be given: the cache key and the instantiation */
        if (wp_jit_key(fz_app.jit, s, hash, key2, sizeof key2, &err) || strcmp(key, key2)) abort();
        if (wp_spec_name_expr(s, name, sizeof name, prelude, sizeof prelude) < 0) abort();
    }
    wp_spec dup = {0};
    if (wp_spec_copy(&dup, s)) abort();
    if (wp_spec_validate(&dup, &err)) abort(); /* a valid spec stays valid */
    if (wp_spec_key_text(&dup, key2, sizeof key2) < 0 || strcmp(key, key2)) abort();
    wp_spec_free(&dup);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    cJSON *body = size && wp_json_depth(text, size) <= FZ_MAX_DEPTH ? fz_parse_strict(data, size) : NULL;
    /* a spec NVRTC would compile is checked instead of compiled; so is each one of "specs" */
    const cJSON *specs = cJSON_GetObjectItemCaseSensitive(body, "specs");
    const cJSON *one = cJSON_IsArray(specs) ? specs->child : body;
    for (; cJSON_IsObject(one); one = cJSON_IsArray(specs) ? one->next : NULL) {
        wp_spec spec = {0};
        wp_err err = {0};
        if (wp_spec_from_json(one, fz_app.arch, &spec, &err) == 0)
            check_spec(&spec);
        else
            fz_check_err(&err);
        wp_spec_free(&spec);
    }
    /* {"specs":[...]} answers 200 with each spec's result (400 only when the list itself is wrong) */
    const bool many = specs != NULL;
    cJSON_Delete(body);
    if (fz_would_compile(data, size)) return 0;
    wp_resp r;
    fz_call(wp_api_compile, "POST", "/v1/compile", "application/json", data, size, false, &r);
    cJSON_Delete(fz_check_resp("POST /v1/compile", &r));
    if (r.status < 400 && !many) fz_fail("POST /v1/compile", &r, "2xx for a body that compiles nothing");
    free(r.body);
    return 0;
}
