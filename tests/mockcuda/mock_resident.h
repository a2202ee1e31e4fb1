/* mock_resident.h — the stand-in driver's resident kernels (mock_resident.c), for mockcuda.c. */
#ifndef MOCK_RESIDENT_H
#define MOCK_RESIDENT_H

#include <stdbool.h>
#include <stdint.h>

/* A launch of a warp kernel (its params[0] a wp_warp_params) or, data, of a batched data kernel (a
 * wp_data_params) on stream s: when it asks to be a resident, a thread plays it until it leaves. */
void mock_resident_launch(uintptr_t stream, const void *params, bool data);
/* An event recorded on stream s now stands for the resident there (if one runs). */
void mock_resident_event(uintptr_t event, uintptr_t stream);
/* A context reset or destroyed: every resident stops at once, writing nothing more (as a kernel killed
 * with its context); returns once all have. */
void mock_resident_kill_all(void);
/* Whether event e (0: any on stream s; both 0: any at all) still waits for a resident; wait: until
 * it does not. */
bool mock_resident_pending(uintptr_t event, uintptr_t stream, bool wait);

#endif
