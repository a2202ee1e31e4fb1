/* emu_limit.c — the largest job the CPU emulator takes (--emu-max-elements, app.h): on emu every element
 * is host memory and CPU time, and a generate of a few bytes asks for billions of them. */
#include "app.h"

int wp_app_emu_limit(const wp_app *app, const wp_backend *be, uint64_t n, const char *field, wp_err *err) {
    if (be != app->emu || n <= app->emu_max_elements) return 0;
    return WP_FAIL(err, 413, "too_many_elements", field,
                   "%llu elements; the CPU emulator (backend emu) takes at most %llu, to keep one job from taking "
                   "the host's memory and minutes of CPU (raise it with --emu-max-elements)",
                   (unsigned long long)n, (unsigned long long)app->emu_max_elements);
}
