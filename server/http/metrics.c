/* metrics.c — the daemon's histograms, process metrics from /proc, build info and per-device metrics, written
 * in the Prometheus text exposition format 0.0.4 (see metrics.h).
 * Owns: wp_metrics. Knows the route table only to name route patterns. */
#include "metrics.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kernels/family.h"
#include "util/histo.h"

#define METRICS_MAX_PATTERNS 64 /* distinct route patterns (the table has about 20 routes) */
#define METRICS_CLASSES 5       /* 1xx .. 5xx */
#define METRICS_PATTERN_LEN 96

static const char *const kernel_backends[] = {"cuda", "emu"};
#define METRICS_BACKENDS 2

struct wp_metrics {
    const wp_route *routes;
    int nroutes;
    int *route_pattern; /* route i -> index into patterns */
    int npatterns;      /* patterns[npatterns] is "unmatched" */
    char patterns[METRICS_MAX_PATTERNS + 1][METRICS_PATTERN_LEN];
    wp_histo *requests[METRICS_MAX_PATTERNS + 1][METRICS_CLASSES];
    wp_histo *queue_wait, *compile;
    const wp_family *const *families;
    int nfamilies;
    wp_histo **kernels; /* [family * METRICS_BACKENDS + backend] */
};

/* ---------- route patterns ---------- */

static void pattern_of(const wp_route *rt, char *out, size_t cap) {
    if (!(rt->flags & WP_ROUTE_PREFIX))
        snprintf(out, cap, "%s", rt->path);
    else if (!strcmp(rt->path, "/"))
        snprintf(out, cap, "/{file}");
    else
        snprintf(out, cap, "%s%s{id}", rt->path, rt->path[strlen(rt->path) - 1] == '/' ? "" : "/");
}

static int pattern_index(wp_metrics *m, const char *p) {
    for (int i = 0; i < m->npatterns; i++)
        if (!strcmp(m->patterns[i], p)) return i;
    if (m->npatterns == METRICS_MAX_PATTERNS) return -1;
    snprintf(m->patterns[m->npatterns], METRICS_PATTERN_LEN, "%s", p);
    return m->npatterns++;
}

/* The pattern index of a request: its route's, or (no route: 404/405) that of a route with the same
 * path for another method; the catch-all "/" claims no path here; else "unmatched". */
static int request_pattern(const wp_metrics *m, const wp_route *rt, const char *path) {
    if (rt && rt >= m->routes && rt < m->routes + m->nroutes) return m->route_pattern[rt - m->routes];
    if (!path) return m->npatterns;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < m->nroutes; i++) {
            const wp_route *r = &m->routes[i];
            bool prefix = (r->flags & WP_ROUTE_PREFIX) != 0;
            if (prefix != (pass == 1) || (prefix && !strcmp(r->path, "/"))) continue;
            if (prefix ? !strncmp(path, r->path, strlen(r->path)) : !strcmp(path, r->path)) return m->route_pattern[i];
        }
    }
    return m->npatterns;
}

const char *wp_metrics_route(const wp_metrics *m, const wp_route *rt, const char *path) {
    return m ? m->patterns[request_pattern(m, rt, path)] : "unmatched";
}

/* ---------- open / close / observe ---------- */

wp_metrics *wp_metrics_open(const wp_route *routes) {
    wp_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->routes = routes;
    while (routes && routes[m->nroutes].method) m->nroutes++;
    m->route_pattern = calloc((size_t)m->nroutes + 1, sizeof *m->route_pattern);
    bool ok = m->route_pattern != NULL;
    for (int i = 0; ok && i < m->nroutes; i++) {
        char p[METRICS_PATTERN_LEN];
        pattern_of(&routes[i], p, sizeof p);
        ok = (m->route_pattern[i] = pattern_index(m, p)) >= 0;
    }
    if (ok) snprintf(m->patterns[m->npatterns], METRICS_PATTERN_LEN, "unmatched");
    for (int p = 0; ok && p <= m->npatterns; p++)
        for (int c = 0; ok && c < METRICS_CLASSES; c++)
            ok = (m->requests[p][c] = wp_histo_new(wp_histo_bounds_latency, wp_histo_nbounds_latency)) != NULL;
    m->queue_wait = ok ? wp_histo_new(wp_histo_bounds_latency, wp_histo_nbounds_latency) : NULL;
    m->compile = ok ? wp_histo_new(wp_histo_bounds_compile, wp_histo_nbounds_compile) : NULL;
    ok = ok && m->queue_wait && m->compile;
    m->families = wp_family_list(&m->nfamilies);
    if (ok) m->kernels = calloc((size_t)m->nfamilies * METRICS_BACKENDS, sizeof *m->kernels);
    ok = ok && m->kernels;
    for (int i = 0; ok && i < m->nfamilies * METRICS_BACKENDS; i++)
        ok = (m->kernels[i] = wp_histo_new(wp_histo_bounds_kernel, wp_histo_nbounds_kernel)) != NULL;
    if (!ok) {
        wp_metrics_close(m);
        return NULL;
    }
    return m;
}

void wp_metrics_close(wp_metrics *m) {
    if (!m) return;
    for (int p = 0; p <= METRICS_MAX_PATTERNS; p++)
        for (int c = 0; c < METRICS_CLASSES; c++) wp_histo_free(m->requests[p][c]);
    wp_histo_free(m->queue_wait);
    wp_histo_free(m->compile);
    if (m->kernels)
        for (int i = 0; i < m->nfamilies * METRICS_BACKENDS; i++) wp_histo_free(m->kernels[i]);
    free(m->kernels);
    free(m->route_pattern);
    free(m);
}

void wp_metrics_observe_request(wp_metrics *m, const wp_route *rt, const char *path, int status, double seconds) {
    if (!m || status < 100 || status > 599) return;
    wp_histo_observe(m->requests[request_pattern(m, rt, path)][status / 100 - 1], seconds);
}

void wp_metrics_observe_queue_wait(wp_metrics *m, double seconds) {
    if (m) wp_histo_observe(m->queue_wait, seconds);
}

void wp_metrics_observe_compile(wp_metrics *m, double seconds) {
    if (m) wp_histo_observe(m->compile, seconds);
}

void wp_metrics_observe_kernel(wp_metrics *m, const char *family, const char *backend, double seconds) {
    if (!m || !family || !backend) return;
    int b = 0;
    while (b < METRICS_BACKENDS && strcmp(kernel_backends[b], backend)) b++;
    if (b == METRICS_BACKENDS) return;
    for (int i = 0; i < m->nfamilies; i++)
        if (m->families[i]->name[0] == family[0] && !strcmp(m->families[i]->name, family)) {
            wp_histo_observe(m->kernels[i * METRICS_BACKENDS + b], seconds);
            return;
        }
}

/* ---------- writing ---------- */

void wp_metrics_escape_label(const char *in, char *out, size_t cap) {
    size_t o = 0;
    for (; in && *in; in++) {
        const char *rep = *in == '\\' ? "\\\\" : *in == '"' ? "\\\"" : *in == '\n' ? "\\n" : NULL;
        size_t n = rep ? 2 : 1;
        if (o + n + 1 > cap) break;
        if (rep)
            memcpy(out + o, rep, 2);
        else
            out[o] = *in;
        o += n;
    }
    if (cap) out[o] = 0;
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void write_histograms(wp_metrics *m, FILE *f) {
    static const char req[] = "warpd_http_request_duration_seconds";
    head(f, req, "histogram",
         "Seconds from the request line to the last byte of the response, by route pattern and status class.");
    char labels[256];
    for (int p = 0; p <= m->npatterns; p++)
        for (int c = 0; c < METRICS_CLASSES; c++) {
            if (!wp_histo_count(m->requests[p][c])) continue;
            char route[2 * METRICS_PATTERN_LEN];
            wp_metrics_escape_label(m->patterns[p], route, sizeof route);
            snprintf(labels, sizeof labels, "route=\"%s\",code=\"%dxx\"", route, c + 1);
            wp_histo_write(m->requests[p][c], f, req, labels);
        }
    head(f, "warpd_queue_wait_seconds", "histogram", "Seconds a deferred request waited for a worker.");
    wp_histo_write(m->queue_wait, f, "warpd_queue_wait_seconds", "");
    head(f, "warpd_compile_duration_seconds", "histogram", "Seconds of one NVRTC compile, failed ones included.");
    wp_histo_write(m->compile, f, "warpd_compile_duration_seconds", "");
    static const char kern[] = "warpd_kernel_duration_seconds";
    head(f, kern, "histogram",
         "Seconds of one kernel run by family and backend (cuda: device time, or an untimed job's round trip; emu: "
         "the emulation's wall time).");
    for (int i = 0; i < m->nfamilies; i++)
        for (int b = 0; b < METRICS_BACKENDS; b++) {
            const wp_histo *h = m->kernels[i * METRICS_BACKENDS + b];
            if (!wp_histo_count(h)) continue;
            char fam[128];
            wp_metrics_escape_label(m->families[i]->name, fam, sizeof fam);
            snprintf(labels, sizeof labels, "family=\"%s\",backend=\"%s\"", fam, kernel_backends[b]);
            wp_histo_write(h, f, kern, labels);
        }
}

static void write_build(FILE *f, const wp_metrics_build *b) {
    char v[64], n[64], d[64];
    wp_metrics_escape_label(b && b->version ? b->version : "", v, sizeof v);
    wp_metrics_escape_label(b ? b->nvrtc : "", n, sizeof n);
    wp_metrics_escape_label(b && b->driver[0] ? b->driver : "none", d, sizeof d);
    head(f, "warpd_build_info", "gauge", "Always 1; the labels say which warpd, NVRTC and CUDA driver run.");
    fprintf(f, "warpd_build_info{version=\"%s\",nvrtc=\"%s\",driver=\"%s\"} 1\n", v, n, d);
}

static void write_devices(FILE *f, const wp_metrics_device *devs, int n) {
    static const struct {
        const char *name, *type, *help;
        size_t off;
    } per_device[] = {
        {"warpd_device_memory_total_bytes", "gauge", "Memory of the device.", offsetof(wp_metrics_device, mem_total)},
        {"warpd_device_memory_free_bytes", "gauge", "Free memory of the device.",
         offsetof(wp_metrics_device, mem_free)},
        {"warpd_device_zero_copy_runs_total", "counter",
         "Small untimed runs whose kernel worked on page-locked host memory, with no copy (--zero-copy).",
         offsetof(wp_metrics_device, zero_copy_runs)},
        {"warpd_device_resident_runs_total", "counter",
         "Small warp jobs a resident kernel answered from mapped host memory, with no launch (--resident-us).",
         offsetof(wp_metrics_device, resident_runs)},
        {"warpd_device_resident_launches_total", "counter", "Resident warp kernels launched (--resident-us).",
         offsetof(wp_metrics_device, resident_launches)},
    };
    for (size_t g = 0; g < sizeof per_device / sizeof per_device[0]; g++) {
        head(f, per_device[g].name, per_device[g].type, per_device[g].help);
        for (int i = 0; i < n; i++) {
            char name[300];
            wp_metrics_escape_label(devs[i].name, name, sizeof name);
            uint64_t v;
            memcpy(&v, (const char *)&devs[i] + per_device[g].off, sizeof v);
            fprintf(f, "%s{device=\"%d\",name=\"%s\"} %llu\n", per_device[g].name, devs[i].ordinal, name,
                    (unsigned long long)v);
        }
    }
}

/* /proc/self/stat fields 14 utime, 15 stime, 22 starttime (clock ticks), 23 vsize (bytes), 24 rss
 * (pages), counted from 1; the command name (field 2) may hold spaces and parentheses, so fields are
 * counted from the last ')'. */
typedef struct {
    double cpu_s, start_s;
    unsigned long long vsize, rss_pages;
    bool ok;
} proc_stat;

static proc_stat read_proc_stat(void) {
    proc_stat ps = {0};
    size_t len = 0;
    char *text = wp_read_file("/proc/self/stat", &len);
    const char *p = text ? strrchr(text, ')') : NULL;
    unsigned long long utime = 0, stime = 0, start = 0;
    if (p &&
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %llu",
               &utime, &stime, &start, &ps.vsize, &ps.rss_pages) == 5) {
        double tick = (double)sysconf(_SC_CLK_TCK);
        ps.cpu_s = (double)(utime + stime) / tick;
        char *st = wp_read_file("/proc/stat", &len);
        const char *bt = st ? strstr(st, "\nbtime ") : NULL;
        if (bt) ps.start_s = (double)strtoull(bt + 7, NULL, 10) + (double)start / tick;
        free(st);
        ps.ok = true;
    }
    free(text);
    return ps;
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static void write_process(FILE *f) {
    proc_stat ps = read_proc_stat();
    char v[40];
    if (ps.ok) {
        head(f, "process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.");
        wp_histo_format_float(ps.cpu_s, v, sizeof v);
        fprintf(f, "process_cpu_seconds_total %s\n", v);
        head(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        fprintf(f, "process_virtual_memory_bytes %llu\n", ps.vsize);
        head(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        fprintf(f, "process_resident_memory_bytes %llu\n", ps.rss_pages * (unsigned long long)sysconf(_SC_PAGESIZE));
        if (ps.start_s > 0) {
            head(f, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
            wp_histo_format_float(ps.start_s, v, sizeof v);
            fprintf(f, "process_start_time_seconds %s\n", v);
        }
    }
    int fds = open_fds();
    if (fds >= 0) {
        head(f, "process_open_fds", "gauge", "Number of open file descriptors.");
        fprintf(f, "process_open_fds %d\n", fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        head(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        wp_histo_format_float(rl.rlim_cur == RLIM_INFINITY ? 1.0 / 0.0 : (double)rl.rlim_cur, v, sizeof v);
        fprintf(f, "process_max_fds %s\n", v);
    }
}

void wp_metrics_write(wp_metrics *m, FILE *f, const wp_metrics_build *build, const wp_metrics_device *devs, int ndevs) {
    if (m) write_histograms(m, f);
    write_build(f, build);
    write_devices(f, devs, ndevs);
    write_process(f);
}
