/* api.h — the routes' handlers (one api_*.c per route group: parse the request, call the engine,
 * answer) and what they share. main.c puts them in the route table; each runs on the thread the HTTP
 * layer gives it (an HTTP thread for WP_ROUTE_TRY_INLINE routes, else a worker: http/http.h). */
#ifndef WP_API_H
#define WP_API_H

#include "engine/app.h"
#include "http/http.h"

/* Parses the request body as JSON with the depth limit; 400 "bad_json" / "too_deep". */
cJSON *wp_api_parse_body(wp_app *app, const wp_req *req, wp_err *err);

/* Handlers (api_*.c). */
void wp_api_health(void *app, const wp_req *req, wp_resp *resp);
void wp_api_ready(void *app, const wp_req *req, wp_resp *resp);
void wp_api_info(void *app, const wp_req *req, wp_resp *resp);
void wp_api_families(void *app, const wp_req *req, wp_resp *resp);
void wp_api_metrics(void *app, const wp_req *req, wp_resp *resp);
void wp_api_compile(void *app, const wp_req *req, wp_resp *resp);
void wp_api_warp(void *app, const wp_req *req, wp_resp *resp);
void wp_api_reduce(void *app, const wp_req *req, wp_resp *resp); /* api_reduce.c */
void wp_api_scan(void *app, const wp_req *req, wp_resp *resp);
extern const wp_stream_hooks wp_api_reduce_stream, wp_api_scan_stream; /* raw bodies into the input buffer */
void wp_api_static(void *app, const wp_req *req, wp_resp *resp);
void wp_api_openapi(void *app, const wp_req *req, wp_resp *resp);     /* api_openapi.c */
void wp_api_jobs_submit(void *app, const wp_req *req, wp_resp *resp); /* api_jobs.c */
void wp_api_jobs_list(void *app, const wp_req *req, wp_resp *resp);
void wp_api_job_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_job_delete(void *app, const wp_req *req, wp_resp *resp);
void wp_api_buffers_put(void *app, const wp_req *req, wp_resp *resp); /* api_buffers.c */
extern const wp_stream_hooks wp_api_buffers_stream;                   /* raw bodies into the new buffer */
void wp_api_buffers_list(void *app, const wp_req *req, wp_resp *resp);
void wp_api_buffer_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_buffer_delete(void *app, const wp_req *req, wp_resp *resp);
void wp_api_cache_list(void *app, const wp_req *req, wp_resp *resp); /* api_cache.c */
void wp_api_cache_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_cache_delete(void *app, const wp_req *req, wp_resp *resp);
void wp_api_cache_prune(void *app, const wp_req *req, wp_resp *resp);

#endif
