/* promtext.h — a strict parser of the Prometheus text exposition format 0.0.4, written for the tests from
 * the format's description (prometheus.io, "Exposition formats"), plus warpd's own conventions:
 *   - UTF-8, "\n" line ends, the last line ended; empty lines ignored; "# HELP name doc" (doc escapes only
 *     \\ and \n) and "# TYPE name counter|gauge|histogram|summary|untyped", each at most once per name and
 *     before the name's first sample; other "#" lines are comments;
 *   - a sample is name{label="value",...} value [timestamp]: names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 *     [a-zA-Z_][a-zA-Z0-9_]* (not "__..."), no label twice, values escaping only \\, \" and \n; a float
 *     value (digits, ".", exponent, NaN, +Inf, -Inf); an optional integer timestamp;
 *   - every sample belongs to a TYPE'd family (histogram: name_bucket, name_sum, name_count; summary:
 *     name_sum, name_count, name{quantile}), all of a family's lines are one uninterrupted group, no
 *     series (name + label set) appears twice;
 *   - histograms: each label set has _bucket samples with "le", le strictly increasing and counts
 *     non-decreasing, ending with le="+Inf", which equals its _count; its _sum is present;
 *   - warpd's rules: every family has HELP and TYPE; counters end in _total and are >= 0.
 * Header-only (static functions); tests/unit/test_promtext.c shows it refuses what it should. */
#ifndef WP_PROMTEXT_H
#define WP_PROMTEXT_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_NAME_MAX 200
#define PT_LABELS_MAX 1024 /* a canonical label set: sorted, escaped, k="v",k="v" */
#define PT_MAX_LABELS 16

typedef struct {
    char name[PT_NAME_MAX];
    char labels[PT_LABELS_MAX]; /* canonical (sorted by label name), "le" included */
    char group[PT_LABELS_MAX];  /* the same without "le": a histogram's series */
    char le[64];                /* "le" value, "" when none */
    double value;
    int family;
} pt_sample;

typedef struct {
    char name[PT_NAME_MAX];
    char type[16]; /* "" until TYPE */
    bool help, started, closed;
} pt_family;

typedef struct {
    pt_sample *s;
    int n, cap;
    pt_family *f;
    int nf, capf;
    char err[512];
} pt_doc;

static inline void pt_free(pt_doc *d) {
    free(d->s);
    free(d->f);
    memset(d, 0, sizeof *d);
}

static inline int pt_fail(pt_doc *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int pt_fail(pt_doc *d, int line, const char *fmt, ...) {
    int n = snprintf(d->err, sizeof d->err, "line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static inline bool pt_utf8_valid(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t need = c < 0x80                 ? 1
                      : c >= 0xc2 && c <= 0xdf ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
        if (!need || i + need > n) return false;
        for (size_t k = 1; k < need; k++)
            if ((p[i + k] & 0xc0) != 0x80) return false;
        if ((c == 0xe0 && p[i + 1] < 0xa0) || (c == 0xed && p[i + 1] >= 0xa0) || (c == 0xf0 && p[i + 1] < 0x90) ||
            (c == 0xf4 && p[i + 1] >= 0x90))
            return false;
        i += need;
    }
    return true;
}

static inline bool pt_name_char(char c, bool first, bool colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
           (!first && c >= '0' && c <= '9');
}

/* A name at *p (metric names allow ':'); advances; false when there is none or it is too long. */
static inline bool pt_name(const char **p, const char *end, bool colon, char *out) {
    const char *s = *p;
    size_t n = 0;
    while (s + n < end && pt_name_char(s[n], n == 0, colon)) n++;
    if (!n || n >= PT_NAME_MAX) return false;
    memcpy(out, s, n);
    out[n] = 0;
    *p = s + n;
    return true;
}

/* A Go ParseFloat-style value as the format writes them: [+-]digits[.digits][(e|E)[+-]digits], or
 * [+-]digits-less ".5"; "NaN", "+Inf", "-Inf", "Inf". */
static inline bool pt_float(const char *s, size_t n, double *out) {
    char buf[64];
    if (!n || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (!strcmp(buf, "NaN")) return *out = NAN, true;
    if (!strcmp(buf, "+Inf") || !strcmp(buf, "Inf")) return *out = INFINITY, true;
    if (!strcmp(buf, "-Inf")) return *out = -INFINITY, true;
    size_t i = 0, digits = 0;
    if (buf[i] == '+' || buf[i] == '-') i++;
    while (buf[i] >= '0' && buf[i] <= '9') i++, digits++;
    if (buf[i] == '.')
        for (i++; buf[i] >= '0' && buf[i] <= '9';) i++, digits++;
    if (!digits) return false;
    if (buf[i] == 'e' || buf[i] == 'E') {
        i++;
        if (buf[i] == '+' || buf[i] == '-') i++;
        size_t e = 0;
        while (buf[i] >= '0' && buf[i] <= '9') i++, e++;
        if (!e) return false;
    }
    if (buf[i]) return false;
    *out = strtod(buf, NULL);
    return true;
}

typedef struct {
    char name[PT_NAME_MAX];
    char value[PT_LABELS_MAX]; /* escaped, as written */
} pt_label;

static inline int pt_label_cmp(const void *a, const void *b) {
    return strcmp(((const pt_label *)a)->name, ((const pt_label *)b)->name);
}

/* {k="v",...} at *p (just after '{'); fills labels, *n. */
static inline int pt_labels(pt_doc *d, int line, const char **p, const char *end, pt_label *labels, int *n) {
    const char *s = *p;
    *n = 0;
    for (;;) {
        if (s < end && *s == '}') break;
        if (*n == PT_MAX_LABELS) return pt_fail(d, line, "more than %d labels", PT_MAX_LABELS);
        pt_label *l = &labels[*n];
        if (!pt_name(&s, end, false, l->name)) return pt_fail(d, line, "bad label name");
        if (!strncmp(l->name, "__", 2)) return pt_fail(d, line, "label name %s is reserved", l->name);
        for (int i = 0; i < *n; i++)
            if (!strcmp(labels[i].name, l->name)) return pt_fail(d, line, "label %s twice", l->name);
        if (end - s < 2 || s[0] != '=' || s[1] != '"') return pt_fail(d, line, "label %s: expected =\"", l->name);
        s += 2;
        size_t o = 0;
        for (;;) {
            if (s >= end) return pt_fail(d, line, "label %s: unterminated value", l->name);
            if (*s == '"') break;
            if (o + 3 > sizeof l->value) return pt_fail(d, line, "label %s: value too long", l->name);
            if (*s == '\\') {
                if (s + 1 >= end || (s[1] != '\\' && s[1] != '"' && s[1] != 'n'))
                    return pt_fail(d, line, "label %s: bad escape", l->name);
                l->value[o++] = *s++;
            }
            l->value[o++] = *s++;
        }
        l->value[o] = 0;
        s++; /* closing quote */
        (*n)++;
        if (s < end && *s == ',') {
            s++;
            continue;
        }
        if (s < end && *s == '}') break;
        return pt_fail(d, line, "expected , or } after label %s", l->name);
    }
    *p = s + 1;
    return 0;
}

static inline int pt_family_find(const pt_doc *d, const char *name) {
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].name, name)) return i;
    return -1;
}

/* The family a line about `name` belongs to; opening it closes the family before it (grouping). */
static inline int pt_family_touch(pt_doc *d, int line, int fam, int *current) {
    if (d->f[fam].closed) return pt_fail(d, line, "%s: its lines are not one group", d->f[fam].name);
    if (*current >= 0 && *current != fam) d->f[*current].closed = true;
    *current = fam;
    return 0;
}

static inline int pt_family_new(pt_doc *d, const char *name) {
    if (d->nf == d->capf) {
        int cap = d->capf ? d->capf * 2 : 64;
        pt_family *g = realloc(d->f, (size_t)cap * sizeof *g);
        if (!g) return -1;
        d->f = g, d->capf = cap;
    }
    memset(&d->f[d->nf], 0, sizeof d->f[d->nf]);
    snprintf(d->f[d->nf].name, PT_NAME_MAX, "%s", name);
    return d->nf++;
}

static inline int pt_meta(pt_doc *d, int line, const char *s, const char *end, int *current) {
    bool help = end - s >= 7 && !strncmp(s, "# HELP ", 7), type = end - s >= 7 && !strncmp(s, "# TYPE ", 7);
    if (!help && !type) return 0; /* a comment */
    s += 7;
    char name[PT_NAME_MAX];
    if (!pt_name(&s, end, true, name)) return pt_fail(d, line, "bad metric name in %s", help ? "HELP" : "TYPE");
    int fam = pt_family_find(d, name);
    if (fam < 0 && (fam = pt_family_new(d, name)) < 0) return pt_fail(d, line, "out of memory");
    if (pt_family_touch(d, line, fam, current)) return -1;
    pt_family *f = &d->f[fam];
    if (f->started) return pt_fail(d, line, "%s: %s after its samples", name, help ? "HELP" : "TYPE");
    if (help) {
        if (f->help) return pt_fail(d, line, "%s: HELP twice", name);
        if (s < end && *s != ' ') return pt_fail(d, line, "%s: HELP needs a space after the name", name);
        for (const char *c = s; c < end; c++)
            if (*c == '\\' && (c + 1 >= end || (c[1] != '\\' && c[1] != 'n')))
                return pt_fail(d, line, "%s: bad escape in HELP", name);
            else if (*c == '\\')
                c++;
        f->help = true;
        return 0;
    }
    if (f->type[0]) return pt_fail(d, line, "%s: TYPE twice", name);
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    size_t tn = (size_t)(end - s);
    for (int i = 0; i < 5; i++)
        if (tn == strlen(types[i]) + 1 && s[0] == ' ' && !strncmp(s + 1, types[i], tn - 1)) {
            snprintf(f->type, sizeof f->type, "%s", types[i]);
            return 0;
        }
    return pt_fail(d, line, "%s: bad TYPE", name);
}

static inline bool pt_ends(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The family of a sample name: its own TYPE, or a histogram's/summary's _bucket/_sum/_count. */
static inline int pt_sample_family(const pt_doc *d, const char *name, const char **suffix) {
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    *suffix = "";
    int own = pt_family_find(d, name);
    if (own >= 0 && d->f[own].type[0]) return own;
    for (int i = 0; i < 3; i++) {
        if (!pt_ends(name, sfx[i])) continue;
        char base[PT_NAME_MAX];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(name) - strlen(sfx[i])), name);
        int fam = pt_family_find(d, base);
        if (fam < 0) continue;
        const char *t = d->f[fam].type;
        if (!strcmp(t, "histogram") || (i > 0 && !strcmp(t, "summary"))) {
            *suffix = sfx[i];
            return fam;
        }
    }
    return -1;
}

static inline int pt_add_sample(pt_doc *d, const pt_sample *s) {
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 256;
        pt_sample *g = realloc(d->s, (size_t)cap * sizeof *g);
        if (!g) return -1;
        d->s = g, d->cap = cap;
    }
    d->s[d->n++] = *s;
    return 0;
}

static inline int pt_sample_line(pt_doc *d, int line, const char *s, const char *end, int *current) {
    pt_sample smp;
    memset(&smp, 0, sizeof smp);
    if (!pt_name(&s, end, true, smp.name)) return pt_fail(d, line, "bad metric name");
    pt_label labels[PT_MAX_LABELS];
    int nl = 0;
    if (s < end && *s == '{') {
        s++;
        if (pt_labels(d, line, &s, end, labels, &nl)) return -1;
    }
    if (s >= end || *s != ' ') return pt_fail(d, line, "%s: expected a space before the value", smp.name);
    s++;
    const char *v = s;
    while (s < end && *s != ' ') s++;
    if (!pt_float(v, (size_t)(s - v), &smp.value)) return pt_fail(d, line, "%s: bad value", smp.name);
    if (s < end) { /* timestamp */
        s++;
        const char *t = s + (s < end && *s == '-');
        if (t >= end) return pt_fail(d, line, "%s: bad timestamp", smp.name);
        for (; t < end; t++)
            if (*t < '0' || *t > '9') return pt_fail(d, line, "%s: bad timestamp", smp.name);
    }
    const char *suffix;
    int fam = pt_sample_family(d, smp.name, &suffix);
    if (fam < 0) return pt_fail(d, line, "%s: sample without a TYPE before it", smp.name);
    if (pt_family_touch(d, line, fam, current)) return -1;
    pt_family *f = &d->f[fam];
    f->started = true;
    smp.family = fam;
    qsort(labels, (size_t)nl, sizeof labels[0], pt_label_cmp);
    size_t lo = 0, go = 0;
    for (int i = 0; i < nl; i++) {
        lo += (size_t)snprintf(smp.labels + lo, sizeof smp.labels - lo, "%s%s=\"%s\"", lo ? "," : "", labels[i].name,
                               labels[i].value);
        if (!strcmp(labels[i].name, "le"))
            snprintf(smp.le, sizeof smp.le, "%.63s", labels[i].value); /* an le longer than that is no number */
        else
            go += (size_t)snprintf(smp.group + go, sizeof smp.group - go, "%s%s=\"%s\"", go ? "," : "", labels[i].name,
                                   labels[i].value);
        if (lo >= sizeof smp.labels || go >= sizeof smp.group) return pt_fail(d, line, "labels too long");
    }
    if (!strcmp(f->type, "histogram") && !suffix[0]) return pt_fail(d, line, "%s: a histogram's bare name", smp.name);
    bool bucket = !strcmp(suffix, "_bucket");
    if (bucket && !smp.le[0]) return pt_fail(d, line, "%s without le", smp.name);
    if (!bucket && smp.le[0] && !strcmp(f->type, "histogram"))
        return pt_fail(d, line, "%s: le on a non-bucket", smp.name);
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].name, smp.name) && !strcmp(d->s[i].labels, smp.labels))
            return pt_fail(d, line, "%s{%s}: duplicate series", smp.name, smp.labels);
    if (!strcmp(f->type, "counter") && !(smp.value >= 0)) return pt_fail(d, line, "%s: counter below 0", smp.name);
    return pt_add_sample(d, &smp) ? pt_fail(d, line, "out of memory") : 0;
}

/* One histogram series (family fam, label group g): buckets, +Inf, _count, _sum. */
static inline int pt_check_histogram_series(pt_doc *d, int fam, const char *g) {
    const char *name = d->f[fam].name;
    char want[PT_NAME_MAX + 8];
    double last_le = -INFINITY, last_count = -1, inf_count = -1;
    bool has_sum = false, has_count = false;
    double count = -1;
    snprintf(want, sizeof want, "%s_bucket", name);
    for (int i = 0; i < d->n; i++) {
        const pt_sample *s = &d->s[i];
        if (s->family != fam || strcmp(s->group, g)) continue;
        if (!strcmp(s->name, want)) {
            double le;
            if (!pt_float(s->le, strlen(s->le), &le) || isnan(le))
                return pt_fail(d, 0, "%s{%s}: bad le \"%s\"", name, g, s->le);
            if (le <= last_le) return pt_fail(d, 0, "%s{%s}: le %s not increasing", name, g, s->le);
            if (s->value < last_count || s->value != floor(s->value))
                return pt_fail(d, 0, "%s{%s}: bucket le=%s count %g is not cumulative", name, g, s->le, s->value);
            last_le = le, last_count = s->value;
            if (isinf(le) && le > 0) inf_count = s->value;
        } else if (pt_ends(s->name, "_sum")) {
            has_sum = true;
        } else if (pt_ends(s->name, "_count")) {
            has_count = true, count = s->value;
        }
    }
    if (inf_count < 0) return pt_fail(d, 0, "%s{%s}: no le=\"+Inf\" bucket", name, g);
    if (!has_count || !has_sum) return pt_fail(d, 0, "%s{%s}: _count or _sum missing", name, g);
    if (count != inf_count) return pt_fail(d, 0, "%s{%s}: +Inf bucket %g != _count %g", name, g, inf_count, count);
    return 0;
}

static inline int pt_check_families(pt_doc *d) {
    for (int fam = 0; fam < d->nf; fam++) {
        pt_family *f = &d->f[fam];
        if (!f->help || !f->type[0]) return pt_fail(d, 0, "%s: HELP and TYPE both needed", f->name);
        if (!strcmp(f->type, "counter") && !pt_ends(f->name, "_total"))
            return pt_fail(d, 0, "%s: a counter's name ends in _total", f->name);
        if (strcmp(f->type, "histogram")) continue;
        for (int i = 0; i < d->n; i++) { /* every series once: at its first sample */
            if (d->s[i].family != fam) continue;
            bool first = true;
            for (int k = 0; k < i && first; k++)
                if (d->s[k].family == fam && !strcmp(d->s[k].group, d->s[i].group)) first = false;
            if (first && pt_check_histogram_series(d, fam, d->s[i].group)) return -1;
        }
    }
    return 0;
}

/* Parses the whole text; 0, or -1 with d->err ("line N: why"). */
static inline int pt_parse(const char *text, size_t len, pt_doc *d) {
    memset(d, 0, sizeof *d);
    if (!pt_utf8_valid((const unsigned char *)text, len)) return pt_fail(d, 0, "not UTF-8");
    if (len && text[len - 1] != '\n') return pt_fail(d, 0, "the last line is not ended by \\n");
    int current = -1, line = 0;
    for (const char *s = text, *end = text + len; s < end;) {
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        line++;
        for (const char *c = s; c < eol; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t') return pt_fail(d, line, "control character");
        if (eol > s && eol[-1] == '\r') return pt_fail(d, line, "\\r\\n line end");
        int rc = eol == s    ? 0
                 : *s == '#' ? pt_meta(d, line, s, eol, &current)
                             : pt_sample_line(d, line, s, eol, &current);
        if (rc) return -1;
        s = eol + 1;
    }
    return pt_check_families(d);
}

/* The value of name{labels} (labels canonical: sorted by name, as written), or NAN when absent. */
static inline double pt_value(const pt_doc *d, const char *name, const char *labels) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].name, name) && !strcmp(d->s[i].labels, labels ? labels : "")) return d->s[i].value;
    return NAN;
}

/* The TYPE of a family, or "" when it has none. */
static inline const char *pt_type(const pt_doc *d, const char *family) {
    int f = pt_family_find(d, family);
    return f < 0 ? "" : d->f[f].type;
}

#endif
