#!/bin/sh
# Run a request asynchronously: POST /v1/jobs answers 202 with an id at once, then GET /v1/jobs/{id}
# until the job is done (its "result" is what POST /v1/warp would have answered). Any POST endpoint
# works: "kind" is its path after /v1/ (warp, compile, reduce, scan), "request" its body.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
job=$(curl -sS "$@" "$WARPD/v1/jobs" -H 'Content-Type: application/json' -d '{
  "kind": "warp",
  "request": {"family": "shfl_xor", "type": "i32", "width": 16, "args": {"lane_mask": 1}, "input": {"iota": 32}}
}') || exit 1
echo "$job"
id=$(echo "$job" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] || exit 1
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  view=$(curl -sS "$@" "$WARPD/v1/jobs/$id") || exit 1
  case "$view" in *'"state":"queued"'* | *'"state":"running"'*) sleep 0.2 ;; *) break ;; esac
done
echo "$view"
