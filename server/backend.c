/* backend.c — dispatch from the public backend calls to the backend's table. */
#include "backend_impl.h"

void wp_backend_close(wp_backend *b) {
    if (b) b->ops->close(b);
}
const char *wp_backend_name(const wp_backend *b) { return b->ops->name; }
void wp_backend_info(wp_backend *b, wp_device_info *out) { b->ops->info(b, out); }
int wp_backend_load(void *b, const wp_artifact *a, void **fn, wp_err *err) {
    wp_backend *be = b;
    return be->ops->load(be, a, fn, err);
}
void wp_backend_unload(void *b, void *fn) {
    wp_backend *be = b;
    be->ops->unload(be, fn);
}
int wp_backend_run_warp(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                        wp_run_timing *t, wp_err *err) {
    return b->ops->run_warp(b, fn, s, job, res, t, err);
}
