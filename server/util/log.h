/* log.h — the daemon's own messages on stderr ("warpd: ..."), filtered by --log-level. The access log
 * (one JSON line per request) is reqlog.c's. Owns: the level (process-wide, set once at start by main.c
 * before any thread runs; read by any thread). */
#ifndef WP_LOG_H
#define WP_LOG_H

#include <stdbool.h>

typedef enum { WP_LOG_ERROR = 0, WP_LOG_WARN, WP_LOG_INFO, WP_LOG_DEBUG } wp_log_level;

/* "error", "warn", "info" or "debug" -> 0; -1 for anything else. */
int wp_log_level_parse(const char *name, wp_log_level *out);
void wp_log_set_level(wp_log_level level); /* default WP_LOG_INFO */
bool wp_log_enabled(wp_log_level level);
/* One line to stderr, "warpd: " (and "debug: " for debug) before it, when the level lets it through.
 * The caller escapes anything a client sent (reqlog.c's wp_reqlog_escape). */
void wp_log(wp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
