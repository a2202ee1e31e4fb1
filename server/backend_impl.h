/* backend_impl.h — the table each backend fills in; only backend*.c include this. */
#ifndef WP_BACKEND_IMPL_H
#define WP_BACKEND_IMPL_H

#include "backend.h"

typedef struct wp_backend_ops {
    const char *name;
    void (*close)(wp_backend *b);
    void (*info)(wp_backend *b, wp_device_info *out);
    int (*load)(wp_backend *b, const wp_artifact *a, void **fn, wp_err *err);
    void (*unload)(wp_backend *b, void *fn);
    int (*run_warp)(wp_backend *b, void *fn, const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                    wp_run_timing *t, wp_err *err);
} wp_backend_ops;

/* Every backend struct starts with this. */
struct wp_backend {
    const wp_backend_ops *ops;
};

#endif
