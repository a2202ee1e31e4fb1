/* resident_box.h — the host's side of a resident kernel's mailbox (kernels/wp_abi.h lays it out;
 * templates/wp_resident.cuh is the device's side): a job written as lines (a warp job, or a batched data
 * kernel's image), its answer read back, the kernel told to leave. Pure functions over the box's memory, no driver:
 * cuda_resident.c runs them on mapped page-locked memory, tests/unit/test_resident_box.c on memory a thread plays the
 * device in. Threads: one at a time per box (the caller's own lock). x86-64 only (16-byte loads and stores are whole
 * there); elsewhere wp_resident_box_usable() is false and nothing else may be called. */
#ifndef WP_RESIDENT_BOX_H
#define WP_RESIDENT_BOX_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/family.h"

#define WP_RESIDENT_BOX_BYTES ((size_t)WP_RES_LINES * 16)

/* Whether this build can use resident kernels at all. */
bool wp_resident_box_usable(void);

/* Whether a job fits one resident warp: 32 lanes, all of them active, 1..WP_MAX_ELEMS elements. In a
 * plain launch a lane past n or inactive exits; in the resident's loop it only waits for the next job,
 * and a warp intrinsic whose mask names a lane that neither exited nor calls it is undefined: so every
 * lane of a resident's job runs the primitive or is outside its mask. */
bool wp_resident_box_fits(const wp_warp_job *job);

/* The next sequence number after seq (skipping 0 and WP_RESIDENT_STOP). */
unsigned wp_resident_box_next(unsigned seq);

/* Writes job as job seq: its lines, then the header last. */
void wp_resident_box_post(void *box, const wp_warp_job *job, unsigned seq);

/* Where job seq stands: WP_RESIDENT_DONE (every out line carries seq), WP_RESIDENT_GONE (the kernel
 * left without it: the status line says so and the answer is not all there), or WP_RESIDENT_WAIT. */
enum { WP_RESIDENT_WAIT = 0, WP_RESIDENT_DONE, WP_RESIDENT_GONE };
int wp_resident_box_poll(const void *box, unsigned seq, int n, int elems);

/* A done job's answer: out (n*elems) and src (n) into res. */
void wp_resident_box_read(const void *box, int n, int elems, wp_warp_result *res);

/* A batched data kernel's job (kernels/wp_abi.h, WP_DATA_RESIDENT): whether an image of image_len bytes
 * (its blocks' starts at first_at, jobs jobs) and an answer of answer_len bytes at answer_at may fit
 * the mailbox, every number within what the packed header can say (the image's words that are not
 * zero must fit too: wp_resident_box_post_image says). */
bool wp_resident_box_image_fits(size_t image_len, size_t first_at, unsigned jobs, size_t answer_at, size_t answer_len);

/* Writes job seq: the words of image[0, image_len) that are not zero as lines, then the header (the
 * block starts at first_at, jobs jobs; the region [answer_at, answer_at + answer_len) of the device's
 * copy to answer). False, with no header written (the kernel takes nothing), when those words are more
 * than the mailbox holds or the header cannot say these numbers (kernels/wp_abi.h). */
bool wp_resident_box_post_image(void *box, const void *image, size_t image_len, size_t first_at, unsigned jobs,
                                size_t answer_at, size_t answer_len, unsigned seq);

/* Where image job seq stands (as wp_resident_box_poll). */
int wp_resident_box_poll_image(const void *box, unsigned seq, size_t answer_len);

/* A done image job's answer: answer_len bytes into dst. */
void wp_resident_box_read_image(const void *box, size_t answer_len, void *dst);

/* Tells the kernel to leave; whether it has (the status line). */
void wp_resident_box_stop(void *box);
bool wp_resident_box_left(const void *box);

/* Before a launch: the status line emptied (the last kernel's word on leaving gone). */
void wp_resident_box_clear(void *box);

#endif
