#!/bin/sh
# The OpenAPI 3.1 document of every route, request and response, with examples: GET /v1/openapi.json
WARPD=${WARPD:-http://127.0.0.1:8080}
set -- ${WARPD_TOKEN:+-H "Authorization: Bearer $WARPD_TOKEN"}  # the token, when the daemon has one
curl -fsS "$@" "$WARPD/v1/openapi.json" && echo
