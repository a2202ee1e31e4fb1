#!/bin/sh
# Version, backend, device, NVRTC version, cache statistics and limits: GET /v1/info
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/v1/info" && echo
