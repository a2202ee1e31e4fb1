/* api_reduce_impl.h — what the api_reduce*.c files share: a request's input in each of its forms, the
 * streamed raw body, the "data" list read in place (api_reduce_input.c), the reference of "check"
 * (api_reduce_check.c); api_reduce.c's handler uses them. Nothing else includes it. */
#ifndef WP_API_REDUCE_IMPL_H
#define WP_API_REDUCE_IMPL_H

#include "api.h"
#include "engine/bykey.h"
#include "kernels/hist.h"
#include "util/jsonout.h"

#define WP_REDUCE_INLINE_MAX (64u << 10) /* bytes of input (or of body) a job may have to run on the HTTP thread */

typedef enum { FORM_JSON, FORM_B64, FORM_RAW, FORM_BUFFER, FORM_GENERATE, FORM_SHM, FORM_INTO } data_form;

typedef struct {
    data_form form;
    const uint8_t *data; /* packed input on the host: host, or the raw body itself (no copy); uploaded
                            with the job (batch_exec.h) */
    uint8_t *host;       /* owned copy (JSON, base64; buffer/generate only for check) */
    uint64_t count;
    wp_buf *in; /* the job's input */
    bool in_owned;
    wp_buf *held;      /* from wp_buffers_get, released at the end */
    wp_region *region; /* "shm": held until the end */
    uint64_t *offsets_host;
    uint64_t groups;
    double upload_us, generate_us;
} reduce_input;

/* A raw body streamed into the job's input buffer while it arrives (http.h stream hooks). */
typedef struct {
    wp_app *app;
    wp_type type;      /* the job's, from the query */
    wp_backend *be;    /* where it runs */
    wp_buf *buf;       /* the input: the whole body */
    wp_buf_stream *up; /* filling buf */
} raw_sink;

/* "data" read in place: api_reduce_input.c says how. */
typedef struct {
    bool on;         /* "data" was read in place; the parsed body holds [] in its place */
    size_t from, to; /* the list's bytes in the request body */
    wp_type type;    /* the type it was read as */
    uint8_t *host;   /* its values, packed */
    uint64_t count;
} fast_data;

/* api_reduce_input.c */
void reduce_input_free(wp_app *app, reduce_input *in);
cJSON *reduce_query_object(const wp_req *req, wp_err *err); /* a raw body's query arguments as a JSON object */
int reduce_check_count(wp_app *app, uint64_t n, const char *field, wp_err *err); /* 413 past --max-elements */
int reduce_raw_length(wp_app *app, uint64_t bytes, wp_type t, wp_err *err); /* a raw body of bytes: whole elements */
cJSON *reduce_parse_fast(wp_app *app, const wp_req *req, fast_data *fd);
int reduce_input_fast(wp_app *app, const wp_req *req, fast_data *fd, wp_type t, reduce_input *in, wp_err *err);
int reduce_input_json(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err);
int reduce_input_b64(wp_app *app, const cJSON *data, wp_type t, reduce_input *in, wp_err *err);
int reduce_input_raw(wp_app *app, const wp_req *req, wp_type t, wp_backend *be, reduce_input *in, wp_err *err);
int reduce_input_generate(wp_app *app, wp_backend *be, const cJSON *g, wp_type t, bool inline_run, reduce_input *in,
                          wp_err *err);
int reduce_input_shm(wp_app *app, const wp_req *req, const cJSON *shm, wp_type t, wp_backend *be, bool inline_run,
                     reduce_input *in, wp_err *err);
int reduce_input_offsets(const cJSON *list, reduce_input *in, wp_err *err);

/* api_reduce_input2.c: the second input of a map over y ("data2", "data2_b64", "buffer2", "shm2") */
/* Which one the body names: *value NULL when none; 400 when two. */
int reduce_second_form(const cJSON *body, const cJSON **value, const char **name, wp_err *err);
/* Reads it as type t for a job on be whose first input has `count` elements (400 naming it otherwise). */
int reduce_input_second(wp_app *app, const wp_req *req, const cJSON *body, wp_type t, wp_backend *be, uint64_t count,
                        reduce_input *in2, wp_err *err);
/* map(x_i, y_i) for i < n in s->type (y from in2, read back from the device when it is there): "check"'s
 * input. The caller frees it; NULL with err. */
uint8_t *reduce_map_host(const wp_spec *s, const uint8_t *x, reduce_input *in2, uint64_t n, wp_err *err);
/* api_reduce_check.c: a statistic's (op mean, var, ...: kernels/stats.h) "ddof" (0 by default; 400 naming
 * it unless 0 or 1 with var or std), its answer ("value" in its value type, "value_type") and its check */
int reduce_stat_ddof(const cJSON *body, const wp_spec *s, int *ddof, wp_err *err);
int reduce_stat_result(cJSON *o, const wp_spec *s, const wp_reduce_result *r, int ddof);
cJSON *reduce_check_stat(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r, int ddof);

/* api_reduce_check.c: "check" of a value (reductions), an index (argmin, argmax), an array */
cJSON *reduce_check_value(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r);
cJSON *reduce_check_arg(const wp_spec *s, const uint8_t *host, uint64_t n, const wp_reduce_result *r);
/* api_reduce_bykey.c: reduce_by_key (WP_F_KEYS), once api_reduce.c has its spec, backend and data:
 * reads "keys", runs the job (engine/bykey.h) and answers in resp. 0, or -1 with err. */
typedef struct {
    const cJSON *body;
    wp_spec *spec; /* its keys' type may be set from a keys buffer's */
    wp_backend *be;
    const reduce_input *data;
    bool compile, check;
    double parse_us;
} reduce_bykey_args;
int reduce_bykey(wp_app *app, const wp_req *req, wp_resp *resp, const reduce_bykey_args *a, wp_err *err);

cJSON *reduce_check_array(const wp_spec *s, const uint8_t *host, uint64_t n, const uint8_t *out, uint64_t out_count,
                          const reduce_input *in, bool has_init, uint64_t init);

/* api_reduce_hist.c: the histogram family. parse: "bins" and "range" into h and the job (for any other
 * family: 400 if they are given); input: in->groups and the edges (bins + 1 doubles, the kernel's aux);
 * result: the answer's counts, totals and edges; check: the counts against a plain search. */
int reduce_hist_parse(const cJSON *body, wp_spec *spec, wp_hist *h, wp_reduce_job *job, wp_err *err);
int reduce_hist_input(const wp_hist *h, reduce_input *in, wp_err *err);
int reduce_hist_result(cJSON *o, const wp_hist *h, const uint8_t *counts_host, uint64_t n, wp_err *err);
cJSON *reduce_hist_check(const wp_hist *h, const uint8_t *host, uint64_t n, const uint8_t *counts_host);

/* One reduce or scan request (api_reduce.c), as the files that serve it see it. */
/* Everything one request holds; api_reduce.c's req_free gives back what is set. */
typedef struct {
    const wp_req *req;
    bool scan, raw, inline_run; /* inline_run: on the HTTP thread (WP_ROUTE_TRY_INLINE), may defer */
    wp_err err;
    wp_spec spec;
    const wp_family *f;
    cJSON *body;                               /* read, never edited (util/jsonparse.h) */
    const char *family_default, *type_default; /* what the body does not name: the spec's */
    fast_data fast;
    const cJSON *data, *b64, *bufid, *gen, *shm; /* which input form the body names */
    wp_buffer_info binfo;
    wp_backend *be;
    bool check;
    int ddof; /* var, std: "ddof" 0 or 1 */
    reduce_input in;
    reduce_input in2;    /* a map over y: the second input (api_reduce_input2.c) */
    wp_batch_reduce job; /* the job and its results (batch_exec.h) */
    data_form out_form;
    bool array;            /* the family writes an array (scans, per-group results) */
    wp_data_plan plan;     /* for the output's size */
    wp_hist hist;          /* histogram: its binning (kernels/hist.h) */
    wp_buf *out_buf;       /* "output":"buffer": created in the registry */
    uint8_t *out_host;     /* an array result, downloaded */
    wp_region *out_region; /* "output":{"shm":...}: the result goes there (at out_offset) */
    uint64_t out_offset;
    wp_buf *out_dev;  /* ... through this device buffer when it is large and on a GPU (DMA) */
    wp_buf *out_into; /* "output":{"buffer": ID}: the registry's buffer the result is written into */
    wp_buffer_info out_info;
    double parse_us;
    /* handed to the batcher's runners (the HTTP thread does not wait for a GPU job, batch_exec.h) */
    bool hand;           /* may be handed: the HTTP thread would otherwise defer it to a worker */
    uint64_t t_hand_ns;  /* when it was handed */
    double hand_wait_us; /* the hand-off's share: the runners' queue and the way back, not the run */
    wp_app *app;         /* handed: what the HTTP thread answers with once the runner is done */
    /* a job alone on its thread: the answer's parts that its result does not decide, written while the
     * device runs it (wp_batch_reduce.meanwhile): from "family" to "count", then from "backend" on */
    wp_jtext pre;
    size_t pre_split;
} reduce_req;

/* After the run (rc as wp_batch_run_reduce's): the answer, an error or a deferral into resp.
 * api_reduce.c's, passed to reduce_hand with the function that then gives back every part of q (not q
 * itself). */
typedef bool (*reduce_answer_fn)(wp_app *app, reduce_req *q, wp_resp *resp, int rc);
typedef void (*reduce_free_fn)(wp_app *app, reduce_req *q);
/* api_reduce_hand.c: moves q to the heap and hands its job to the batcher's runners (the connection
 * parked until the runner is done; then the HTTP thread answers with answer, and q's parts are given
 * back with free_parts there, when the call ends): 0, or 1 when it was not handed (q keeps its parts). */
int reduce_hand(wp_app *app, reduce_req *q, reduce_answer_fn answer, reduce_free_fn free_parts);
/* api_reduce_input.c, the buffer form: "buffer" looked up (held until the request is over; its type is
 * the job's), then its backend and count (1: defer a large one on the HTTP thread). */
int reduce_buffer_lookup(wp_app *app, reduce_req *q);
int reduce_input_buffer(wp_app *app, reduce_req *q);

#endif
