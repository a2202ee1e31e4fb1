/* api_emu_quota.c — on the CPU emulator the default --buffer-quota leaves the host its memory (transport hardening):
 * GET /v1/info on a daemon started without --buffer-quota (run by tests/api/api.sh, backend emu) reports
 * a quota above 0 and at most a quarter of the host's memory (it is at most a quarter of MemAvailable,
 * which is less than the total the emulator reports as its device memory).
 *   api_emu_quota BASE_URL */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "tests/api/api_lib.h"
#include "tests/unit/t.h"

int main(int argc, char **argv) {
    api_ctx ctx;
    if (argc < 2 || api_ctx_init(&ctx, argv[1])) {
        fprintf(stderr, "usage: api_emu_quota BASE_URL\n");
        return 2;
    }
    T_CASE("emu buffer quota");
    hc_resp r;
    char err[160] = "";
    char path[300];
    snprintf(path, sizeof path, "%s/v1/info", ctx.prefix);
    CHECKF(hc_request(ctx.host, ctx.port, "GET", path, NULL, NULL, 0, 0, &r, err, sizeof err) == 0, "%s", err);
    cJSON *info = cJSON_Parse(r.body ? r.body : "");
    const cJSON *backend = api_lookup(info, "backend"), *mem = api_lookup(info, "device.memory_total"),
                *quota = api_lookup(info, "limits.buffer_quota");
    CHECKF(r.status == 200 && cJSON_IsString(backend) && cJSON_IsNumber(mem) && cJSON_IsNumber(quota), "status %d: %s",
           r.status, r.body ? r.body : "");
    if (cJSON_IsString(backend) && !strcmp(backend->valuestring, "emu") && cJSON_IsNumber(mem) &&
        cJSON_IsNumber(quota)) {
        CHECKF(quota->valuedouble > 0, "quota %.0f", quota->valuedouble);
        CHECKF(quota->valuedouble <= mem->valuedouble / 4,
               "quota %.0f bytes, host memory %.0f bytes: more than a quarter", quota->valuedouble, mem->valuedouble);
    }
    cJSON_Delete(info);
    hc_resp_free(&r);
    api_ctx_free(&ctx);
    return t_done("api_emu_quota");
}
