#!/bin/sh
# Version, backend, device, NVRTC version, cache statistics and limits: GET /v1/info
WARPD=${WARPD:-http://127.0.0.1:8080}
curl -fsS "$WARPD/v1/info" && echo
