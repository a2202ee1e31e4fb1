/* jsonschema.h — a minimal JSON Schema (2020-12, as OpenAPI 3.1 uses it) validator for the tests:
 * type (a name or a list; "integer" is a number with no fraction), enum, const, required, properties,
 * items, allOf, anyOf, oneOf, and local $ref ("#/components/schemas/X", resolved in the root
 * document). Every other keyword (description, examples, format, pattern, minimum, ...) is ignored:
 * it checks the shape of a response, not every constraint. Header-only: every function is static.
 * Used by tests/unit/test_openapi.c (the document's own examples) and tests/api/api_openapi.c (live
 * responses). */
#ifndef WP_JSONSCHEMA_H
#define WP_JSONSCHEMA_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JS_MAX_DEPTH 64 /* $ref chains and nesting; deeper is reported, not followed */

/* "#/a/b~1c" inside root, or NULL. */
static inline const cJSON *js_pointer(const cJSON *root, const char *ref) {
    if (!ref || ref[0] != '#') return NULL;
    const cJSON *v = root;
    const char *p = ref + 1;
    char key[256];
    while (v && *p == '/') {
        p++;
        size_t k = 0;
        while (*p && *p != '/' && k + 1 < sizeof key) {
            if (p[0] == '~' && p[1] == '1')
                key[k++] = '/', p += 2;
            else if (p[0] == '~' && p[1] == '0')
                key[k++] = '~', p += 2;
            else
                key[k++] = *p++;
        }
        key[k] = 0;
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(key)) : cJSON_GetObjectItemCaseSensitive(v, key);
    }
    return *p ? NULL : v;
}

static inline bool js_is_type(const cJSON *v, const char *t) {
    if (!strcmp(t, "null")) return cJSON_IsNull(v);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
    if (!strcmp(t, "object")) return cJSON_IsObject(v);
    if (!strcmp(t, "array")) return cJSON_IsArray(v);
    if (!strcmp(t, "string")) return cJSON_IsString(v);
    if (!strcmp(t, "number")) return cJSON_IsNumber(v);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    return false;
}

static inline const char *js_kind(const cJSON *v) {
    return cJSON_IsNull(v)     ? "null"
           : cJSON_IsBool(v)   ? "boolean"
           : cJSON_IsObject(v) ? "object"
           : cJSON_IsArray(v)  ? "array"
           : cJSON_IsString(v) ? "string"
           : cJSON_IsNumber(v) ? "number"
                               : "invalid";
}

static inline bool js_fail(char *why, size_t cap, const char *path, const char *fmt, const char *a, const char *b) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a, b);
    snprintf(why, cap, "%s: %s", path, msg);
    return false;
}

static inline bool js_check(const cJSON *root, const cJSON *schema, const cJSON *v, char *path, size_t path_cap,
                            char *why, size_t why_cap, int depth);

/* How many of the schemas in list match v; why gets the first failure while none has matched. */
static inline int js_count(const cJSON *root, const cJSON *list, const cJSON *v, char *path, size_t path_cap, int depth,
                           char *why, size_t why_cap) {
    int n = 0;
    char scratch[512];
    for (const cJSON *s = list->child; s; s = s->next)
        if (js_check(root, s, v, path, path_cap, scratch, sizeof scratch, depth + 1))
            n++;
        else if (!n)
            snprintf(why, why_cap, "%s", scratch);
    return n;
}

static inline bool js_check(const cJSON *root, const cJSON *schema, const cJSON *v, char *path, size_t path_cap,
                            char *why, size_t why_cap, int depth) {
    if (depth > JS_MAX_DEPTH) return js_fail(why, why_cap, path, "schema nesting deeper than %s%s", "64", "");
    if (cJSON_IsBool(schema)) /* true accepts everything, false nothing */
        return cJSON_IsTrue(schema) ? true : js_fail(why, why_cap, path, "the schema is false%s%s", "", "");
    if (!cJSON_IsObject(schema)) return js_fail(why, why_cap, path, "not a schema%s%s", "", "");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(schema, "$ref");
    if (ref) {
        const cJSON *target = cJSON_IsString(ref) ? js_pointer(root, ref->valuestring) : NULL;
        if (!target)
            return js_fail(why, why_cap, path, "$ref %s does not resolve%s",
                           cJSON_IsString(ref) ? ref->valuestring : "?", "");
        if (!js_check(root, target, v, path, path_cap, why, why_cap, depth + 1)) return false;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (type) {
        bool ok = false;
        if (cJSON_IsString(type)) ok = js_is_type(v, type->valuestring);
        for (const cJSON *t = cJSON_IsArray(type) ? type->child : NULL; t && !ok; t = t->next)
            ok = cJSON_IsString(t) && js_is_type(v, t->valuestring);
        if (!ok) {
            char *want = cJSON_PrintUnformatted(type);
            js_fail(why, why_cap, path, "type %s, want %s", js_kind(v), want ? want : "?");
            cJSON_free(want);
            return false;
        }
    }
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(schema, "enum");
    if (cJSON_IsArray(en)) {
        bool ok = false;
        for (const cJSON *e = en->child; e && !ok; e = e->next) ok = cJSON_Compare(e, v, true);
        if (!ok) {
            char *got = cJSON_PrintUnformatted(v);
            js_fail(why, why_cap, path, "%.80s is not in the enum%s", got ? got : "?", "");
            cJSON_free(got);
            return false;
        }
    }
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(schema, "const");
    if (cst && !cJSON_Compare(cst, v, true)) return js_fail(why, why_cap, path, "not the const value%s%s", "", "");
    size_t len = strlen(path);
    if (cJSON_IsObject(v)) {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
        for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next)
            if (cJSON_IsString(r) && !cJSON_GetObjectItemCaseSensitive(v, r->valuestring))
                return js_fail(why, why_cap, path, "required property \"%s\" is missing%s", r->valuestring, "");
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
        for (const cJSON *p = cJSON_IsObject(props) ? props->child : NULL; p; p = p->next) {
            const cJSON *member = cJSON_GetObjectItemCaseSensitive(v, p->string);
            if (!member) continue;
            snprintf(path + len, path_cap - len, ".%s", p->string);
            if (!js_check(root, p, member, path, path_cap, why, why_cap, depth + 1)) return false;
            path[len] = 0;
        }
    }
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    if (cJSON_IsArray(v) && items) {
        int i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            snprintf(path + len, path_cap - len, "[%d]", i);
            if (!js_check(root, items, e, path, path_cap, why, why_cap, depth + 1)) return false;
            path[len] = 0;
        }
    }
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(schema, "allOf");
    for (const cJSON *s = cJSON_IsArray(all) ? all->child : NULL; s; s = s->next)
        if (!js_check(root, s, v, path, path_cap, why, why_cap, depth + 1)) return false;
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(schema, "anyOf");
    if (cJSON_IsArray(any) && js_count(root, any, v, path, path_cap, depth, why, why_cap) == 0) return false;
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(schema, "oneOf");
    if (cJSON_IsArray(one)) {
        int n = js_count(root, one, v, path, path_cap, depth, why, why_cap);
        if (n != 1) return n ? js_fail(why, why_cap, path, "matches %s schemas of oneOf%s", "several", "") : false;
    }
    return true;
}

/* Does v match schema (whose $refs point into root)? On a mismatch, why gets "$.path: reason". */
static inline bool js_validate(const cJSON *root, const cJSON *schema, const cJSON *v, char *why, size_t why_cap) {
    char path[512] = "$";
    why[0] = 0;
    return js_check(root, schema, v, path, sizeof path, why, why_cap, 0);
}

/* Every "$ref" anywhere under node resolves in root; the first that does not is copied to bad. */
static inline bool js_refs_resolve(const cJSON *root, const cJSON *node, char *bad, size_t cap) {
    for (const cJSON *c = node ? node->child : NULL; c; c = c->next) {
        if (c->string && !strcmp(c->string, "$ref") && (!cJSON_IsString(c) || !js_pointer(root, c->valuestring))) {
            snprintf(bad, cap, "%s", cJSON_IsString(c) ? c->valuestring : "(not a string)");
            return false;
        }
        if (!js_refs_resolve(root, c, bad, cap)) return false;
    }
    return true;
}

#endif
