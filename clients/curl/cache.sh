#!/bin/sh
# Prewarm two kernels in one request (POST /v1/compile with "specs": one result per spec), list the
# cache (GET /v1/cache: entries with key, bytes, last use, hits, tier; the totals), then prune what
# has not been used for a week (DELETE /v1/cache?older_than=7d; DELETE /v1/cache/{hash} removes one).
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/v1/compile" -H 'Content-Type: application/json' -d '{"specs": [
  {"family": "shfl_xor", "type": "f32"}, {"family": "device_reduce", "type": "f32", "op": "max"}
]}' | cut -c 1-400 && echo
curl -fsS "$@" "$WARPD/v1/cache" && echo
curl -fsS "$@" -X DELETE "$WARPD/v1/cache?older_than=7d" && echo
