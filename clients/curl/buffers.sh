#!/bin/sh
# Keep data on the device and reduce it there: PUT /v1/buffers (here a million generated f32; raw
# bytes work too: --data-binary @file -H 'Content-Type: application/octet-stream' '...?type=f32'),
# POST /v1/reduce with "buffer", then DELETE /v1/buffers/{id}. GET /v1/buffers lists what is held.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
buf=$(curl -sS "$@" -X PUT "$WARPD/v1/buffers" -H 'Content-Type: application/json' -d '{
  "type": "f32", "generate": {"kind": "random", "n": 1048576, "seed": 7}, "ttl": 600
}') || exit 1
echo "$buf"
id=$(echo "$buf" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] || exit 1
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d "{\"type\":\"f32\",\"op\":\"sum\",\"buffer\":\"$id\"}" && echo
curl -sS "$@" "$WARPD/v1/buffers" && echo
curl -sS "$@" -X DELETE "$WARPD/v1/buffers/$id" && echo
