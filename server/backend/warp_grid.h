/* warp_grid.h — the device memory of a /v1/warp launch, shared by a job alone (backend_cuda.c) and a
 * batch of jobs side by side (batch_warp.c): one region laid out out | src | in | arg | active, each
 * part 256-byte aligned, uploaded whole (out pre-filled with WP_WARP_POISON, src with -1) and
 * downloaded from its start to `download` (out | src); and the kernel's wp_warp_params over it.
 * Pure functions: any thread. */
#ifndef WP_WARP_GRID_H
#define WP_WARP_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef struct {
    size_t out, src, in, arg, active, download, total; /* byte offsets; download and total: lengths */
} wp_warp_layout;

/* The layout for `lanes` lanes of `elems` values each. */
wp_warp_layout wp_warp_layout_for(int lanes, int elems);

/* Writes job's part of the host image h at lane `lane`, over `lanes` lanes (>= job->n): out poisoned,
 * src -1, then its inputs (absent arrays read as zeros / all active); lanes past job->n (the spare
 * lanes of a batched job's last warp) inactive with zero inputs. */
void wp_warp_image_put(unsigned char *h, const wp_warp_layout *l, const wp_warp_job *job, int lane, int lanes);

/* The parameters of a launch over `lanes` lanes of a region at device address base, with job's
 * run-time scalars (predicate, swap indexes; elems). */
wp_warp_params wp_warp_params_at(uint64_t base, const wp_warp_layout *l, const wp_warp_job *job, int lanes);

#endif
