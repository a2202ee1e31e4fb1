#!/bin/sh
# Reduce an array: inline JSON, then raw little-endian bytes (here 4 floats made with printf).
# The answer has the value, count, backend, strategy, cache key and timings.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d '{"type":"f32","op":"sum","data":[1.5,2,3]}' && echo
printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100' |
  curl -sS "$@" --data-binary @- -H 'Content-Type: application/octet-stream' "$WARPD/v1/reduce?type=f32&op=max" && echo
