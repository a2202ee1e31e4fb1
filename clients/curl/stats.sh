# Statistics and norms in one pass (device_reduce): the sample variance (ddof 1) of f32 data far from
# zero, where a naive f32 sum of squares fails, and the L2 norm and nonzero count of the same data.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d '{"type":"f32","op":"var","ddof":1,"data":[10000001,10000003,10000005,10000007],"check":true}' && echo
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d '{"type":"f32","op":"norm2","data":[3,0,-4]}' && echo
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d '{"type":"f32","op":"count_nonzero","data":[3,0,-4]}' && echo
