/* fuzz_buffers.c — PUT /v1/buffers with a JSON body through its handler (server/api/api_buffers.c) on the
 * emulator: any bytes as the body (type, backend, ttl; data list, data_b64 or generate up to
 * FZ_MAX_ELEMENTS). A buffer it makes (201) is read back with GET /v1/buffers/{id} and deleted with
 * DELETE /v1/buffers/{id}, through their handlers. Every answer is 2xx or 4xx with JSON (fuzz_app.h). */
#include "fuzz_app.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(NULL);
    return 0;
}

static void by_id(wp_handler fn, const char *method, const char *id, int want) {
    char path[160];
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    wp_resp r;
    fz_call(fn, method, path, "", NULL, 0, false, &r);
    cJSON *o = fz_check_resp(method, &r);
    if (r.status != want) fz_fail(path, &r, "not the buffer just made");
    cJSON_Delete(o);
    free(r.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wp_resp r;
    fz_call(wp_api_buffers_put, "PUT", "/v1/buffers", "application/json", data, size, false, &r);
    cJSON *o = fz_check_resp("PUT /v1/buffers", &r);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (r.status == 201) {
        if (!cJSON_IsString(id) || strlen(id->valuestring) > 100) fz_fail("PUT /v1/buffers", &r, "201 without an id");
        by_id(wp_api_buffer_get, "GET", id->valuestring, 200);
        by_id(wp_api_buffer_delete, "DELETE", id->valuestring, 200);
        by_id(wp_api_buffer_get, "GET", id->valuestring, 404);
    }
    cJSON_Delete(o);
    free(r.body);
    fz_drop_buffers();
    return 0;
}
