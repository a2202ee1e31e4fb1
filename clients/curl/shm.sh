#!/bin/sh
# Reduce data where it already is: a 1 MiB shared-memory object made with dd under /dev/shm (zeros, then
# the f32 values 1, 2, 3, 4 at its start: the sum is 10 over 262144 elements), registered with
# POST /v1/shm, reduced by its id ("shm": nothing else is sent), then DELETE /v1/shm/{id} and the file
# removed. The daemon must run on this machine (loopback or a Unix socket) with --shm on, the default.
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
name=warpd-curl-$$
trap 'rm -f "/dev/shm/$name"' EXIT
dd if=/dev/zero of="/dev/shm/$name" bs=1M count=1 2>/dev/null || exit 1
printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100' | dd of="/dev/shm/$name" conv=notrunc 2>/dev/null
reg=$(curl -sS "$@" "$WARPD/v1/shm" -H 'Content-Type: application/json' -d "{\"name\":\"/$name\"}") || exit 1
echo "$reg"
id=$(echo "$reg" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] || exit 1
curl -sS "$@" "$WARPD/v1/reduce" -H 'Content-Type: application/json' -d "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$id\"}}" && echo
curl -sS "$@" "$WARPD/v1/shm" && echo
curl -sS "$@" -X DELETE "$WARPD/v1/shm/$id" && echo
