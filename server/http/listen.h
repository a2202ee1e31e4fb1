/* listen.h — where the daemon listens beyond host:port, and a check of host:port itself: a Unix socket file (made with
 * the mode asked, a stale one from a crashed run replaced, removed at exit), and the TLS certificate and key files.
 * Called from the thread that starts and stops the HTTP server. */
#ifndef WP_LISTEN_H
#define WP_LISTEN_H

#include <sys/socket.h>
#include <sys/types.h>

#include "util/common.h"

#define WP_LISTEN_DEFAULT_MODE 0600u

/* Binds and listens on a Unix socket at path with the given permissions (0: 0600) and backlog. A file
 * already there is replaced only when it is a socket nobody listens on. Returns the descriptor, or -1
 * with err (400 bad_listen). *ino gets the file's inode (for wp_listen_unix_remove). */
int wp_listen_unix(const char *path, unsigned mode, int backlog, ino_t *ino, wp_err *err);
/* Removes the socket file, if it is still the one wp_listen_unix made. */
void wp_listen_unix_remove(const char *path, ino_t ino);

/* Before host:port is shared by listeners on SO_REUSEPORT sockets (http_start.c): a plain bind of addr (a
 * sockaddr_in or sockaddr_in6 with a port other than 0), closed again, says whether the port is free —
 * a port held by another process (even one of this user with SO_REUSEPORT) must still fail to start.
 * 0 when free; else -1 with err (500 listen_failed naming host, the port and the system's reason). */
int wp_listen_probe(const struct sockaddr_storage *addr, const char *host, wp_err *err);

/* Reads a PEM file given with a flag ("--tls-cert"); errors name the flag and the file. malloc'd text. */
char *wp_listen_read_pem(const char *flag, const char *path, const char *expect, wp_err *err);

#endif
