/* api.h — the routes' handlers (one api_*.c per route group: parse the request, call the engine,
 * answer) and what they share. main.c puts them in the route table; each runs on the thread the HTTP
 * layer gives it (an HTTP thread for WP_ROUTE_TRY_INLINE routes, else a worker: http/http.h). */
#ifndef WP_API_H
#define WP_API_H

#include "engine/app.h"
#include "http/http.h"
#include "util/jsonout.h"

/* A job's 200 answer written as text (jsonout.h), in the buffer of the call's last answer when it has
 * one (wp_req_take_text): begun by wp_api_text_begin, sent by wp_api_text_answer, which gives the
 * buffer back to the call for its next answer (a 500 when the text could not be built). Threads: the
 * handler's. */
void wp_api_text_begin(wp_jtext *o, const wp_req *req);
void wp_api_text_answer(wp_jtext *o, wp_resp *resp);

/* Parses the request body as JSON with the depth limit; 400 "bad_json" / "too_deep". */
cJSON *wp_api_parse_body(wp_app *app, const wp_req *req, wp_err *err);
/* Whether a job route called on the HTTP thread (req->may_defer) should defer to a worker before it
 * parses: a GPU job would go to one anyway (under load, wp_app_defers_gpu_jobs), and the body asks for
 * no backend (an emu job may stay). Parsed there and again on the worker, it cost the busy HTTP thread
 * a parse a job. */
bool wp_api_defer_unparsed(wp_app *app, const wp_req *req);

/* Whether req may use a shared-memory region (api_shm.c): 403 "shm_disabled" under --shm off, 403
 * "shm_remote" from a peer that is not local without --shm-remote; field names the request's field. */
int wp_api_shm_allowed(const wp_app *app, const wp_req *req, const char *field, wp_err *err);
/* The region that the object {"id", "offset", "count"} named field ("shm", "output.shm") names, held
 * (wp_region_put it), and its offset (default 0): the check above, 400 "wrong_type" / "missing_field" /
 * "unknown_field" naming field.key, 404 "unknown_shm" naming field.id. */
wp_region *wp_api_shm_hold(wp_app *app, const wp_req *req, const cJSON *at, const char *field, uint64_t *offset,
                           wp_err *err);
/* A region as a job's input, "shm": {"id", "offset", "count"} of elements of t: the check above, the
 * region held (wp_region_put it), *offset (default 0; a multiple of the element size) and *count
 * (default: every whole element to the region's end) checked against it: 400 "out_of_range" naming
 * shm.offset or shm.count, 404 "unknown_shm" naming shm.id. */
wp_region *wp_api_shm_input(wp_app *app, const wp_req *req, const cJSON *shm, wp_type t, uint64_t *offset,
                            uint64_t *count, wp_err *err);
/* A region as an array result's home, "output": {"shm": {"id", "offset"}}, with room for bytes. */
wp_region *wp_api_shm_output(wp_app *app, const wp_req *req, const cJSON *shm, uint64_t bytes, uint64_t *offset,
                             wp_err *err);
/* What an answer says of a result written there: {"shm": {"id", "offset", "count", "bytes"}}. */
cJSON *wp_api_shm_written(const wp_region *g, uint64_t offset, uint64_t count, uint64_t bytes);

/* Handlers (api_*.c). */
void wp_api_health(void *app, const wp_req *req, wp_resp *resp);
void wp_api_whoami(void *app, const wp_req *req, wp_resp *resp); /* GET /v1/whoami: name, role, quotas */
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
void wp_api_shm_add(void *app, const wp_req *req, wp_resp *resp); /* api_shm.c */
void wp_api_shm_list(void *app, const wp_req *req, wp_resp *resp);
void wp_api_shm_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_shm_delete(void *app, const wp_req *req, wp_resp *resp);
void wp_api_channels_add(void *app, const wp_req *req, wp_resp *resp); /* api_channel.c */
void wp_api_channels_list(void *app, const wp_req *req, wp_resp *resp);
void wp_api_channel_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_channel_delete(void *app, const wp_req *req, wp_resp *resp);
/* A channel's request run as POST /v1/reduce or /v1/scan from a local peer (engine/channels.h's serve). */
void wp_api_channel_serve(void *app, const wp_user *user, unsigned route, const char *body, size_t len, wp_resp *out);
void wp_api_cache_list(void *app, const wp_req *req, wp_resp *resp); /* api_cache.c */
void wp_api_cache_get(void *app, const wp_req *req, wp_resp *resp);
void wp_api_cache_delete(void *app, const wp_req *req, wp_resp *resp);
void wp_api_cache_prune(void *app, const wp_req *req, wp_resp *resp);

#endif
