/* jit.c — NVRTC: turns a spec into a cubin. At open it reads every template (*.cu), every header
 * (*.cuh and wp_abi.h) and fingerprints each template with the headers it includes; after that the
 * wp_jit is read-only (but for the compile slots, behind their lock, and the key memo: lock-free reads, writers under
 * its lock), so any number of compiles (each its own nvrtcProgram) run at once. Owns: wp_jit, its key memo,
 * wp_artifact. Knows nothing of caching or of how a cubin is loaded. */
#include "jit.h"
#include "jit_memo.h"

#include <dirent.h>
#include <errno.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"

#define JIT_KEY_TAG "warpd-jit-1"
#define JIT_ABI_HEADER "wp_abi.h"
#define JIT_MAX_FILES 256     /* templates or headers in one directory */
#define JIT_NAME_EXPR_MAX 512 /* "wp_warp_reduce<unsigned long long, 32, 0xffffffffu, wp_op_max<...> >" */
#define JIT_PRELUDE_MAX 4096  /* an expression functor */
#define JIT_ERR_LOG_MAX 160   /* how much of the NVRTC log goes into wp_err.msg */
#define JIT_MAX_OPTIONS 8
_Static_assert(JIT_NAME_EXPR_MAX >= WP_SPEC_NAME_MAX && JIT_PRELUDE_MAX >= WP_SPEC_PRELUDE_MAX,
               "what wp_spec_validate lets through must fit (spec.h)");

typedef struct {
    char *name; /* as #included / as the family row names it */
    char *text;
    size_t len;
} jit_file;

typedef struct {
    jit_file file;
    uint8_t digest[32]; /* sha256 over this template and every header it includes, transitively */
} jit_template;

struct wp_jit {
    char *templates_dir;
    int major, minor;
    jit_file headers[JIT_MAX_FILES]; /* sorted by name */
    int n_headers;
    jit_template templates[JIT_MAX_FILES];
    int n_templates;
    const char *header_names[JIT_MAX_FILES]; /* the views nvrtcCreateProgram takes */
    const char *header_texts[JIT_MAX_FILES];
    char include_opt[4200];                  /* "-I<cuda_include>" */
    const char *fixed_opts[JIT_MAX_OPTIONS]; /* after -arch, before -DWP_NEED_FP16 */
    int n_fixed;
    char options_text[4400];
    /* at most `parallel` NVRTC programs compile at once (wp_jit_set_parallel; 0: no limit) */
    pthread_mutex_t slots_lock;
    pthread_cond_t slot_free;
    int parallel, compiling, compiling_max; /* compiling_max: the most at once so far */
    wp_jit_memo *memo;                      /* the pointer is fixed at open; the slots change under memo->lock */
};

/* A compile slot: waits while `parallel` programs compile (NVRTC is CPU- and memory-heavy: more at
 * once than cores only makes each slower, and many workers may ask at once). */
static void slot_take(wp_jit *j) {
    pthread_mutex_lock(&j->slots_lock);
    while (j->parallel > 0 && j->compiling >= j->parallel) pthread_cond_wait(&j->slot_free, &j->slots_lock);
    if (++j->compiling > j->compiling_max) j->compiling_max = j->compiling;
    pthread_mutex_unlock(&j->slots_lock);
}
static void slot_give(wp_jit *j) {
    pthread_mutex_lock(&j->slots_lock);
    j->compiling--;
    pthread_cond_signal(&j->slot_free);
    pthread_mutex_unlock(&j->slots_lock);
}

void wp_jit_compiling(wp_jit *j, int *now, int *most) {
    pthread_mutex_lock(&j->slots_lock);
    *now = j->compiling;
    *most = j->compiling_max;
    pthread_mutex_unlock(&j->slots_lock);
}

void wp_jit_set_parallel(wp_jit *j, int n) {
    pthread_mutex_lock(&j->slots_lock);
    j->parallel = n > 0 ? n : 0;
    pthread_cond_broadcast(&j->slot_free);
    pthread_mutex_unlock(&j->slots_lock);
}

/* ---- artifact ---- */

void wp_artifact_free(wp_artifact *a) {
    if (!a) return;
    free(a->cubin);
    free(a->ptx);
    free(a->log);
    free(a->lowered);
    free(a->source);
    memset(a, 0, sizeof *a);
    a->regs = a->spills = -1;
}

static size_t str_bytes(const char *s) { return s ? strlen(s) + 1 : 0; }

size_t wp_artifact_bytes(const wp_artifact *a) {
    return sizeof *a + a->cubin_len + str_bytes(a->ptx) + str_bytes(a->log) + str_bytes(a->lowered) +
           str_bytes(a->source);
}

/* ---- reading the template directory ---- */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int file_cmp(const void *a, const void *b) {
    return strcmp(((const jit_file *)a)->name, ((const jit_file *)b)->name);
}
static int template_cmp(const void *a, const void *b) {
    return strcmp(((const jit_template *)a)->file.name, ((const jit_template *)b)->file.name);
}

static int read_named(const char *path, const char *name, jit_file *out, wp_err *err) {
    out->text = wp_read_file(path, &out->len);
    if (!out->text)
        return WP_FAIL(err, 500, "templates_unreadable", "", "cannot read %.180s: %s", path, strerror(errno));
    out->name = strdup(name);
    if (!out->name) {
        free(out->text);
        out->text = NULL;
        return WP_FAIL(err, 500, "out_of_memory", "", "out of memory reading templates");
    }
    return 0;
}

static int read_templates_dir(wp_jit *j, wp_err *err) {
    DIR *d = opendir(j->templates_dir);
    if (!d)
        return WP_FAIL(err, 500, "templates_unreadable", "", "cannot open templates directory %.180s: %s",
                       j->templates_dir, strerror(errno));
    struct dirent *de;
    int rc = 0, has_abi_copy = 0;
    while (rc == 0 && (de = readdir(d))) {
        const char *name = de->d_name;
        int is_header = ends_with(name, ".cuh"), is_template = ends_with(name, ".cu");
        if (strcmp(name, JIT_ABI_HEADER) == 0) has_abi_copy = 1;
        if (!is_header && !is_template) continue;
        if ((is_header ? j->n_headers : j->n_templates) >= JIT_MAX_FILES - 1) {
            rc = WP_FAIL(err, 500, "templates_unreadable", "", "more than %d files in %.180s", JIT_MAX_FILES - 1,
                         j->templates_dir);
            break;
        }
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", j->templates_dir, name);
        rc = read_named(path, name, is_header ? &j->headers[j->n_headers] : &j->templates[j->n_templates].file, err);
        if (rc == 0 && is_header) j->n_headers++;
        if (rc == 0 && !is_header) j->n_templates++;
    }
    closedir(d);
    if (rc) return rc;

    /* wp_abi.h lives in kernels/ (the C side includes it too); an installed layout keeps a copy
     * next to the templates. The source tree's copy wins when both exist. */
    char path[4400];
    snprintf(path, sizeof path, "%s/../kernels/%s", j->templates_dir, JIT_ABI_HEADER);
    jit_file *abi = &j->headers[j->n_headers];
    if (read_named(path, JIT_ABI_HEADER, abi, NULL) == 0) {
        j->n_headers++;
    } else if (has_abi_copy) {
        snprintf(path, sizeof path, "%s/%s", j->templates_dir, JIT_ABI_HEADER);
        if (read_named(path, JIT_ABI_HEADER, abi, err)) return -1;
        j->n_headers++;
    } else {
        return WP_FAIL(err, 500, "templates_unreadable", "", "%s not found in %.150s/../kernels or the templates dir",
                       JIT_ABI_HEADER, j->templates_dir);
    }
    qsort(j->headers, (size_t)j->n_headers, sizeof j->headers[0], file_cmp);
    qsort(j->templates, (size_t)j->n_templates, sizeof j->templates[0], template_cmp);
    return 0;
}

static int find_header(const wp_jit *j, const char *name, size_t n) {
    for (int i = 0; i < j->n_headers; i++)
        if (strlen(j->headers[i].name) == n && memcmp(j->headers[i].name, name, n) == 0) return i;
    return -1;
}

/* Marks every header `text` includes ("x" or <x>), transitively. Includes that name none of our
 * headers (cuda_fp16.h) are the toolkit's, already covered by the NVRTC version in the key. An
 * include inside a disabled #if is still counted: a key that changes too often is harmless. */
static void mark_includes(const wp_jit *j, const char *text, uint8_t used[JIT_MAX_FILES]) {
    for (const char *p = text; (p = strstr(p, "#include")) != NULL;) {
        p += strlen("#include");
        while (*p == ' ' || *p == '\t') p++;
        char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
        if (!close) continue;
        const char *start = ++p, *end = strchr(start, close);
        const char *eol = strchr(start, '\n');
        if (!end || (eol && eol < end)) continue;
        int h = find_header(j, start, (size_t)(end - start));
        if (h >= 0 && !used[h]) {
            used[h] = 1;
            mark_includes(j, j->headers[h].text, used);
        }
        p = end;
    }
}

static void hash_field(wp_sha256_ctx *s, const void *data, size_t n) {
    uint64_t len = n;
    wp_sha256_update(s, &len, sizeof len); /* length-prefixed: no two field lists hash alike */
    wp_sha256_update(s, data, n);
}
static void hash_str(wp_sha256_ctx *s, const char *str) { hash_field(s, str, strlen(str)); }

static void fingerprint_templates(wp_jit *j) {
    for (int t = 0; t < j->n_templates; t++) {
        jit_template *tp = &j->templates[t];
        uint8_t used[JIT_MAX_FILES] = {0};
        mark_includes(j, tp->file.text, used);
        wp_sha256_ctx s;
        wp_sha256_init(&s);
        hash_str(&s, tp->file.name);
        hash_field(&s, tp->file.text, tp->file.len);
        for (int h = 0; h < j->n_headers; h++) /* in name order */
            if (used[h]) {
                hash_str(&s, j->headers[h].name);
                hash_field(&s, j->headers[h].text, j->headers[h].len);
            }
        wp_sha256_final(&s, tp->digest);
    }
}

static const jit_template *find_template(const wp_jit *j, const char *name) {
    for (int t = 0; t < j->n_templates; t++)
        if (strcmp(j->templates[t].file.name, name) == 0) return &j->templates[t];
    return NULL;
}

/* ---- open / close ---- */

wp_jit *wp_jit_open(const char *templates_dir, const char *cuda_include, wp_err *err) {
    wp_jit *j = calloc(1, sizeof *j);
    if (!j || !(j->templates_dir = strdup(templates_dir))) {
        free(j);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the compiler");
        return NULL;
    }
    pthread_mutex_init(&j->slots_lock, NULL);
    pthread_cond_init(&j->slot_free, NULL);
    if (!(j->memo = wp_jit_memo_open())) {
        wp_jit_close(j);
        WP_FAIL(err, 500, "out_of_memory", "", "out of memory opening the compiler");
        return NULL;
    }
    nvrtcResult r = nvrtcVersion(&j->major, &j->minor);
    if (r != NVRTC_SUCCESS) {
        WP_FAIL(err, 500, "nvrtc_unavailable", "", "nvrtcVersion: %s", nvrtcGetErrorString(r));
        wp_jit_close(j);
        return NULL;
    }
    if (read_templates_dir(j, err)) {
        wp_jit_close(j);
        return NULL;
    }
    for (int h = 0; h < j->n_headers; h++) {
        j->header_names[h] = j->headers[h].name;
        j->header_texts[h] = j->headers[h].text;
    }
    fingerprint_templates(j);

    snprintf(j->include_opt, sizeof j->include_opt, "-I%s", cuda_include);
    /* -Xptxas=-v puts "Used N registers" and spill counts in the log; --fmad=false keeps float
     * results identical to the emulator's; -default-device lets templates omit __device__; -minimal
     * (NVRTC 12.4+) leaves out the runtime API's types, textures and device launches, which no template
     * uses: the same cubins, 2-4 % less compile time for the prewarm set (bench/RESULTS.md). */
    const bool minimal = j->major > 12 || (j->major == 12 && j->minor >= 4);
    const char *fixed[] = {"-std=c++17",   "--fmad=false", "-default-device",
                           j->include_opt, "-Xptxas=-v",   minimal ? "-minimal" : NULL};
    j->n_fixed = minimal ? (int)WP_ARRAY_LEN(fixed) : (int)WP_ARRAY_LEN(fixed) - 1;
    _Static_assert(WP_ARRAY_LEN(fixed) <= JIT_MAX_OPTIONS, "fixed_opts holds them");
    size_t off = 0;
    for (int i = 0; i < j->n_fixed; i++) {
        j->fixed_opts[i] = fixed[i];
        int n = snprintf(j->options_text + off, sizeof j->options_text - off, "%s%s", i ? " " : "", fixed[i]);
        off += (size_t)n < sizeof j->options_text - off ? (size_t)n : 0;
    }
    return j;
}

void wp_jit_close(wp_jit *j) {
    if (!j) return;
    for (int h = 0; h < j->n_headers; h++) {
        free(j->headers[h].name);
        free(j->headers[h].text);
    }
    for (int t = 0; t < j->n_templates; t++) {
        free(j->templates[t].file.name);
        free(j->templates[t].file.text);
    }
    free(j->templates_dir);
    wp_jit_memo_close(j->memo);
    pthread_cond_destroy(&j->slot_free);
    pthread_mutex_destroy(&j->slots_lock);
    free(j);
}

void wp_jit_version(const wp_jit *j, int *major, int *minor) {
    if (major) *major = j->major;
    if (minor) *minor = j->minor;
}

const char *wp_jit_options_text(const wp_jit *j) { return j->options_text; }

/* ---- one compile's inputs ---- */

typedef struct {
    const jit_template *tmpl;
    char key_text[WP_SPEC_KEY_MAX];
    char name_expr[JIT_NAME_EXPR_MAX];
    char prelude[JIT_PRELUDE_MAX];
    char arch_opt[32];
    const char *opts[JIT_MAX_OPTIONS + 3]; /* -arch, the fixed ones, -DWP_NEED_FP16, -DWP_RESIDENT */
    int n_opts;
} jit_inputs;

static bool needs_fp16(wp_type t) { return t == WP_F16 || t == WP_BF16; }

static int jit_inputs_make(const wp_jit *j, const wp_spec *s, jit_inputs *in, wp_err *err) {
    if (!s->family || !s->family->template_file || !s->family->kernel)
        return WP_FAIL(err, 500, "bad_spec", "family", "spec has no family template");
    in->tmpl = find_template(j, s->family->template_file);
    if (!in->tmpl)
        return WP_FAIL(err, 500, "template_missing", "family", "template %s of family %s is not in %.150s",
                       s->family->template_file, s->family->name, j->templates_dir);
    if (wp_spec_key_text(s, in->key_text, sizeof in->key_text) < 0)
        return WP_FAIL(err, 500, "bad_spec", "", "spec key text too long");
    if (wp_spec_name_expr(s, in->name_expr, sizeof in->name_expr, in->prelude, sizeof in->prelude))
        return WP_FAIL(err, 500, "bad_spec", "", "cannot form the name expression of %s", in->key_text);
    if (s->arch[0] == 0 || strspn(s->arch, "smcompute_0123456789") != strlen(s->arch))
        return WP_FAIL(err, 500, "bad_spec", "arch", "bad target arch \"%.15s\"", s->arch);
    snprintf(in->arch_opt, sizeof in->arch_opt, "-arch=%s", s->arch);
    in->n_opts = 0;
    in->opts[in->n_opts++] = in->arch_opt;
    for (int i = 0; i < j->n_fixed; i++) in->opts[in->n_opts++] = j->fixed_opts[i];
    if (needs_fp16(s->type)) in->opts[in->n_opts++] = "-DWP_NEED_FP16";
    if (s->resident) in->opts[in->n_opts++] = "-DWP_RESIDENT"; /* templates/wp_resident.cuh */
    return 0;
}

/* Every field of the key, in order, into the hash s (each length-prefixed: hash_field). */
static void key_fields(const wp_jit *j, const jit_inputs *in, wp_sha256_ctx *s) {
    const int version[2] = {j->major, j->minor};
    const struct {
        const void *p;
        size_t n;
    } f[] = {{JIT_KEY_TAG, strlen(JIT_KEY_TAG)},
             {in->tmpl->digest, sizeof in->tmpl->digest},
             {in->key_text, strlen(in->key_text)},
             {in->prelude, strlen(in->prelude)},
             {in->name_expr, strlen(in->name_expr)},
             {in->arch_opt, strlen(in->arch_opt)},
             {version, sizeof version}};
    for (size_t i = 0; i < WP_ARRAY_LEN(f); i++) hash_field(s, f[i].p, f[i].n);
    for (int i = 0; i < in->n_opts; i++) hash_str(s, in->opts[i]);
}

static void jit_inputs_key(const wp_jit *j, const jit_inputs *in, uint8_t key[32]) {
    wp_sha256_ctx s;
    wp_sha256_init(&s);
    key_fields(j, in, &s);
    wp_sha256_final(&s, key);
}

int wp_jit_key(const wp_jit *j, const wp_spec *s, uint8_t key[32], char *key_text, size_t kn, wp_err *err) {
    char text[WP_JIT_MEMO_TEXT];
    const int len = wp_jit_memo_text(s, text, sizeof text);
    if (len > 0 && wp_jit_memo_get(j->memo, text, (size_t)len, key)) {
        if (key_text) wp_copy_cut(key_text, kn, text);
        return 0;
    }
    jit_inputs in;
    if (jit_inputs_make(j, s, &in, err)) return -1;
    jit_inputs_key(j, &in, key);
    if (len > 0) wp_jit_memo_put(j->memo, text, (size_t)len, key);
    if (key_text) wp_copy_cut(key_text, kn, in.key_text);
    return 0;
}

/* ---- the compile ---- */

/* ptxas -v reports per function: "Compiling entry function '<name>'", "... N bytes spill stores,
 * M bytes spill loads", "Used R registers". Reads the block of the entry `lowered` (the first
 * block when it is not found). spills = store bytes + load bytes. */
static void parse_ptxas_log(const char *log, const char *lowered, int *regs, int *spills) {
    *regs = *spills = -1;
    char marker[JIT_NAME_EXPR_MAX + 32];
    snprintf(marker, sizeof marker, "entry function '%s'", lowered);
    const char *block = strstr(log, marker);
    if (!block) block = log;
    const char *next = strstr(block + 1, "Compiling entry function");
    const char *u = strstr(block, "Used ");
    int n;
    if (u && (!next || u < next) && sscanf(u, "Used %d registers", &n) == 1) *regs = n;
    const char *sp = strstr(block, "bytes spill stores");
    if (sp && (!next || sp < next)) {
        const char *num = sp;
        while (num > block && num[-1] == ' ') num--;
        while (num > block && num[-1] >= '0' && num[-1] <= '9') num--;
        int stores = 0, loads = 0;
        if (sscanf(num, "%d bytes spill stores, %d bytes spill loads", &stores, &loads) >= 1) *spills = stores + loads;
    }
}

static char *program_log(nvrtcProgram prog) {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0) n = 1;
    char *log = calloc(1, n);
    if (log && n > 1 && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = 0;
    return log;
}

/* One line of the log for wp_err.msg: the first "error" line if any, else the start. */
static void log_excerpt(const char *log, char *out, size_t n) {
    const char *e = log ? strstr(log, "error") : NULL;
    if (e)
        while (e > log && e[-1] != '\n') e--;
    const char *from = e ? e : (log ? log : "");
    size_t len = strcspn(from, "\n");
    if (len >= n) len = n - 1;
    memcpy(out, from, len);
    out[len] = 0;
}

static char *concat3(const char *a, const char *b, const char *c, size_t c_len) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + c_len + 1);
    if (!s) return NULL;
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    memcpy(s + na + nb, c, c_len);
    s[na + nb + c_len] = 0;
    return s;
}

/* The program text (the template, then the prelude: an expression's functor, which can then use
 * whatever the template includes; name expressions are resolved at the end of the translation unit,
 * so the order is free otherwise) into *source, and what a user is shown of it into out->source. */
static int jit_source(const jit_inputs *in, char **source, wp_artifact *out) {
    char prelude_line[64] = "";
    if (in->prelude[0]) snprintf(prelude_line, sizeof prelude_line, "\n#line 1 \"op_prelude\"\n");
    *source = concat3(in->tmpl->file.text, prelude_line, in->prelude, strlen(in->prelude));
    char note[JIT_NAME_EXPR_MAX + 300];
    snprintf(note, sizeof note, "// templates/%s, then:\n", in->tmpl->file.name);
    char tail[JIT_NAME_EXPR_MAX + 64];
    snprintf(tail, sizeof tail, "%s// instantiated as %s\n", in->prelude[0] ? "\n" : "", in->name_expr);
    out->source = concat3(note, in->prelude, tail, strlen(tail));
    return *source && out->source ? 0 : -1;
}

/* NVRTC from the program text to out's log, cubin, PTX and lowered name. *prog is the caller's to
 * destroy; *step names the call that failed. */
static nvrtcResult jit_build(wp_jit *j, const jit_inputs *in, const char *source, nvrtcProgram *prog, wp_artifact *out,
                             const char **step) {
    *step = "nvrtcCreateProgram";
    nvrtcResult r =
        nvrtcCreateProgram(prog, source, in->tmpl->file.name, j->n_headers, j->header_texts, j->header_names);
    if (r == NVRTC_SUCCESS) {
        *step = "nvrtcAddNameExpression";
        r = nvrtcAddNameExpression(*prog, in->name_expr);
    }
    if (r == NVRTC_SUCCESS) {
        *step = "nvrtcCompileProgram";
        slot_take(j);
        r = nvrtcCompileProgram(*prog, in->n_opts, in->opts);
        slot_give(j);
        out->log = program_log(*prog);
    }
    const char *lowered = NULL;
    if (r == NVRTC_SUCCESS) {
        *step = "nvrtcGetLoweredName";
        r = nvrtcGetLoweredName(*prog, in->name_expr, &lowered); /* owned by prog */
    }
    if (r == NVRTC_SUCCESS) {
        *step = "nvrtcGetCUBIN";
        r = nvrtcGetCUBINSize(*prog, &out->cubin_len);
        if (r == NVRTC_SUCCESS && out->cubin_len == 0) r = NVRTC_ERROR_INVALID_PROGRAM; /* a virtual arch */
        if (r == NVRTC_SUCCESS && !(out->cubin = malloc(out->cubin_len))) r = NVRTC_ERROR_OUT_OF_MEMORY;
        if (r == NVRTC_SUCCESS) r = nvrtcGetCUBIN(*prog, (char *)out->cubin);
    }
    if (r == NVRTC_SUCCESS) {
        /* NVRTC keeps the PTX of a real-arch compile too; it is small, so always keep it. */
        size_t ptx_len = 0;
        if (nvrtcGetPTXSize(*prog, &ptx_len) == NVRTC_SUCCESS && ptx_len > 1 && (out->ptx = malloc(ptx_len)) &&
            nvrtcGetPTX(*prog, out->ptx) != NVRTC_SUCCESS) {
            free(out->ptx);
            out->ptx = NULL;
        }
        out->lowered = strdup(lowered);
        if (!out->log) out->log = strdup("");
        if (!out->lowered || !out->log) r = NVRTC_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

int wp_jit_compile(wp_jit *j, const wp_spec *s, wp_artifact *out, char **log_out, wp_err *err) {
    uint64_t t0 = wp_now_ns();
    memset(out, 0, sizeof *out);
    out->regs = out->spills = -1;
    if (log_out) *log_out = NULL;
    jit_inputs *in = malloc(sizeof *in);
    if (!in) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory compiling");
    if (jit_inputs_make(j, s, in, err)) {
        free(in);
        return -1;
    }
    char *source = NULL;
    if (jit_source(in, &source, out)) {
        free(source);
        free(in);
        wp_artifact_free(out);
        return WP_FAIL(err, 500, "out_of_memory", "", "out of memory compiling");
    }
    nvrtcProgram prog = NULL;
    const char *step = "";
    nvrtcResult r = jit_build(j, in, source, &prog, out, &step);
    int rc = 0;
    if (r != NVRTC_SUCCESS) {
        char excerpt[JIT_ERR_LOG_MAX];
        log_excerpt(out->log, excerpt, sizeof excerpt);
        rc = WP_FAIL(err, 500, "compile_failed", "", "%s %s: %s: %s", in->key_text, step, nvrtcGetErrorString(r),
                     excerpt);
        if (log_out) {
            *log_out = out->log ? out->log : strdup("");
            out->log = NULL;
        }
        wp_artifact_free(out);
    } else {
        parse_ptxas_log(out->log, out->lowered, &out->regs, &out->spills);
    }
    if (prog) nvrtcDestroyProgram(&prog);
    free(source);
    free(in);
    if (rc == 0) out->compile_ms = wp_ms_since(t0);
    return rc;
}

/* ---- many specs in one program ---- */

uint64_t wp_jit_group_id(const wp_jit *j, const wp_spec *s) {
    jit_inputs in;
    if (jit_inputs_make(j, s, &in, NULL) || in.prelude[0]) return 0;
    wp_sha256_ctx c;
    wp_sha256_init(&c);
    hash_str(&c, in.tmpl->file.name);
    for (int i = 0; i < in.n_opts; i++) hash_str(&c, in.opts[i]);
    uint8_t d[32];
    wp_sha256_final(&c, d);
    uint64_t id;
    memcpy(&id, d, sizeof id);
    return id ? id : 1;
}

/* Fills out from the compiled group program for the name expression of `in`. */
static nvrtcResult group_artifact(nvrtcProgram prog, const jit_inputs *in, const uint8_t *cubin, size_t cubin_len,
                                  const char *ptx, const char *log, wp_artifact *out) {
    const char *lowered = NULL;
    nvrtcResult r = nvrtcGetLoweredName(prog, in->name_expr, &lowered);
    if (r != NVRTC_SUCCESS) return r;
    char note[JIT_NAME_EXPR_MAX + 300];
    snprintf(note, sizeof note, "// templates/%s, then:\n// instantiated as %s\n", in->tmpl->file.name, in->name_expr);
    out->cubin = malloc(cubin_len);
    out->cubin_len = cubin_len;
    out->ptx = ptx ? strdup(ptx) : NULL;
    out->log = strdup(log ? log : "");
    out->lowered = strdup(lowered);
    out->source = strdup(note);
    if (!out->cubin || !out->log || !out->lowered || !out->source || (ptx && !out->ptx))
        return NVRTC_ERROR_OUT_OF_MEMORY;
    memcpy(out->cubin, cubin, cubin_len);
    parse_ptxas_log(out->log, out->lowered, &out->regs, &out->spills);
    return NVRTC_SUCCESS;
}

int wp_jit_compile_group(wp_jit *j, const wp_spec *const *specs, int n, wp_artifact *outs, wp_err *err) {
    uint64_t t0 = wp_now_ns();
    jit_inputs *in = calloc((size_t)n, sizeof *in);
    if (!in) return WP_FAIL(err, 500, "out_of_memory", "", "out of memory compiling");
    uint64_t group = n > 0 ? wp_jit_group_id(j, specs[0]) : 0;
    int rc = group ? 0 : WP_FAIL(err, 500, "bad_group", "", "these specs cannot share a program");
    for (int i = 0; rc == 0 && i < n; i++) {
        memset(&outs[i], 0, sizeof outs[i]);
        outs[i].regs = outs[i].spills = -1;
        if (jit_inputs_make(j, specs[i], &in[i], err) || wp_jit_group_id(j, specs[i]) != group)
            rc = WP_FAIL(err, 500, "bad_group", "", "these specs cannot share a program");
    }
    nvrtcProgram prog = NULL;
    nvrtcResult r = rc ? NVRTC_ERROR_INVALID_INPUT
                       : nvrtcCreateProgram(&prog, in[0].tmpl->file.text, in[0].tmpl->file.name, j->n_headers,
                                            j->header_texts, j->header_names);
    for (int i = 0; r == NVRTC_SUCCESS && i < n; i++) r = nvrtcAddNameExpression(prog, in[i].name_expr);
    if (r == NVRTC_SUCCESS) {
        slot_take(j);
        r = nvrtcCompileProgram(prog, in[0].n_opts, in[0].opts);
        slot_give(j);
    }
    char *log = prog ? program_log(prog) : NULL, *ptx = NULL;
    uint8_t *cubin = NULL;
    size_t cubin_len = 0, ptx_len = 0;
    if (r == NVRTC_SUCCESS) r = nvrtcGetCUBINSize(prog, &cubin_len);
    if (r == NVRTC_SUCCESS && (cubin_len == 0 || !(cubin = malloc(cubin_len)))) r = NVRTC_ERROR_OUT_OF_MEMORY;
    if (r == NVRTC_SUCCESS) r = nvrtcGetCUBIN(prog, (char *)cubin);
    if (r == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &ptx_len) == NVRTC_SUCCESS && ptx_len > 1 &&
        (ptx = malloc(ptx_len)) && nvrtcGetPTX(prog, ptx) != NVRTC_SUCCESS) {
        free(ptx);
        ptx = NULL;
    }
    double ms = wp_ms_since(t0);
    for (int i = 0; r == NVRTC_SUCCESS && i < n; i++) {
        r = group_artifact(prog, &in[i], cubin, cubin_len, ptx, log, &outs[i]);
        outs[i].compile_ms = ms;
    }
    if (r != NVRTC_SUCCESS) {
        for (int i = 0; i < n; i++) wp_artifact_free(&outs[i]);
        if (rc == 0) {
            char excerpt[JIT_ERR_LOG_MAX];
            log_excerpt(log, excerpt, sizeof excerpt);
            rc = WP_FAIL(err, 500, "compile_failed", "", "a group of %d: %s: %s", n, nvrtcGetErrorString(r), excerpt);
        }
    }
    if (prog) nvrtcDestroyProgram(&prog);
    free(log);
    free(ptx);
    free(cubin);
    free(in);
    return rc;
}
