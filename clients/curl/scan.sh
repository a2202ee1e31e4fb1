#!/bin/sh
# Inclusive and exclusive prefix sums of a small array.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/scan" -H 'Content-Type: application/json' -d '{"type":"i32","op":"sum","data":[1,2,3,4,5]}' && echo
curl -sS "$@" "$WARPD/v1/scan" -H 'Content-Type: application/json' -d '{"type":"i32","op":"sum","exclusive":true,"data":[1,2,3,4,5]}' && echo
