/* compile.h — one spec compiled or found and described as POST /v1/compile answers it (compile.c).
 * Any thread (the compile itself runs on the caller's thread: jit.h). */
#ifndef WP_ENGINE_COMPILE_H
#define WP_ENGINE_COMPILE_H

#include <cjson/cJSON.h>

#include "app.h"

/* POST /v1/compile's answer for one spec object: 0 with *out, or -1 with err. prebuilt (may be NULL):
 * the kernel compiled already in a group (prewarm.c), used if the cache has none; the caller frees what
 * is left of it (wp_artifact_free). */
int wp_compile_spec(wp_app *app, const cJSON *spec, wp_artifact *prebuilt, cJSON **out, wp_err *err);

#endif
