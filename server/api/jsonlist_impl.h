/* jsonlist_impl.h — what the list reader (jsonlist.c) and writer (jsonlist_out.c) share: a long list's
 * pieces on several threads, and the type's facts as constants where the type is one (inside the loops
 * made once per type). */
#ifndef WP_JSONLIST_IMPL_H
#define WP_JSONLIST_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/types.h"

#define WP_INLINE static inline __attribute__((always_inline))

#define WP_LIST_THREADS_MAX 16              /* threads one list may use */
#define WP_LIST_BYTES_PER_THREAD (1 << 19)  /* of text read: below this, one thread */
#define WP_LIST_VALUES_PER_THREAD (1 << 16) /* printed: below this many values, one thread */

/* How many threads a list of this much work gets (units: a thread's worth, WP_LIST_BYTES_PER_THREAD of
 * text read or WP_LIST_VALUES_PER_THREAD values printed): one a unit, at most one a CPU. */
int wp_list_threads(uint64_t units);
/* fn on each of k parts (part_size bytes apart), part 0 on this thread; a part whose thread cannot
 * start runs here too. */
void wp_list_run_parts(void *(*fn)(void *), void *parts, size_t part_size, int k);

/* A piece made in a buffer of its own, then copied into place by its own thread (wp_list_run_parts
 * with wp_list_copy_run): the copies of a long list go side by side too. */
typedef struct {
    void *to;
    const void *from;
    size_t n;
} wp_list_copy;
void *wp_list_copy_run(void *arg);

static inline bool int_type(wp_type t) { return t == WP_I32 || t == WP_U32 || t == WP_I64 || t == WP_U64; }
static inline size_t type_size(wp_type t) {
    return t == WP_F64 || t == WP_I64 || t == WP_U64 ? 8 : t == WP_F16 || t == WP_BF16 ? 2 : 4;
}

#endif
