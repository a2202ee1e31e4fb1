/* log.c — the daemon's stderr messages, filtered by level (see log.h). Owns: the level. */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int log_level = WP_LOG_INFO;

int wp_log_level_parse(const char *name, wp_log_level *out) {
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; name && i < 4; i++)
        if (!strcmp(name, names[i])) {
            *out = (wp_log_level)i;
            return 0;
        }
    return -1;
}

void wp_log_set_level(wp_log_level level) { atomic_store(&log_level, (int)level); }

bool wp_log_enabled(wp_log_level level) { return (int)level <= atomic_load(&log_level); }

void wp_log(wp_log_level level, const char *fmt, ...) {
    if (!wp_log_enabled(level)) return;
    char line[20480]; /* room for a whole access log line (reqlog.c repeats them at debug) */
    int n = snprintf(line, sizeof line, "warpd: %s", level == WP_LOG_DEBUG ? "debug: " : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    fwrite(line, 1, len, stderr); /* one call: stdio locks the stream, lines do not interleave */
}
