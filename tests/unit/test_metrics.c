/* test_metrics.c — the histogram (histo.c), the registry (metrics.c) and the strict exposition-format
 * parser the API test uses (tests/promtext.h):
 *   - the parser takes a well-formed text and refuses each kind of malformed one;
 *   - a histogram puts a value on a bound in that bound's bucket, clamps negatives and NaN, writes
 *     cumulative buckets whose +Inf equals _count, and stays consistent while threads observe and
 *     another thread renders;
 *   - the registry names route patterns (never raw paths), counts by status class, escapes label
 *     values, and its whole output passes the parser. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http/metrics.h"
#include "t.h"
#include "tests/promtext.h"
#include "util/common.h"
#include "util/histo.h"

static int parse(const char *text, pt_doc *d) { return pt_parse(text, strlen(text), d); }

static void test_parser_accepts(void) {
    T_CASE("parser accepts");
    static const char ok[] = "# HELP a_total Things.\n"
                             "# TYPE a_total counter\n"
                             "a_total{x=\"1\",y=\"q\\\"\\\\\\n\"} 3\n"
                             "a_total 0\n"
                             "\n"
                             "# a comment\n"
                             "# TYPE h_seconds histogram\n"
                             "# HELP h_seconds A histogram: back\\\\slash \\n newline.\n"
                             "h_seconds_bucket{le=\"0.5\"} 1\n"
                             "h_seconds_bucket{le=\"1e+01\"} 2\n"
                             "h_seconds_bucket{le=\"+Inf\"} 3\n"
                             "h_seconds_sum 12.5\n"
                             "h_seconds_count 3\n"
                             "# HELP g A gauge.\n"
                             "# TYPE g gauge\n"
                             "g{a=\"b\",} NaN\n"
                             "g{a=\"c\"} -Inf 1700000000000\n"
                             "g{a=\"d\"} +Inf\n"
                             "g{a=\"é\"} .5e-3\n";
    pt_doc d;
    CHECKF(parse(ok, &d) == 0, "%s", d.err);
    CHECK(pt_value(&d, "a_total", "x=\"1\",y=\"q\\\"\\\\\\n\"") == 3);
    CHECK(pt_value(&d, "h_seconds_count", "") == 3);
    CHECK(isnan(pt_value(&d, "g", "a=\"b\"")));
    CHECK(pt_value(&d, "g", "a=\"é\"") == 0.0005);
    CHECK(isnan(pt_value(&d, "g", "a=\"zz\""))); /* absent */
    CHECK(!strcmp(pt_type(&d, "h_seconds"), "histogram"));
    pt_free(&d);
}

static void test_parser_refuses(void) {
    T_CASE("parser refuses");
    static const char *const bad[] = {
        "# HELP a_total x\n# TYPE a_total counter\na_total 1",                           /* no final \n */
        "a 1\n",                                                                         /* no TYPE */
        "# HELP a x\n# TYPE a gauge\na 1\n# HELP a x\n",                                 /* HELP twice / after */
        "# HELP a x\n# TYPE a gauge\n# TYPE a gauge\na 1\n",                             /* TYPE twice */
        "# HELP a x\n# TYPE a gaug\na 1\n",                                              /* bad type */
        "# TYPE a gauge\na 1\n",                                                         /* no HELP */
        "# HELP a x\n# TYPE a gauge\na{b=\"1\"} 1\na{b=\"1\"} 2\n",                      /* duplicate series */
        "# HELP a x\n# TYPE a gauge\na{b=\"1\",b=\"2\"} 1\n",                            /* label twice */
        "# HELP a x\n# TYPE a gauge\na{__b=\"1\"} 1\n",                                  /* reserved label */
        "# HELP a x\n# TYPE a gauge\na{1b=\"1\"} 1\n",                                   /* label name */
        "# HELP a x\n# TYPE a gauge\na{b=\"x\\y\"} 1\n",                                 /* bad escape */
        "# HELP a x\n# TYPE a gauge\na{b=\"x} 1\n",                                      /* unterminated */
        "# HELP a x\n# TYPE a gauge\na{b=\"x\" c=\"y\"} 1\n",                            /* no comma */
        "# HELP a x\n# TYPE a gauge\na one\n",                                           /* value */
        "# HELP a x\n# TYPE a gauge\na 1.2.3\n",                                         /* value */
        "# HELP a x\n# TYPE a gauge\na  1\n",                                            /* two spaces */
        "# HELP a x\n# TYPE a gauge\na 1 12x\n",                                         /* timestamp */
        "# HELP a x\n# TYPE a gauge\n1a 1\n",                                            /* metric name */
        "# HELP a x\n# TYPE a gauge\na-b 1\n",                                           /* metric name */
        "# HELP a x\n# TYPE a gauge\na 1\r\n",                                           /* CRLF */
        "# HELP a x\\q\n# TYPE a gauge\na 1\n",                                          /* HELP escape */
        "# HELP a x\n# TYPE a gauge\na{b=\"\xff\"} 1\n",                                 /* not UTF-8 */
        "# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na 2\n",       /* not grouped */
        "# HELP a x\n# TYPE a counter\na 1\n",                                           /* counter name */
        "# HELP a_total x\n# TYPE a_total counter\na_total -1\n",                        /* counter < 0 */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",    /* no +Inf */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n", /* +Inf != count */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"2\"} 0\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\n"
        "h_sum 0\nh_count 0\n",                                                 /* le order */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", /* no _sum */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\n",   /* no _count */
        "# HELP h x\n# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n",     /* no le */
        "# HELP h x\n# TYPE h histogram\nh 1\n",                                /* bare name */
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"x\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum{le=\"1\"} 1\nh_count 1\n", /* le on _sum */
        "# HELP h x\n# TYPE h histogram\nh_bucket{a=\"1\",le=\"+Inf\"} 1\nh_sum{a=\"1\"} 1\nh_count{a=\"1\"} 1\n"
        "h_bucket{a=\"2\",le=\"+Inf\"} 1\nh_sum{a=\"2\"} 1\n", /* second series has no _count */
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(bad); i++) {
        pt_doc d;
        int rc = parse(bad[i], &d);
        CHECKF(rc == -1, "bad text %zu was accepted", i);
        pt_free(&d);
    }
}

static void test_histo_buckets(void) {
    T_CASE("histogram buckets");
    static const double b[] = {0.1, 1, 10};
    CHECK(wp_histo_new(b, 0) == NULL);
    static const double unsorted[] = {1, 0.5};
    CHECK(wp_histo_new(unsorted, 2) == NULL);
    static const double inf[] = {1, INFINITY};
    CHECK(wp_histo_new(inf, 2) == NULL);
    wp_histo *h = wp_histo_new(b, 3);
    CHECK(h != NULL);
    wp_histo_observe(h, 0.1); /* on a bound: that bucket (le) */
    wp_histo_observe(h, 0.5);
    wp_histo_observe(h, 1);
    wp_histo_observe(h, 20);
    wp_histo_observe(h, -3); /* as 0 */
    wp_histo_observe(h, NAN);
    wp_histo_observe(h, INFINITY);
    CHECK(wp_histo_count(h) == 7);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "# HELP x_seconds x\n# TYPE x_seconds histogram\n");
    wp_histo_write(h, f, "x_seconds", "a=\"1\"");
    fclose(f);
    pt_doc d;
    CHECKF(parse(text, &d) == 0, "%s\n%s", d.err, text);
    CHECK(pt_value(&d, "x_seconds_bucket", "a=\"1\",le=\"0.1\"") == 3); /* 0.1, and -3 and NaN as 0 */
    CHECK(pt_value(&d, "x_seconds_bucket", "a=\"1\",le=\"1\"") == 5);
    CHECK(pt_value(&d, "x_seconds_bucket", "a=\"1\",le=\"10\"") == 5);
    CHECK(pt_value(&d, "x_seconds_bucket", "a=\"1\",le=\"+Inf\"") == 7);
    CHECK(pt_value(&d, "x_seconds_count", "a=\"1\"") == 7);
    CHECK(fabs(pt_value(&d, "x_seconds_sum", "a=\"1\"") - 21.6) < 1e-9);
    pt_free(&d);
    free(text);
    wp_histo_free(h);

    char v[40];
    wp_histo_format_float(0.00025, v, sizeof v);
    CHECK(!strcmp(v, "0.00025"));
    wp_histo_format_float(1e-6, v, sizeof v);
    CHECK(strtod(v, NULL) == 1e-6);
    wp_histo_format_float(20000, v, sizeof v);
    CHECK(!strcmp(v, "20000"));
    wp_histo_format_float(-INFINITY, v, sizeof v);
    CHECK(!strcmp(v, "-Inf"));
    wp_histo_format_float(NAN, v, sizeof v);
    CHECK(!strcmp(v, "NaN"));
}

#define OBSERVERS 20 /* more than the histogram's stripes: some threads share one */
#define OBSERVATIONS 20000

static void *observe_many(void *arg) {
    wp_histo *h = arg;
    for (int i = 0; i < OBSERVATIONS; i++) wp_histo_observe(h, (double)(i % 100) * 0.001);
    return NULL;
}

static void test_histo_concurrent(void) {
    T_CASE("histogram while threads observe");
    wp_histo *h = wp_histo_new(wp_histo_bounds_latency, wp_histo_nbounds_latency);
    pthread_t th[OBSERVERS];
    for (int i = 0; i < OBSERVERS; i++) pthread_create(&th[i], NULL, observe_many, h);
    int consistent = 0, renders = 0;
    for (; renders < 50; renders++) { /* render while they run: every rendering is consistent */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        fprintf(f, "# HELP r_seconds r\n# TYPE r_seconds histogram\n");
        wp_histo_write(h, f, "r_seconds", "");
        fclose(f);
        pt_doc d;
        if (parse(text, &d) == 0)
            consistent++;
        else
            fprintf(stderr, "  %s\n", d.err);
        pt_free(&d);
        free(text);
    }
    for (int i = 0; i < OBSERVERS; i++) pthread_join(th[i], NULL);
    CHECK(consistent == renders);
    CHECK(wp_histo_count(h) == (uint64_t)OBSERVERS * OBSERVATIONS); /* no observation lost */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wp_histo_write(h, f, "r_seconds", "");
    fclose(f); /* each thread: 200 times 0 + 0.001 + ... + 0.099 s = 990 s; the stripes added up */
    CHECKF(strstr(text, "r_seconds_sum 19800\n") && strstr(text, "r_seconds_bucket{le=\"0.0001\"} 4000\n") &&
               strstr(text, "r_seconds_count 400000\n"),
           "%s", text);
    free(text);
    wp_histo_free(h);
}

static void *take_slot(void *arg) {
    *(unsigned *)arg = wp_thread_slot(4) + 1;
    *(unsigned *)arg = *(unsigned *)arg == wp_thread_slot(4) + 1 ? *(unsigned *)arg : 0; /* the same again */
    return NULL;
}

static void test_thread_slot(void) {
    T_CASE("thread slots: 16 threads that ask one after another have one each");
    unsigned got[16] = {0}, seen = 0;
    pthread_t th[16];
    for (int i = 0; i < 16; i++) {
        pthread_create(&th[i], NULL, take_slot, &got[i]);
        pthread_join(th[i], NULL); /* one after another: nothing else asks in between */
    }
    for (int i = 0; i < 16; i++)
        if (got[i]) seen |= 1u << (got[i] - 1);
    CHECK(seen == 0xffff);
}

static void noop(void *app, const wp_req *req, wp_resp *resp) { (void)app, (void)req, (void)resp; }

static const wp_route routes[] = {
    {"GET", "/v1/health", noop, WP_ROUTE_INLINE, NULL},
    {"POST", "/v1/warp", noop, WP_ROUTE_WORK, NULL},
    {"GET", "/v1/jobs", noop, WP_ROUTE_INLINE, NULL},
    {"POST", "/v1/jobs", noop, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/jobs/", noop, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/jobs/", noop, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"GET", "/", noop, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static void test_registry(void) {
    T_CASE("registry");
    wp_metrics *m = wp_metrics_open(routes);
    CHECK(m != NULL);
    CHECK(!strcmp(wp_metrics_route(m, &routes[4], "/v1/jobs/j-123"), "/v1/jobs/{id}"));
    CHECK(!strcmp(wp_metrics_route(m, &routes[5], "/v1/jobs/j-123"), "/v1/jobs/{id}"));
    CHECK(!strcmp(wp_metrics_route(m, &routes[6], "/index.html"), "/{file}"));
    CHECK(!strcmp(wp_metrics_route(m, NULL, "/v1/warp"), "/v1/warp")); /* a 405 */
    CHECK(!strcmp(wp_metrics_route(m, NULL, "/v1/jobs/x"), "/v1/jobs/{id}"));
    CHECK(!strcmp(wp_metrics_route(m, NULL, "/nothing"), "unmatched")); /* "/" claims no 404 */
    wp_metrics_observe_request(m, &routes[4], "/v1/jobs/a", 404, 0.001);
    wp_metrics_observe_request(m, &routes[5], "/v1/jobs/b", 200, 0.002);
    wp_metrics_observe_request(m, NULL, "/v1/warp", 405, 0.0001);
    wp_metrics_observe_request(m, NULL, "/x\"y", 404, 0.0001);
    wp_metrics_observe_request(m, &routes[0], "/v1/health", 42, 0.0001); /* no class: not counted */
    wp_metrics_observe_compile(m, 0.05);
    wp_metrics_observe_queue_wait(m, 0.0002);
    wp_metrics_observe_kernel(m, "shfl_xor", "emu", 0.00001);
    wp_metrics_observe_kernel(m, "no_such_family", "emu", 0.00001);
    wp_metrics_observe_kernel(m, "shfl_xor", "tpu", 0.00001);
    wp_metrics_build b = {.version = "1.2.3", .nvrtc = "12.4", .driver = ""};
    wp_metrics_device dev = {3, "GPU \"quoted\" \\ name\nnext", 80, 40, 7, 5, 2};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wp_metrics_write(m, f, &b, &dev, 1);
    fclose(f);
    pt_doc d;
    CHECKF(parse(text, &d) == 0, "%s", d.err);
    CHECK(pt_value(&d, "warpd_http_request_duration_seconds_count", "code=\"4xx\",route=\"/v1/jobs/{id}\"") == 1);
    CHECK(pt_value(&d, "warpd_http_request_duration_seconds_count", "code=\"2xx\",route=\"/v1/jobs/{id}\"") == 1);
    CHECK(pt_value(&d, "warpd_http_request_duration_seconds_count", "code=\"4xx\",route=\"/v1/warp\"") == 1);
    CHECK(pt_value(&d, "warpd_http_request_duration_seconds_count", "code=\"4xx\",route=\"unmatched\"") == 1);
    CHECK(!strstr(text, "/v1/jobs/a") && !strstr(text, "x\\\"y")); /* never a raw path */
    CHECK(isnan(pt_value(&d, "warpd_http_request_duration_seconds_count", "code=\"2xx\",route=\"/v1/health\"")));
    CHECK(pt_value(&d, "warpd_compile_duration_seconds_count", "") == 1);
    CHECK(pt_value(&d, "warpd_compile_duration_seconds_bucket", "le=\"0.05\"") == 1);
    CHECK(pt_value(&d, "warpd_compile_duration_seconds_bucket", "le=\"0.025\"") == 0);
    CHECK(pt_value(&d, "warpd_queue_wait_seconds_count", "") == 1);
    CHECK(pt_value(&d, "warpd_kernel_duration_seconds_count", "backend=\"emu\",family=\"shfl_xor\"") == 1);
    CHECK(pt_value(&d, "warpd_build_info", "driver=\"none\",nvrtc=\"12.4\",version=\"1.2.3\"") == 1);
    const char *devl = "device=\"3\",name=\"GPU \\\"quoted\\\" \\\\ name\\nnext\"";
    CHECK(pt_value(&d, "warpd_device_memory_total_bytes", devl) == 80);
    CHECK(pt_value(&d, "warpd_device_memory_free_bytes", devl) == 40);
    CHECK(pt_value(&d, "warpd_device_zero_copy_runs_total", devl) == 7);
    CHECK(strstr(text, "# TYPE warpd_device_zero_copy_runs_total counter\n") != NULL);
    CHECK(pt_value(&d, "warpd_device_resident_runs_total", devl) == 5);
    CHECK(pt_value(&d, "warpd_device_resident_launches_total", devl) == 2);
    CHECK(strstr(text, "# TYPE warpd_device_resident_runs_total counter\n") != NULL);
    CHECK(pt_value(&d, "process_resident_memory_bytes", "") > 0);
    CHECK(pt_value(&d, "process_virtual_memory_bytes", "") > 0);
    CHECK(pt_value(&d, "process_open_fds", "") >= 3);
    CHECK(pt_value(&d, "process_max_fds", "") >= pt_value(&d, "process_open_fds", ""));
    CHECK(pt_value(&d, "process_cpu_seconds_total", "") >= 0);
    CHECK(pt_value(&d, "process_start_time_seconds", "") > 1.6e9);
    CHECK(!strcmp(pt_type(&d, "process_cpu_seconds_total"), "counter"));
    pt_free(&d);
    free(text);
    wp_metrics_close(m);

    char esc[16];
    wp_metrics_escape_label("a\"b\\c\nd", esc, sizeof esc);
    CHECK(!strcmp(esc, "a\\\"b\\\\c\\nd"));
    wp_metrics_escape_label("abcdefgh\"", esc, 10); /* cut before an escape that does not fit */
    CHECK(!strcmp(esc, "abcdefgh"));
}

int main(void) {
    test_parser_accepts();
    test_parser_refuses();
    test_histo_buckets();
    test_histo_concurrent();
    test_thread_slot();
    test_registry();
    return t_done("metrics");
}
