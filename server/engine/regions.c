/* regions.c — shared-memory regions by id (regions.h): names checked, objects opened without
 * following links, mapped, registered for DMA, held by jobs, and copied to and from buffers with
 * truncation turned into an error. One mutex guards the list, the counts and every region's users. */
#include "regions.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/sigbus.h"

#define SHM_DIR "/dev/shm"
#define BOUNCE_BYTES (4u << 20) /* a copy through host memory goes in pieces this large */
/* Copies at least this large DMA straight between a registered region and the device. Smaller ones go
 * through the bounce buffer: the cuda backend stages them with a CPU copy of its own (WP_STAGE_MAX in
 * backend_cuda.c, 4 MiB), which would touch the region outside the SIGBUS guard. */
#define DMA_MIN_BYTES (8u << 20)

struct wp_region {
    wp_region *next;
    wp_regions *owner;
    wp_region_info info;
    int fd;
    void *map;           /* mmap's address (page-aligned) */
    size_t map_len;      /* what was mapped, from the page below the offset */
    unsigned char *base; /* map + the offset's distance from its page: byte 0 of the region */
    bool listed;
};

struct wp_regions {
    pthread_mutex_t mu;
    char prefix[64];
    uint64_t max_bytes;
    wp_backend *dma;
    wp_region *head, **tail; /* listed regions, oldest first */
    wp_regions_stats st;     /* bytes: every mapping, listed or awaiting its last user */
};

wp_regions *wp_regions_open(const wp_regions_config *cfg, wp_err *err) {
    wp_regions *rs = calloc(1, sizeof *rs);
    if (!rs) {
        WP_FAIL(err, 507, "out_of_memory", "", "no memory for the region registry");
        return NULL;
    }
    pthread_mutex_init(&rs->mu, NULL);
    snprintf(rs->prefix, sizeof rs->prefix, "%s", cfg->prefix ? cfg->prefix : "/warpd");
    rs->max_bytes = cfg->max_bytes;
    rs->dma = cfg->dma;
    rs->tail = &rs->head;
    rs->st.max_bytes = cfg->max_bytes;
    if (wp_sigbus_install()) {
        free(rs);
        WP_FAIL(err, 500, "internal", "", "cannot install the SIGBUS handler: %s", strerror(errno));
        return NULL;
    }
    return rs;
}

static void region_unmap(wp_region *g) {
    if (g->info.registered) wp_backend_host_unregister(g->owner->dma, g->base);
    munmap(g->map, g->map_len);
    close(g->fd);
    free(g);
}

void wp_regions_close(wp_regions *rs) {
    if (!rs) return;
    for (wp_region *g = rs->head, *next; g; g = next) {
        next = g->next;
        region_unmap(g);
    }
    pthread_mutex_destroy(&rs->mu);
    free(rs);
}

/* ---- adding ---- */

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
}

static int check_name(const wp_regions *rs, const char *name, wp_err *err) {
    size_t n = strlen(name);
    if (n < 2 || n > WP_REGION_NAME_MAX || name[0] != '/')
        return WP_FAIL(err, 400, "bad_name", "name", "a region's name is \"/\" and 1..%d characters",
                       WP_REGION_NAME_MAX - 1);
    if (strncmp(name, rs->prefix, strlen(rs->prefix)) != 0)
        return WP_FAIL(err, 400, "bad_name", "name", "a region's name must begin with %s (--shm-prefix)", rs->prefix);
    for (size_t i = 1; i < n; i++)
        if (!name_char(name[i]))
            return WP_FAIL(err, 400, "bad_name", "name",
                           "a region's name has letters, digits, '-', '_' and '.' after its first \"/\"");
    if (strstr(name, "..")) return WP_FAIL(err, 400, "bad_name", "name", "a region's name may not hold \"..\"");
    return 0;
}

/* The object, opened read-write (else read-only) without following a link, as a regular file. */
static int open_object(const char *name, bool *read_only, struct stat *sb, wp_err *err) {
    char path[sizeof SHM_DIR + WP_REGION_NAME_MAX + 1];
    snprintf(path, sizeof path, SHM_DIR "%s", name);
    const int flags = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    *read_only = false;
    int fd = open(path, O_RDWR | flags);
    if (fd < 0 && (errno == EACCES || errno == EROFS)) {
        *read_only = true;
        fd = open(path, O_RDONLY | flags);
    }
    if (fd < 0) {
        if (errno == ENOENT)
            WP_FAIL(err, 404, "shm_not_found", "name", "no shared-memory object named %s", name);
        else if (errno == EACCES || errno == EPERM)
            WP_FAIL(err, 403, "shm_denied", "name", "the daemon may not open %s (its permissions)", name);
        else
            WP_FAIL(err, 400, "not_shared_memory", "name", "%s is not a shared-memory object", name);
        return -1;
    }
    if (fstat(fd, sb) || !S_ISREG(sb->st_mode)) {
        close(fd);
        return WP_FAIL(err, 400, "not_shared_memory", "name", "%s is not a shared-memory object", name);
    }
    return fd;
}

/* The part to map: [offset, offset + *bytes) within the object, checked without overflow. */
static int check_range(uint64_t size, uint64_t offset, int64_t bytes, uint64_t *out, wp_err *err) {
    if (offset > size)
        return WP_FAIL(err, 400, "out_of_range", "offset",
                       "offset %" PRIu64 " lies past the object's %" PRIu64 " bytes", offset, size);
    uint64_t want = bytes < 0 ? size - offset : (uint64_t)bytes;
    if (want > size - offset)
        return WP_FAIL(err, 400, "out_of_range", "bytes",
                       "%" PRIu64 " bytes from offset %" PRIu64 " lie past the object's %" PRIu64, want, offset, size);
    if (want == 0) return WP_FAIL(err, 400, "out_of_range", "bytes", "a region holds at least one byte");
    if (want > SIZE_MAX / 2) return WP_FAIL(err, 400, "out_of_range", "bytes", "a region this large cannot be mapped");
    *out = want;
    return 0;
}

/* Bytes of the listed regions of owner. With mu held. */
static uint64_t owner_bytes(const wp_regions *rs, const char *owner) {
    uint64_t sum = 0;
    for (const wp_region *g = rs->head; g; g = g->next)
        if (!strcmp(g->info.owner, owner)) sum += g->info.bytes;
    return sum;
}

/* who's shm_bytes quota (a region being mapped by who at the same moment is not counted yet). */
static int reserve_mine(wp_regions *rs, const wp_user *who, const char *owner, uint64_t bytes, wp_err *err) {
    uint64_t mine = wp_user_quota(who)->shm_bytes;
    if (!mine) return 0;
    pthread_mutex_lock(&rs->mu);
    uint64_t held = owner_bytes(rs, owner);
    bool fits = bytes <= mine && held <= mine - bytes;
    if (!fits) rs->st.refused_quota++;
    pthread_mutex_unlock(&rs->mu);
    if (fits) return 0;
    return WP_FAIL(err, 413, "quota_shm_bytes", "shm_bytes",
                   "%" PRIu64 " more bytes would pass %s's shm_bytes quota of %" PRIu64 " (%" PRIu64 " mapped now)",
                   bytes, owner, mine, held);
}

static int reserve(wp_regions *rs, uint64_t bytes, wp_err *err) {
    pthread_mutex_lock(&rs->mu);
    bool fits = bytes <= rs->max_bytes && rs->st.bytes <= rs->max_bytes - bytes;
    if (fits)
        rs->st.bytes += bytes;
    else
        rs->st.refused_quota++;
    uint64_t held = rs->st.bytes;
    pthread_mutex_unlock(&rs->mu);
    if (fits) return 0;
    return WP_FAIL(err, 413, "shm_quota", "bytes",
                   "%" PRIu64 " more bytes would pass --shm-max %" PRIu64 " (%" PRIu64 " mapped now)", bytes,
                   rs->max_bytes, held);
}

static void unreserve(wp_regions *rs, uint64_t bytes) {
    pthread_mutex_lock(&rs->mu);
    rs->st.bytes -= bytes;
    pthread_mutex_unlock(&rs->mu);
}

static int map_region(wp_region *g, uint64_t offset, wp_err *err) {
    long page = sysconf(_SC_PAGESIZE);
    uint64_t lead = offset % (uint64_t)page;
    g->map_len = (size_t)(g->info.bytes + lead);
    int prot = PROT_READ | (g->info.read_only ? 0 : PROT_WRITE);
    g->map = mmap(NULL, g->map_len, prot, MAP_SHARED, g->fd, (off_t)(offset - lead));
    if (g->map == MAP_FAILED)
        return WP_FAIL(err, 507, "out_of_memory", "bytes", "cannot map %" PRIu64 " bytes of %s: %s", g->info.bytes,
                       g->info.name, strerror(errno));
    g->base = (unsigned char *)g->map + lead;
    return 0;
}

static void new_id(char *id) { snprintf(id, WP_REGION_ID_LEN, "shm-%016" PRIx64, wp_random_u64()); }

static void publish(wp_regions *rs, wp_region *g) {
    pthread_mutex_lock(&rs->mu);
    g->listed = true;
    *rs->tail = g;
    rs->tail = &g->next;
    rs->st.regions++;
    rs->st.added++;
    pthread_mutex_unlock(&rs->mu);
}

int wp_regions_add(wp_regions *rs, const wp_user *who, const char *name, uint64_t offset, int64_t bytes,
                   wp_region_info *out, wp_err *err) {
    if (check_name(rs, name, err)) return -1;
    wp_region *g = calloc(1, sizeof *g);
    if (!g) return WP_FAIL(err, 507, "out_of_memory", "", "no memory for a region");
    g->owner = rs;
    snprintf(g->info.name, sizeof g->info.name, "%s", name);
    wp_user_name_copy(who, g->info.owner);
    struct stat sb;
    if ((g->fd = open_object(name, &g->info.read_only, &sb, err)) < 0) return free(g), -1;
    g->info.object_bytes = (uint64_t)sb.st_size;
    g->info.offset = offset;
    if (check_range(g->info.object_bytes, offset, bytes, &g->info.bytes, err) ||
        reserve_mine(rs, who, g->info.owner, g->info.bytes, err) || reserve(rs, g->info.bytes, err)) {
        close(g->fd);
        free(g);
        return -1;
    }
    if (map_region(g, offset, err)) {
        unreserve(rs, g->info.bytes);
        close(g->fd);
        free(g);
        return -1;
    }
    wp_err reg_err = {0};
    g->info.registered = rs->dma && !g->info.read_only &&
                         wp_backend_host_register(rs->dma, g->base, (size_t)g->info.bytes, &reg_err) == 0;
    g->info.created = (double)time(NULL);
    new_id(g->info.id);
    publish(rs, g);
    *out = g->info;
    return 0;
}

/* ---- finding, holding, removing ---- */

/* The listed region id that who may see: another user's is as unknown as an id never made. */
static wp_region *find(wp_regions *rs, const wp_user *who, const char *id) {
    for (wp_region *g = rs->head; g; g = g->next)
        if (!strcmp(g->info.id, id)) return wp_user_sees(who, g->info.owner) ? g : NULL;
    return NULL;
}

static int unknown(const char *id, const char *field, wp_err *err) {
    return WP_FAIL(err, 404, "unknown_shm", field, "no region %.40s (never made, or deleted)", id);
}

int wp_regions_info(wp_regions *rs, const wp_user *who, const char *id, wp_region_info *out, wp_err *err) {
    pthread_mutex_lock(&rs->mu);
    wp_region *g = find(rs, who, id);
    if (g) *out = g->info;
    pthread_mutex_unlock(&rs->mu);
    return g ? 0 : unknown(id, "id", err);
}

/* With mu held: g leaves the list. */
static void unlist(wp_regions *rs, wp_region *g) {
    wp_region **at = &rs->head;
    while (*at != g) at = &(*at)->next;
    *at = g->next;
    if (rs->tail == &g->next) rs->tail = at;
    g->next = NULL;
    g->listed = false;
    rs->st.regions--;
    rs->st.removed++;
}

static void release(wp_regions *rs, wp_region *g) {
    unreserve(rs, g->info.bytes);
    region_unmap(g);
}

int wp_regions_remove(wp_regions *rs, const wp_user *who, const char *id, wp_region_info *out, bool *pending,
                      wp_err *err) {
    pthread_mutex_lock(&rs->mu);
    wp_region *g = find(rs, who, id);
    if (g) {
        unlist(rs, g);
        *out = g->info;
        *pending = g->info.users > 0;
    }
    pthread_mutex_unlock(&rs->mu);
    if (!g) return unknown(id, "id", err);
    if (!*pending) release(rs, g);
    return 0;
}

int wp_regions_list(wp_regions *rs, const wp_user *who, wp_region_info **out, size_t *n, wp_err *err) {
    pthread_mutex_lock(&rs->mu);
    size_t count = 0;
    for (wp_region *g = rs->head; g; g = g->next) count += wp_user_sees(who, g->info.owner);
    wp_region_info *v = malloc((count ? count : 1) * sizeof *v);
    size_t i = 0;
    for (wp_region *g = rs->head; v && g; g = g->next)
        if (wp_user_sees(who, g->info.owner)) v[i++] = g->info;
    pthread_mutex_unlock(&rs->mu);
    if (!v) return WP_FAIL(err, 507, "out_of_memory", "", "no memory for the list");
    *out = v;
    *n = count;
    return 0;
}

void wp_regions_stats_get(wp_regions *rs, wp_regions_stats *out) {
    pthread_mutex_lock(&rs->mu);
    *out = rs->st;
    pthread_mutex_unlock(&rs->mu);
}

wp_region *wp_regions_hold(wp_regions *rs, const wp_user *who, const char *id, const char *field, wp_err *err) {
    pthread_mutex_lock(&rs->mu);
    wp_region *g = find(rs, who, id);
    if (g) g->info.users++;
    pthread_mutex_unlock(&rs->mu);
    if (!g) unknown(id, field, err);
    return g;
}

void wp_region_put(wp_region *g) {
    if (!g) return;
    wp_regions *rs = g->owner;
    pthread_mutex_lock(&rs->mu);
    bool last = --g->info.users == 0 && !g->listed;
    pthread_mutex_unlock(&rs->mu);
    if (last) release(rs, g);
}

void wp_region_describe(const wp_region *g, wp_region_info *out) {
    pthread_mutex_lock(&g->owner->mu); /* users changes under it */
    *out = g->info;
    pthread_mutex_unlock(&g->owner->mu);
}

bool wp_region_listed(wp_region *g) {
    pthread_mutex_lock(&g->owner->mu);
    const bool listed = g->listed;
    pthread_mutex_unlock(&g->owner->mu);
    return listed;
}

unsigned char *wp_region_span(wp_region *g, uint64_t offset, uint64_t len) {
    const uint64_t size = g->info.bytes;
    return offset <= size && len <= size - offset ? g->base + offset : NULL;
}

/* ---- copies ---- */

static int truncated(wp_region *g, const char *field, wp_err *err) {
    pthread_mutex_lock(&g->owner->mu);
    g->owner->st.truncated++;
    pthread_mutex_unlock(&g->owner->mu);
    return WP_FAIL(err, 409, "region_truncated", field,
                   "the object of region %s was truncated below the mapped bytes; register it again", g->info.id);
}

/* Whether the object still holds every mapped byte (its owner may have truncated it). */
static bool intact(const wp_region *g) {
    struct stat sb;
    return fstat(g->fd, &sb) == 0 && (uint64_t)sb.st_size >= g->info.offset + g->info.bytes;
}

/* The check of every copy into a region: 403 "read_only" when the object opened only for reading. */
static int check_writable(const wp_region *g, const char *field, wp_err *err) {
    if (!g->info.read_only) return 0;
    return WP_FAIL(err, 403, "read_only", field, "region %s was opened read-only: the daemon may not write it",
                   g->info.id);
}

int wp_region_read(wp_region *g, uint64_t offset, void *dst, size_t len, const char *field, wp_err *err) {
    if (!len) return 0;
    if (!intact(g) || wp_guarded_copy(dst, g->base + offset, len)) return truncated(g, field, err);
    return 0;
}

int wp_region_write(wp_region *g, uint64_t offset, const void *src, size_t len, const char *field, wp_err *err) {
    if (check_writable(g, field, err)) return -1;
    if (!len) return 0;
    if (!intact(g) || wp_guarded_copy(g->base + offset, src, len)) return truncated(g, field, err);
    return 0;
}

/* Between the region and buf through one host buffer, a piece at a time, the region's side of each piece
 * copied under the SIGBUS guard: in (region -> buf) or out (buf -> region). 0, -1 with err, or 1: the
 * region faulted. */
static int bounce(wp_region *g, uint64_t offset, wp_buf *buf, size_t buf_offset, size_t len, bool in, wp_err *err) {
    unsigned char *tmp = malloc(len < BOUNCE_BYTES ? len : BOUNCE_BYTES);
    if (!tmp)
        return WP_FAIL(err, 507, "out_of_memory", "",
                       in ? "no host memory to copy a region" : "no host memory to copy into a region");
    int rc = 0;
    for (size_t done = 0; done < len && !rc;) {
        size_t n = len - done < BOUNCE_BYTES ? len - done : BOUNCE_BYTES;
        unsigned char *at = g->base + offset + done;
        if (in)
            rc = wp_guarded_copy(tmp, at, n) ? 1 : wp_buf_write(buf, buf_offset + done, tmp, n, err);
        else
            rc = wp_buf_read(buf, buf_offset + done, tmp, n, err) ? -1 : wp_guarded_copy(at, tmp, n) ? 1 : 0;
        done += n;
    }
    free(tmp);
    return rc;
}

int wp_region_to_buf(wp_region *g, uint64_t offset, wp_buf *buf, size_t buf_offset, size_t len, const char *field,
                     wp_err *err) {
    unsigned char *host = wp_buf_host(buf);
    if (host) return wp_region_read(g, offset, host + buf_offset, len, field, err);
    if (!len) return 0;
    if (!intact(g)) return truncated(g, field, err);
    if (g->info.registered && len >= DMA_MIN_BYTES) return wp_buf_write(buf, buf_offset, g->base + offset, len, err);
    int rc = bounce(g, offset, buf, buf_offset, len, true, err);
    return rc > 0 ? truncated(g, field, err) : rc;
}

int wp_region_from_buf(wp_region *g, uint64_t offset, const wp_buf *buf, size_t buf_offset, size_t len,
                       const char *field, wp_err *err) {
    const unsigned char *host = wp_buf_host_const(buf);
    if (host) return wp_region_write(g, offset, host + buf_offset, len, field, err);
    if (check_writable(g, field, err)) return -1;
    if (!len) return 0;
    if (!intact(g)) return truncated(g, field, err);
    if (g->info.registered && len >= DMA_MIN_BYTES) return wp_buf_read(buf, buf_offset, g->base + offset, len, err);
    int rc = bounce(g, offset, (wp_buf *)buf, buf_offset, len, false, err);
    return rc > 0 ? truncated(g, field, err) : rc;
}
