/* jit_memo.h — the kernel key memo. Every job asks for its kernel's key (wp_jit_key): the SHA-256 of the compile's
 * inputs, a few µs of a small job's time. Within a process those inputs are a function of the spec's key text (the
 * templates and options are read once, at open), so the last keys are kept beside their key text: a later call with the
 * same text gets the kept key without forming or hashing the inputs. A slot is picked by a cheap hash of the text.
 * Readers take no lock and write nothing: each slot is a seqlock (an odd seq while a writer, under memo->lock, changes
 * it; a reader that sees seq move looks again). Threads: wp_jit_memo_get and _text from any thread, at any time; _put
 * from any thread (writers take the memo's lock); open and close alone. */
#ifndef WP_JIT_MEMO_H
#define WP_JIT_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/spec.h"

#define WP_JIT_MEMO_TEXT (WP_SPEC_KEY_MAX + 16)

typedef struct wp_jit_memo wp_jit_memo;
wp_jit_memo *wp_jit_memo_open(void); /* NULL: out of memory */
void wp_jit_memo_close(wp_jit_memo *m);

/* The text s's key is kept under (text has room for WP_JIT_MEMO_TEXT bytes): its length, -1 when the
 * spec's key text does not fit. */
int wp_jit_memo_text(const wp_spec *s, char *text, size_t cap);
/* The kept key of text (len bytes), into key: true on a hit. Takes no lock and writes nothing. */
bool wp_jit_memo_get(const wp_jit_memo *m, const char *text, size_t len, uint8_t key[32]);
void wp_jit_memo_put(wp_jit_memo *m, const char *text, size_t len, const uint8_t key[32]);

#endif
