#!/bin/sh
# Reduce each run of equal consecutive keys (reduce_by_key): the runs' keys, their sums and how many.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d '{"family":"reduce_by_key","type":"f32","op":"sum","data":[1,2,3,4,5,6],"keys":{"type":"i32","data":[1,1,2,2,2,1]}}' && echo
