/* jit.h — NVRTC: turns a spec into a cubin. Loads the template texts once, instantiates the C++
 * template through nvrtcAddNameExpression/nvrtcGetLoweredName, compiles with fixed options, and
 * reports log, PTX, registers and spills. Also computes the cache key, since it knows everything
 * that goes into a compile. Thread-safe: many compiles may run at once. */
#ifndef WP_JIT_H
#define WP_JIT_H

#include "kernels/spec.h"
#include "util/common.h"

/* Where the templates and the CUDA toolkit are when nothing says otherwise: the Makefile passes the
 * checkout's absolute templates path and its CUDA_HOME to every build; these are for anything else. */
#ifndef WP_DEFAULT_TEMPLATES
#define WP_DEFAULT_TEMPLATES "templates"
#endif
#ifndef WP_DEFAULT_CUDA_HOME
#define WP_DEFAULT_CUDA_HOME "/usr/local/cuda"
#endif

typedef struct wp_jit wp_jit;

/* What a compile makes; everything the disk store keeps. */
typedef struct {
    uint8_t *cubin;
    size_t cubin_len;
    char *ptx;        /* NUL-terminated; may be NULL */
    char *log;        /* NUL-terminated NVRTC log (with ptxas -v lines); never NULL after success */
    char *lowered;    /* mangled kernel name to look up in the module */
    char *source;     /* what was compiled: template file note + prelude + instantiation note; may be NULL */
    int regs, spills; /* from ptxas -v (spills = spill store + spill load bytes); -1 when unknown */
    double compile_ms;
} wp_artifact;

void wp_artifact_free(wp_artifact *a);
size_t wp_artifact_bytes(const wp_artifact *a); /* for the memory cap */

/* templates_dir holds *.cu and *.cuh; cuda_include is $CUDA_HOME/include (for cuda_fp16.h). */
wp_jit *wp_jit_open(const char *templates_dir, const char *cuda_include, wp_err *err);
void wp_jit_close(wp_jit *j);
void wp_jit_version(const wp_jit *j, int *major, int *minor);
/* At most n NVRTC programs (wp_jit_compile, wp_jit_compile_group) compile at once in this process;
 * further compiles wait for a slot. 0 (the default): no limit. Any thread. */
void wp_jit_set_parallel(wp_jit *j, int n);
/* NVRTC programs compiling now, and the most that ever compiled at once. Any thread. */
void wp_jit_compiling(wp_jit *j, int *now, int *most);
const char *wp_jit_options_text(const wp_jit *j); /* the fixed options, space separated */

/* key = sha256("warpd-jit-1", the family's template and every header it includes (transitively),
 * canonical spec text, operator prelude, name expression, arch, NVRTC version, options). key_text
 * gets the canonical spec text. Cheap (microseconds): template texts are fingerprinted at open. */
int wp_jit_key(const wp_jit *j, const wp_spec *s, uint8_t key[32], char *key_text, size_t kn, wp_err *err);

/* Compiles the family's template followed by the prelude of wp_spec_name_expr (after, not before:
 * an expression functor uses wp_ops.cuh helpers the template includes). A failure here is our bug:
 * 500 "compile_failed" with the start of the NVRTC log in the message and, if log_out is non-NULL,
 * the whole log (malloc'd; *log_out is NULL on success, where the log is out->log). NVRTC keeps
 * the PTX of a real -arch compile too, so out->ptx is filled without a second compile. */
int wp_jit_compile(wp_jit *j, const wp_spec *s, wp_artifact *out, char **log_out, wp_err *err);

/* Many specs as one NVRTC program, one name expression each: a cold set compiles faster this way
 * (the template and its headers are parsed once; bench/compile/bench_prewarm.c measures it). Specs can share
 * a program when wp_jit_group_id gives them the same nonzero id (same template and options, no
 * operator prelude). Each outs[i] gets the whole cubin (it holds every kernel of the program), its
 * own lowered name, registers and spills, and the program's compile time. -1 with err when the
 * specs cannot share a program or it fails: the caller compiles them one by one. */
uint64_t wp_jit_group_id(const wp_jit *j, const wp_spec *s);
int wp_jit_compile_group(wp_jit *j, const wp_spec *const *specs, int n, wp_artifact *outs, wp_err *err);

#endif
