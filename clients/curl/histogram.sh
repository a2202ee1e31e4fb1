#!/bin/sh
# numpy's np.histogram(x, 4, range=(0, 1)) on the daemon: counts (u64 as strings), in/out of range, edges.
# 0.25 is an edge (it opens bin 1), 1 closes the last bin, 1.5 and NaN are out of range.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' \
  -d '{"family":"histogram","type":"f32","bins":4,"range":[0,1],"data":[0,0.1,0.25,0.5,0.99,1,1.5,"nan"]}' && echo
