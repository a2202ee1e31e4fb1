/* on_behalf.c — the per-thread note of whom a thread works for (see on_behalf.h). Owns: the notes. */
#include "on_behalf.h"

#include <string.h>

static _Thread_local char note[WP_ON_BEHALF_MAX + 1];

void wp_on_behalf_set(const char *user) {
    size_t n = user ? strnlen(user, WP_ON_BEHALF_MAX) : 0;
    memmove(note, user ? user : "", n); /* user may be this note itself (wp_on_behalf's) */
    note[n] = 0;
}

const char *wp_on_behalf(void) { return note[0] ? note : NULL; }
