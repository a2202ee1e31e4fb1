#!/bin/sh
# Compile (or find in the cache) one specialization and show its instantiation, registers, spills
# and PTX: POST /v1/compile. Add "sass": true for SASS when nvdisasm is on the server.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/compile" -H 'Content-Type: application/json' -d '{
  "family": "warp_allreduce", "type": "f32", "width": 32, "op": "max", "ptx": true
}' && echo
