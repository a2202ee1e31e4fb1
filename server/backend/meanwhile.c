/* meanwhile.c — a run's meanwhile hook (wp_run_timing.meanwhile, backend.h), called once by whichever
 * code waits for the device: the CUDA backend's warp runs and a batch's launch (engine/batch_warp.c).
 * Owns: nothing. */
#include "backend.h"

void wp_run_meanwhile(wp_run_timing *t) {
    if (!t || !t->meanwhile) return;
    void (*f)(void *) = t->meanwhile;
    t->meanwhile = NULL;
    f(t->meanwhile_ctx);
}
