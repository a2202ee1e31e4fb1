#!/bin/sh
# Prometheus metrics: requests, latencies, compiles, cache hits and misses, queue depth: GET /metrics
WARPD=${WARPD:-http://127.0.0.1:8080}
curl -fsS "$WARPD/metrics"
