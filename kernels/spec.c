/* spec.c — parse, validate and print a spec: the compile-time identity of a kernel (family, type,
 * width, member mask, operator, arch). The family's row (kernels/families.c) says what is allowed. */
#include "spec.h"

#include "data.h"
#include "stats.h"
#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1..32; 64 only where the family's row allows it (WP_W_64: AMD wave64, emulator only). */
static bool is_pow2_width(double w) { return w == 1 || w == 2 || w == 4 || w == 8 || w == 16 || w == 32 || w == 64; }
/* A width a request may name for family f: a power of two (checked against the row later), or, where
 * the row takes any width (WP_W_ANY), every integer 1..32. */
static bool width_in_json_range(const wp_family *f, double w) {
    if ((f->widths & WP_W_ANY) && w >= 1 && w <= WP_W_ANY_MAX && w == (double)(int)w) return true;
    return is_pow2_width(w);
}
static int log2i(int w) {
    int l = 0;
    while ((1 << l) < w) l++;
    return l;
}

int wp_mask_from_json(const cJSON *v, const char *field, uint32_t *out, wp_err *err) {
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d < 0 || d > 4294967295.0 || d != (double)(uint64_t)d)
            return WP_FAIL(err, 400, "bad_mask", field, "%s must be a 32-bit unsigned integer", field);
        *out = (uint32_t)d;
        return 0;
    }
    if (!cJSON_IsString(v))
        return WP_FAIL(err, 400, "bad_mask", field, "%s must be a hex string like \"0xffffffff\" or a number", field);
    const char *s = v->valuestring;
    const char *hex = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? s + 2 : s;
    size_t n = strlen(hex);
    if (n == 0 || n > 8 || strspn(hex, "0123456789abcdefABCDEF") != n)
        return WP_FAIL(err, 400, "bad_mask", field, "%s \"%.40s\" is not a 32-bit hex mask (up to 8 hex digits)", field,
                       s);
    *out = (uint32_t)strtoul(hex, NULL, 16);
    return 0;
}

static int first_type(uint32_t types) {
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        if (types & WP_TBIT(t)) return t;
    return -1;
}

static int validate_data(wp_spec *s, wp_err *err);

/* The key, name expression and prelude fit jit.c's buffers: only a long operator can make them not fit
 * (its canonical text and C++ may be longer than what the client wrote). */
static int fits_compiler(const wp_spec *s, wp_err *err) {
    char key[WP_SPEC_KEY_MAX];
    bool fits = wp_spec_key_text(s, key, sizeof key) >= 0;
    const bool map = s->family->flags & WP_F_DATA && s->data.map.expr;
    if (fits && (((s->family->flags & WP_F_OP) && s->op.kind == WP_OP_EXPR) || map) && s->family->template_file) {
        char name[WP_SPEC_NAME_MAX], *prelude = malloc(WP_SPEC_PRELUDE_MAX);
        if (!prelude) return WP_FAIL(err, 500, "no_memory", "op", "out of memory");
        fits = wp_spec_name_expr(s, name, sizeof name, prelude, WP_SPEC_PRELUDE_MAX) == 0;
        free(prelude);
    }
    if (fits) return 0;
    if (map)
        return WP_FAIL(err, 400, "bad_map", "map", "map and operator too long once written out (map: %.40s...)",
                       s->data.map.text);
    return WP_FAIL(err, 400, "bad_op", "op", "operator too long once written out (%zu characters canonical: %.40s...)",
                   strlen(s->op.text), s->op.text);
}

int wp_spec_validate(wp_spec *s, wp_err *err) {
    const wp_family *f = s->family;
    if (!(f->types & WP_TBIT(s->type))) {
        char allowed[128] = "";
        for (int t = 0; t < WP_TYPE_COUNT; t++)
            if (f->types & WP_TBIT(t)) {
                strcat(allowed, allowed[0] ? ", " : "");
                strcat(allowed, wp_type_name((wp_type)t));
            }
        return WP_FAIL(err, 400, "type_not_allowed", "type", "type %s is not allowed for family %s (allowed: %s)",
                       wp_type_name(s->type), f->name, allowed);
    }
    if ((f->widths & WP_W_ANY) && s->width >= 1 && s->width <= WP_W_ANY_MAX) {
        /* any width 1..32 (CUB's logical warps) */
    } else if ((f->widths & WP_W_ANY) && !is_pow2_width(s->width)) {
        return WP_FAIL(err, 400, "bad_width", "width", "width %d is not an integer 1..%d", s->width, WP_W_ANY_MAX);
    } else if (!is_pow2_width(s->width)) {
        return WP_FAIL(err, 400, "bad_width", "width", "width %d is not a power of two 1..32", s->width);
    } else if (!(f->widths & (1u << log2i(s->width))))
        return WP_FAIL(err, 400, "bad_width", "width", "width %d is not allowed for family %s", s->width, f->name);
    if ((f->flags & WP_F_NO_MASK) && s->mask != 0xffffffffu)
        return WP_FAIL(err, 400, "bad_mask", "mask", "family %s takes no member mask: mask must be 0xffffffff",
                       f->name);
    if (f->flags & WP_F_OP) {
        if (!(f->ops & WP_OPBIT(s->op.kind)))
            return WP_FAIL(err, 400, "op_not_allowed", "op", "op %s is not allowed for family %s", s->op.text, f->name);
    }
    if ((f->flags & WP_F_DATA) && validate_data(s, err)) return -1;
    return fits_compiler(s, err);
}

static bool redux_op(wp_op_kind k) { return k != WP_OP_PROD && k != WP_OP_EXPR; }

/* A statistic (kernels/stats.h): its family runs it, by a tree (its accumulator has no atomics and
 * its partials fill the grid's partial slots: no gmem tree after them); it always accumulates in
 * double, so "accumulate" does not apply. */
static int stats_check(wp_spec *s, wp_err *err) {
    wp_data_spec *d = &s->data;
    if (!(s->family->flags & WP_F_STATS) || d->stat <= WP_STAT_NONE || d->stat >= WP_STAT_KINDS)
        return WP_FAIL(err, 400, "op_not_allowed", "op", "family %s runs no statistic", s->family->name);
    if (d->strategy != WP_STRAT_SHFL_DOWN && d->strategy != WP_STRAT_SHFL_XOR && d->strategy != WP_STRAT_SMEM)
        return WP_FAIL(err, 400, "strategy_not_allowed", "strategy",
                       "op %s runs with strategy shfl_down, shfl_xor or smem (not %s)", wp_stat_name(d->stat),
                       wp_strategy_name(d->strategy));
    d->native = false;
    return 0;
}

/* The data-family fields: strategy (resolved from auto), block, accumulate, exclusive, radius. */
static int validate_data(wp_spec *s, wp_err *err) {
    const wp_family *f = s->family;
    wp_data_spec *d = &s->data;
    if (s->mask != 0xffffffffu) return WP_FAIL(err, 400, "bad_mask", "mask", "family %s takes no member mask", f->name);
    if (d->map.expr && !(f->flags & WP_F_MAP))
        return WP_FAIL(err, 400, "unknown_field", "map", "family %s takes no map", f->name);
    if (!(f->flags & WP_F_WIDTH_GROUP) && s->width != 32)
        return WP_FAIL(err, 400, "bad_width", "width", "family %s takes no width", f->name);
    if (d->strategy == WP_STRAT_AUTO) d->strategy = f->strategy_default;
    if (d->strategy <= 0 || d->strategy >= WP_STRAT_COUNT || !(f->strategies & WP_STRATBIT(d->strategy))) {
        char allowed[128] = "";
        for (int k = 1; k < WP_STRAT_COUNT; k++)
            if (f->strategies & WP_STRATBIT(k)) {
                strcat(allowed, allowed[0] ? ", " : "");
                strcat(allowed, wp_strategy_name(k));
            }
        return WP_FAIL(err, 400, "strategy_not_allowed", "strategy",
                       "strategy %s is not allowed for family %s (allowed: auto, %s)", wp_strategy_name(d->strategy),
                       f->name, allowed);
    }
    if (d->strategy == WP_STRAT_REDUX && (!(WP_T_32 & WP_TBIT(s->type)) || !redux_op(s->op.kind)))
        return WP_FAIL(err, 400, "strategy_not_allowed", "strategy",
                       "strategy redux needs i32 or u32 and one of sum min max and or xor");
    if (d->strategy == WP_STRAT_SHFL_XOR && (s->width & (s->width - 1)))
        return WP_FAIL(err, 400, "strategy_not_allowed", "strategy",
                       "strategy shfl_xor needs a power-of-two width (a lane's xor partner leaves a group of %d); "
                       "shfl_down, smem, gmem, redux and atomic take any width",
                       s->width);
    if (d->strategy == WP_STRAT_ATOMIC && s->op.kind == WP_OP_EXPR)
        return WP_FAIL(err, 400, "strategy_not_allowed", "strategy",
                       "strategy atomic needs a builtin operator (an expression has no identity to start from)");
    if (d->stat && stats_check(s, err)) return -1;
    if (d->block == 0) {
        d->block = f->block_default;
        d->block_auto = true;
    }
    if ((f->flags & WP_F_BLOCK_GROUP) && (d->block < 1 || d->block > WP_GROUP_BLOCK_MAX))
        return WP_FAIL(err, 400, "bad_block", "block", "block %d is not an integer 1..%d (the group size of %s)",
                       d->block, WP_GROUP_BLOCK_MAX, f->name);
    if (!(f->flags & WP_F_BLOCK_GROUP) && (d->block < 32 || d->block > 1024 || (d->block & (d->block - 1))))
        return WP_FAIL(err, 400, "bad_block", "block", "block %d is not a power of two 32..1024", d->block);
    if (!(f->flags & WP_F_ACCUM) || (s->type != WP_F16 && s->type != WP_BF16)) d->native = false;
    if (!(f->flags & WP_F_SCAN)) d->exclusive = false;
    if (f->flags & WP_F_RADIUS) {
        if (d->radius == 0) d->radius = 1;
        if (d->radius < 1 || d->radius > WP_STENCIL_MAX_RADIUS)
            return WP_FAIL(err, 400, "bad_radius", "radius", "radius %d is not in 1..%d", d->radius,
                           WP_STENCIL_MAX_RADIUS);
    } else {
        d->radius = 0;
    }
    if (!(f->flags & WP_F_KEYS))
        d->keys = 0;
    else if (!wp_type_is_int(d->keys))
        return WP_FAIL(err, 400, "bad_type", "keys.type", "keys must be of an integer type (i32 u32 i64 u64), not %s",
                       wp_type_name(d->keys));
    return 0;
}

/* "keys": {"type": T, ...} of a WP_F_KEYS family (i32 when absent: /v1/compile, prewarm; /v1/reduce
 * asks for keys itself). */
static int keys_from_json(const cJSON *obj, wp_data_spec *d, wp_err *err) {
    d->keys = WP_I32;
    const cJSON *keys = wp_json_get(obj, "keys");
    if (!keys) return 0;
    if (!cJSON_IsObject(keys))
        return WP_FAIL(err, 400, "wrong_type", "keys",
                       "keys must be an object: {\"type\", \"data\"}, {\"type\", \"data_b64\"}, {\"buffer\"} or "
                       "{\"shm\"}");
    const cJSON *ty = wp_json_get(keys, "type");
    if (!ty) return 0;
    const int t = cJSON_IsString(ty) ? wp_type_parse(ty->valuestring) : -1;
    if (t < 0 || !wp_type_is_int((wp_type)t))
        return WP_FAIL(err, 400, "bad_type", "keys.type", "keys.type must be an integer type: i32 u32 i64 u64");
    d->keys = (wp_type)t;
    return 0;
}

/* d is a whole number an int holds (checked before the cast, which is undefined outside int's range). */
static bool is_int(double d) { return d > -2147483649.0 && d < 2147483648.0 && d == (double)(int)d; }

int wp_spec_data_from_json(const cJSON *obj, wp_spec *out, wp_err *err) {
    wp_data_spec *d = &out->data;
    d->strategy = WP_STRAT_AUTO;
    const cJSON *v = wp_json_get(obj, "strategy");
    if (v) {
        if (!cJSON_IsString(v)) return WP_FAIL(err, 400, "wrong_type", "strategy", "strategy must be a string");
        d->strategy = wp_strategy_parse(v->valuestring);
        if (d->strategy == -2)
            return WP_FAIL(err, 400, "unknown_strategy", "strategy",
                           "unknown strategy \"%.40s\" (auto gmem smem shfl_xor shfl_down redux atomic shfl_up)",
                           v->valuestring);
    }
    v = wp_json_get(obj, "block");
    if (v) {
        if (!cJSON_IsNumber(v) || !is_int(v->valuedouble))
            return WP_FAIL(err, 400, "bad_block", "block",
                           "block must be a power of two 32..1024 (block_reduce, block_scan: an integer 1..1024)");
        d->block = (int)v->valuedouble;
        if (d->block <= 0)
            return WP_FAIL(err, 400, "bad_block", "block",
                           "block must be a power of two 32..1024 (block_reduce, block_scan: an integer 1..1024)");
    }
    v = wp_json_get(obj, "accumulate");
    if (v) {
        if (!cJSON_IsString(v) || (strcmp(v->valuestring, "f32") && strcmp(v->valuestring, "native")))
            return WP_FAIL(err, 400, "bad_value", "accumulate", "accumulate must be \"f32\" or \"native\"");
        d->native = !strcmp(v->valuestring, "native");
    }
    const cJSON *ex = wp_json_get(obj, "exclusive");
    const cJSON *in = wp_json_get(obj, "inclusive");
    if (ex && !cJSON_IsBool(ex)) return WP_FAIL(err, 400, "wrong_type", "exclusive", "exclusive must be true or false");
    if (in && !cJSON_IsBool(in)) return WP_FAIL(err, 400, "wrong_type", "inclusive", "inclusive must be true or false");
    if (ex && in && cJSON_IsTrue(ex) == cJSON_IsTrue(in))
        return WP_FAIL(err, 400, "bad_value", "exclusive", "exclusive and inclusive contradict each other");
    d->exclusive = ex ? cJSON_IsTrue(ex) : in ? !cJSON_IsTrue(in) : false;
    v = wp_json_get(obj, "radius");
    if (v) {
        if (!cJSON_IsNumber(v) || !is_int(v->valuedouble) || v->valuedouble < 1 ||
            v->valuedouble > WP_STENCIL_MAX_RADIUS)
            return WP_FAIL(err, 400, "bad_radius", "radius", "radius must be an integer 1..%d", WP_STENCIL_MAX_RADIUS);
        d->radius = (int)v->valuedouble;
    }
    if (out->family->flags & WP_F_KEYS) return keys_from_json(obj, d, err);
    if (wp_json_get(obj, "keys")) return WP_FAIL(err, 400, "unknown_field", "keys", "only reduce_by_key takes keys");
    return 0;
}

/* "map" (WP_F_MAP families): an expression over x and y (whether the request has the second input that
 * y reads is the endpoint's business); "op": "dot" sets it to x*y. */
static int spec_map_from_json(const cJSON *obj, bool dot, wp_spec *out, wp_err *err) {
    const cJSON *v = wp_json_get(obj, "map");
    if (v && !(out->family->flags & WP_F_MAP))
        return WP_FAIL(err, 400, "unknown_field", "map", "family %s takes no map", out->family->name);
    if (v && dot) return WP_FAIL(err, 400, "bad_map", "map", "op dot is the map x*y with op sum: give map or dot");
    if (v && !cJSON_IsString(v)) return WP_FAIL(err, 400, "wrong_type", "map", "map must be a string");
    if (v && out->data.stat) /* the stats kernels read the elements themselves (templates/stats.cuh) */
        return WP_FAIL(err, 400, "bad_map", "map", "op %s takes no map", out->op.text);
    if (!v && !dot) return 0;
    if (wp_map_parse(v ? v->valuestring : "x*y", out->type, true, "map", &out->data.map, err)) return -1;
    out->data.map_y = wp_map_uses_y(&out->data.map);
    return 0;
}

int wp_spec_from_json(const cJSON *obj, const char *arch, wp_spec *out, wp_err *err) {
    return wp_spec_from_json_or(obj, NULL, NULL, arch, out, err);
}

/* A string member's text in *out, or dflt when there is none: 0, or -1 with err for a member that is
 * not a string. */
static int string_or(const cJSON *obj, const char *key, const char *dflt, const char **out, wp_err *err) {
    const cJSON *v = wp_json_get(obj, key);
    *out = NULL;
    if (v && !cJSON_IsString(v)) return WP_FAIL(err, 400, "wrong_type", key, "%s must be a string", key);
    *out = v ? v->valuestring : dflt;
    return 0;
}

int wp_spec_from_json_or(const cJSON *obj, const char *family, const char *type, const char *arch, wp_spec *out,
                         wp_err *err) {
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(obj)) return WP_FAIL(err, 400, "bad_request", "", "the body must be a JSON object");
    const char *fam, *ty;
    if (string_or(obj, "family", family, &fam, err)) return -1;
    if (!fam) return WP_FAIL(err, 400, "missing_field", "family", "family is required");
    out->family = wp_family_find(fam);
    if (!out->family)
        return WP_FAIL(err, 400, "unknown_family", "family", "unknown family \"%.60s\" (GET /v1/families lists them)",
                       fam);
    const wp_family *f = out->family;

    if (string_or(obj, "type", type, &ty, err)) return -1;
    if (ty) {
        int t = wp_type_parse(ty);
        if (t < 0)
            return WP_FAIL(err, 400, "unknown_type", "type",
                           "unknown type \"%.40s\" (i32 u32 i64 u64 f32 f64 f16 bf16)", ty);
        out->type = (wp_type)t;
    } else {
        out->type = (wp_type)first_type(f->types);
    }

    out->width = 32;
    const cJSON *w = wp_json_get(obj, "width");
    if (w) {
        if (!cJSON_IsNumber(w)) return WP_FAIL(err, 400, "wrong_type", "width", "width must be a number");
        if (!width_in_json_range(f, w->valuedouble)) {
            if (f->widths & WP_W_ANY)
                return WP_FAIL(err, 400, "bad_width", "width", "width %g is not an integer 1..%d", w->valuedouble,
                               WP_W_ANY_MAX);
            return WP_FAIL(err, 400, "bad_width", "width", "width %g is not a power of two 1..32", w->valuedouble);
        }
        out->width = (int)w->valuedouble;
    }

    out->mask = 0xffffffffu;
    const cJSON *m = wp_json_get(obj, "mask");
    if (m && wp_mask_from_json(m, "mask", &out->mask, err)) return -1;

    const cJSON *op = wp_json_get(obj, "op");
    bool dot = false; /* "op": "dot" is map x*y, op sum */
    if (f->flags & WP_F_OP) {
        const char *text = "sum";
        if (op) {
            if (!cJSON_IsString(op)) return WP_FAIL(err, 400, "wrong_type", "op", "op must be a string");
            text = op->valuestring;
        }
        if ((f->flags & WP_F_MAP) && !strcmp(text, "dot")) {
            dot = true;
            text = "sum";
        }
        if ((f->flags & WP_F_STATS) && (out->data.stat = wp_stat_parse(text)) != WP_STAT_NONE) {
            /* a statistic: the operator slot holds its name (the stats kernels take no functor) */
            if (wp_op_parse("sum", out->type, "op", &out->op, err)) return -1;
            snprintf(out->op.text, sizeof out->op.text, "%s", text);
        } else if (wp_op_parse(text, out->type, "op", &out->op, err)) {
            return -1;
        }
    } else if (op) {
        return WP_FAIL(err, 400, "unknown_field", "op", "family %s takes no op", f->name);
    }
    wp_copy_cut(out->arch, sizeof out->arch, arch);
    if ((f->flags & WP_F_DATA) && (wp_spec_data_from_json(obj, out, err) || spec_map_from_json(obj, dot, out, err))) {
        wp_spec_free(out);
        return -1;
    }
    if (wp_spec_validate(out, err)) {
        wp_spec_free(out);
        return -1;
    }
    return 0;
}

void wp_spec_free(wp_spec *s) {
    if (s && s->family && (s->family->flags & WP_F_OP)) {
        wp_op_free(&s->op);
        s->op.expr = NULL;
    }
    if (s && s->data.map.expr) wp_op_free(&s->data.map);
}

int wp_spec_copy(wp_spec *dst, const wp_spec *src) {
    *dst = *src;
    dst->op.expr = NULL;
    dst->data.map.expr = NULL;
    if (src->data.map.expr && wp_op_copy(&dst->data.map, &src->data.map)) return -1;
    if (src->family && (src->family->flags & WP_F_OP) && wp_op_copy(&dst->op, &src->op)) {
        if (dst->data.map.expr) wp_op_free(&dst->data.map); /* nothing of dst is left to free on failure */
        dst->data.map.expr = NULL;
        return -1;
    }
    return 0;
}

/* The key text's appender: every job's key is built this way, and snprintf cost several µs a job.
 * key_put* append to k->buf while it fits; k->len counts every byte, so an overflow shows at the end. */
typedef struct {
    char *buf;
    size_t n, len;
} key_buf;
static void key_put(key_buf *k, const char *str) {
    for (; *str; str++, k->len++)
        if (k->len + 1 < k->n) k->buf[k->len] = *str;
}
static void key_int(key_buf *k, long long v) {
    char digits[24];
    int i = (int)sizeof digits;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    digits[--i] = 0;
    do digits[--i] = (char)('0' + u % 10);
    while ((u /= 10) && i > 1);
    if (v < 0) digits[--i] = '-';
    key_put(k, digits + i);
}
static void key_hex8(key_buf *k, uint32_t v) { /* 0x%08x */
    char hex[11] = "0x";
    for (int i = 0; i < 8; i++) hex[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    hex[10] = 0;
    key_put(k, hex);
}
static int key_end(key_buf *k) {
    if (k->n) k->buf[k->len + 1 < k->n ? k->len : k->n - 1] = 0;
    return k->len + 1 > k->n ? -1 : (int)k->len;
}

/* device_reduce/f16/op=sum/shfl_down/b256/acc=native/sm_90: what a data kernel bakes in (the kernel's
 * type: an i32 sum names u32, wp_data_kernel_type). */
static int data_key_text(const wp_spec *s, char *buf, size_t n) {
    const wp_family *f = s->family;
    key_buf k = {buf, n, 0};
    key_put(&k, f->name);
    key_put(&k, "/");
    key_put(&k, wp_type_name(wp_data_kernel_type(s)));
    if (f->flags & WP_F_WIDTH_GROUP) {
        key_put(&k, "/w");
        key_int(&k, s->width);
    }
    if (f->flags & WP_F_OP) { /* a statistic: its accumulator's name (mean, var and std share one kernel) */
        key_put(&k, "/op=");
        key_put(&k, s->data.stat ? wp_stat_acc_name(wp_stat_acc(s->data.stat)) : s->op.text);
    }
    if (s->data.map.expr) {
        key_put(&k, "/map=");
        key_put(&k, s->data.map.text);
    }
    key_put(&k, "/");
    key_put(&k, wp_strategy_name(s->data.strategy));
    key_put(&k, "/b");
    key_int(&k, s->data.block);
    if (s->data.native) key_put(&k, "/acc=native");
    if (f->flags & WP_F_KEYS) {
        key_put(&k, "/k");
        key_int(&k, 8 * (int)wp_type_size(s->data.keys));
    } else if (f->flags & WP_F_RADIUS) {
        key_put(&k, "/r");
        key_int(&k, s->data.radius);
    } else if (f->flags & WP_F_SCAN) {
        key_put(&k, s->data.exclusive ? "/exclusive" : "/inclusive");
    }
    key_put(&k, "/");
    key_put(&k, s->arch);
    if (s->data.batched) key_put(&k, "/batch");
    if (s->resident) key_put(&k, "/resident");
    return key_end(&k);
}

/* kernel<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op>: one shape for every data kernel. */
static int data_name_expr(const wp_spec *s, char *buf, size_t n, char *prelude, size_t pn) {
    const wp_family *f = s->family;
    const wp_type t = wp_data_kernel_type(s), acc_spec = wp_data_acc_type(s); /* i32 sum: the u32 kernel */
    const wp_type acc = acc_spec == s->type ? t : acc_spec;
    char op_type[128];
    if (f->flags & WP_F_OP) {
        if (wp_op_cxx(&s->op, acc, op_type, sizeof op_type, prelude, pn)) return -1;
    } else {
        snprintf(op_type, sizeof op_type, "wp_op_sum<%s>", wp_type_cxx(acc));
    }
    if (s->data.map.expr) { /* Op = wp_mapped<op, wp_map_expr> (templates/wp_map.cuh) */
        if (!pn) return -1;
        char plain[sizeof op_type];
        memcpy(plain, op_type, sizeof plain);
        size_t used = strlen(prelude);
        if (snprintf(op_type, sizeof op_type, "wp_mapped<%s, wp_map_expr>", plain) >= (int)sizeof op_type ||
            wp_map_cxx(&s->data.map, prelude + used, pn - used))
            return -1;
    }
    int variant = (f->flags & WP_F_SCAN)   ? s->data.exclusive
                  : (f->flags & WP_F_KEYS) ? (int)wp_type_size(s->data.keys) /* KEYBYTES */
                                           : s->data.radius;
    const char *kernel = f->kernel;
    if (s->data.stat) { /* templates/stats.cuh: the accumulator is the variant */
        kernel = "wp_device_stats";
        variant = wp_stat_acc(s->data.stat);
    }
    int len = snprintf(buf, n, "%s%s<%s, %s, %d, %d, %d, %d, %s >", kernel, s->data.batched ? "_batch" : "",
                       wp_type_cxx(t), wp_type_cxx(acc), s->width, s->data.block, s->data.strategy, variant, op_type);
    return (len < 0 || (size_t)len >= n) ? -1 : 0;
}

int wp_spec_key_text(const wp_spec *s, char *buf, size_t n) {
    if (s->family->flags & WP_F_DATA) return data_key_text(s, buf, n);
    key_buf k = {buf, n, 0}; /* shfl_xor/i32/w32/m0xffffffff[/op=sum]/sm_90 */
    key_put(&k, s->family->name);
    key_put(&k, "/");
    key_put(&k, wp_type_name(s->type));
    key_put(&k, "/w");
    key_int(&k, s->width);
    key_put(&k, "/m");
    key_hex8(&k, s->mask);
    if (s->family->flags & WP_F_OP) {
        key_put(&k, "/op=");
        key_put(&k, s->op.text);
    }
    if (s->resident) key_put(&k, "/resident");
    key_put(&k, "/");
    key_put(&k, s->arch);
    return key_end(&k);
}

int wp_spec_name_expr(const wp_spec *s, char *buf, size_t n, char *prelude, size_t pn) {
    int len;
    if (pn) prelude[0] = 0;
    if (s->family->flags & WP_F_DATA) return data_name_expr(s, buf, n, prelude, pn);
    if (s->family->flags & WP_F_OP) {
        char op_type[128];
        if (wp_op_cxx(&s->op, s->type, op_type, sizeof op_type, prelude, pn)) return -1;
        len = snprintf(buf, n, "%s<%s, %d, 0x%08xu, %s >", s->family->kernel, wp_type_cxx(s->type), s->width, s->mask,
                       op_type);
    } else {
        len = snprintf(buf, n, "%s<%s, %d, 0x%08xu>", s->family->kernel, wp_type_cxx(s->type), s->width, s->mask);
    }
    return (len < 0 || (size_t)len >= n) ? -1 : 0;
}
