/* placement.h — which device runs a job (multi-device placement). The app serves on a list of devices: every GPU
 * opened by --devices (one cuda backend each), or the emulator's --emu-devices (one emu backend
 * each). A job over a buffer runs where its buffer lives; a request may pin a device ("device": N);
 * any other job goes to the usable device with the fewest jobs running (ties: round robin). A lost
 * device (a sticky error the driver could not clear) gets no new jobs while the others serve.
 * Any thread may call these; they take no lock (device lists are fixed once the app starts). */
#ifndef WP_PLACEMENT_H
#define WP_PLACEMENT_H

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "backend/buffer.h"
#include "util/common.h"

struct wp_app;

#define WP_MAX_DEVICES 16

/* The device for one job. buf non-NULL: the device it lives on (a pin naming another one is 400
 * "device_mismatch"). pinned >= 0: that device — 400 "bad_device" when there is no such ordinal, 503
 * "device_lost" when it is lost. Else the least-loaded usable device; 503 "no_device" when none is
 * usable. Returns NULL with err on failure. */
wp_backend *wp_placement_pick(struct wp_app *app, const wp_buf *buf, int pinned, wp_err *err);

/* A request's "device" field (JSON body) into *pinned: -1 when absent; 400 "bad_device" when it is
 * not a whole number >= 0. */
int wp_placement_pin(const cJSON *body, int *pinned, wp_err *err);
/* The same from a query argument (?device=N); NULL: absent. */
int wp_placement_pin_text(const char *text, int *pinned, wp_err *err);

/* A buffer's "shard" (sharded buffers): JSON v ("all", or a list of ordinals) or query text t ("all" or
 * "0,2"), whichever is non-NULL, into the devices to split it over, in order: "all" is every usable
 * device. 400 "bad_shard" (not that form, an unknown or repeated ordinal), 503 "device_lost". */
int wp_placement_shards(struct wp_app *app, const cJSON *v, const char *t, wp_backend **devs, int *n, wp_err *err);

/* Whether the app's devices are these backends' (b is one of them). */
bool wp_placement_has(const struct wp_app *app, const wp_backend *b);
/* At least one device is usable (GET /v1/ready). */
bool wp_placement_ready(struct wp_app *app);
/* GET /v1/info's "devices": per device its ordinal, backend, name, sm, memory, streams, jobs
 * running, and whether it is usable (with the reason when not). */
cJSON *wp_placement_json(struct wp_app *app);

#endif
