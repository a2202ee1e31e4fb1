/* bench_daemon.h — what the HTTP benchmarks share: a monotonic clock in microseconds, a comparator for
 * sorting latencies, and starting a warpd as a child process whose first stdout line (the "listening
 * on ..." banner) says where it listens. Header-only, static to each benchmark. */
#ifndef WP_BENCH_DAEMON_H
#define WP_BENCH_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Starts bin with args (NULL-terminated, at most 30) and reads its banner line into banner; quiet sends
 * the daemon's stderr to /dev/null. Returns the child's pid, or -1 (said on stderr) when no banner
 * came. */
static inline pid_t bench_daemon_start(const char *bin, const char *const *args, bool quiet, char *banner, size_t cap) {
    int fds[2];
    if (cap < 2 || pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        if (quiet && !freopen("/dev/null", "w", stderr)) _exit(127);
        char *argv[32] = {(char *)bin};
        for (int i = 0; args[i] && i < 30; i++) argv[i + 1] = (char *)args[i];
        execv(bin, argv);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    while (n < cap - 1 && read(fds[0], banner + n, 1) == 1 && banner[n++] != '\n') {
    }
    banner[n] = 0;
    close(fds[0]);
    if (pid < 0 || !strstr(banner, "listening on ")) {
        fprintf(stderr, "daemon did not start: %s\n", banner);
        if (pid > 0) {
            kill(pid, SIGTERM);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    return pid;
}

/* The TCP port of a "listening on http://127.0.0.1:PORT" banner, or 0. */
static inline int bench_daemon_port(const char *banner) {
    const char *p = strstr(banner, "127.0.0.1:");
    return p ? atoi(p + strlen("127.0.0.1:")) : 0;
}

static inline void bench_daemon_stop(pid_t pid) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

#endif
