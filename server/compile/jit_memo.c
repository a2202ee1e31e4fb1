/* jit_memo.c — the kernel key memo (jit_memo.h): the last keys, kept beside their key text.
 * Owns: wp_jit_memo. */
#include "jit_memo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define JIT_MEMO_SLOTS 256
typedef struct {
    _Atomic unsigned seq;
    unsigned len; /* 0: empty */
    uint8_t key[32];
    char text[WP_JIT_MEMO_TEXT];
} jit_memo_slot;
struct wp_jit_memo {
    pthread_mutex_t lock; /* writers */
    jit_memo_slot slot[JIT_MEMO_SLOTS];
};

/* The memo's slot hash: eight bytes a step (a byte a step cost as much as the rest of the look-up). */
static uint64_t memo_hash(const unsigned char *b, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ (h >> 32);
}

wp_jit_memo *wp_jit_memo_open(void) {
    wp_jit_memo *m = calloc(1, sizeof *m);
    if (m) pthread_mutex_init(&m->lock, NULL);
    return m;
}

void wp_jit_memo_close(wp_jit_memo *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

int wp_jit_memo_text(const wp_spec *s, char *text, size_t cap) {
    const int len = wp_spec_key_text(s, text, cap - 16);
    if (len < 0) return -1;
    const int32_t extra[3] = {s->width, (int32_t)s->type, (int32_t)s->data.keys};
    memcpy(text + len + 1, extra, sizeof extra); /* text[len] is the text's NUL */
    return len + 1 + (int)sizeof extra;
}

bool wp_jit_memo_get(const wp_jit_memo *m, const char *text, size_t len, uint8_t key[32]) {
    const jit_memo_slot *slot = &m->slot[memo_hash((const unsigned char *)text, len) % JIT_MEMO_SLOTS];
    for (int tries = 0; tries < 2; tries++) {
        const unsigned seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        if (seq & 1) return false; /* a writer is at it: hash instead */
        const bool hit = slot->len == len && !memcmp(slot->text, text, len);
        if (hit) memcpy(key, slot->key, 32);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->seq, memory_order_relaxed) == seq) return hit;
    }
    return false;
}

void wp_jit_memo_put(wp_jit_memo *m, const char *text, size_t len, const uint8_t key[32]) {
    jit_memo_slot *slot = &m->slot[memo_hash((const unsigned char *)text, len) % JIT_MEMO_SLOTS];
    pthread_mutex_lock(&m->lock);
    const unsigned seq = atomic_load_explicit(&slot->seq, memory_order_relaxed);
    atomic_store_explicit(&slot->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memcpy(slot->text, text, len);
    memcpy(slot->key, key, 32);
    slot->len = (unsigned)len;
    atomic_store_explicit(&slot->seq, seq + 2, memory_order_release);
    pthread_mutex_unlock(&m->lock);
}
