/* sigbus.c — SIGBUS inside a guarded copy becomes an error (sigbus.h). The handler jumps back to the
 * copy's thread-local sigsetjmp point when that thread is inside wp_guarded_copy; otherwise it puts the
 * default action back and re-raises, so a real bug still dies with a core. */
#include "sigbus.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

static _Thread_local sigjmp_buf *guard; /* set while this thread copies */
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static int install_rc;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    (void)info, (void)uctx;
    sigjmp_buf *g = guard;
    if (g) {
        guard = NULL;
        siglongjmp(*g, 1);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    install_rc = sigaction(SIGBUS, &sa, NULL);
}

int wp_sigbus_install(void) {
    pthread_once(&installed, install);
    return install_rc;
}

/* fn apart from the caller, so that nothing the jump skips lives in wp_guarded_run's frame but env. The
 * signal mask is not saved (no system call per guard): the handler runs with SA_NODEFER and an empty
 * sa_mask, so jumping out of it leaves the thread's mask as it was. */
int wp_guarded_run(void (*fn)(void *), void *arg) {
    sigjmp_buf env;
    if (sigsetjmp(env, 0)) return -1; /* came back from the handler: fn faulted */
    guard = &env;
    fn(arg);
    guard = NULL;
    return 0;
}

typedef struct {
    void *dst;
    const void *src;
    size_t n;
} copy_args;

static void copy_bytes(void *arg) {
    const copy_args *a = arg;
    memcpy(a->dst, a->src, a->n);
}

int wp_guarded_copy(void *dst, const void *src, size_t n) {
    copy_args a = {dst, src, n};
    return wp_guarded_run(copy_bytes, &a);
}
