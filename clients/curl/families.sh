#!/bin/sh
# Every kernel family with its types, widths, arguments, operators and backends: GET /v1/families
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/v1/families" && echo
