#!/bin/sh
# Run one warp primitive over 32 lanes: __shfl_xor_sync with lane_mask 1 in width-16 segments.
# The answer has each lane's output, the lane it came from, definedness, backend, cache key, timings.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/warp" -H 'Content-Type: application/json' -d '{
  "family": "shfl_xor", "type": "i32", "width": 16, "mask": "0xffffffff",
  "args": {"lane_mask": 1}, "input": {"iota": 32}
}' && echo
