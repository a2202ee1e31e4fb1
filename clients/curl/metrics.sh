#!/bin/sh
# Prometheus metrics: requests, latencies, compiles, cache hits and misses, queue depth: GET /metrics
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/metrics"
