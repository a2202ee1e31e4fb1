#!/bin/sh
# manpage.sh BIN VERSION DATE — prints warpd(8) in roff. The OPTIONS section is made from
# `BIN --help` (so a new flag is documented where --help documents it); the rest is written here.
set -eu
bin=$1 version=$2 date=$3

cat <<ROFF
.TH WARPD 8 "$date" "warpd $version" "System Administration"
.SH NAME
warpd \\- CUDA warp\\-level primitives as an HTTP/JSON service
.SH SYNOPSIS
.B warpd
.RI [ options ]
.SH DESCRIPTION
.B warpd
keeps C++ templates for warp shuffles, votes, matches,
.B redux.sync
and the reductions and scans built from them.
It specializes them by logical warp width, member mask, element type and operator,
compiles each specialization on demand with NVRTC, caches the cubins in memory and on disk,
and runs jobs sent over HTTP/JSON: on a GPU through the CUDA Driver API, or, with no GPU,
on an exact CPU emulator that also says which lanes CUDA leaves undefined.
.PP
It listens on loopback (127.0.0.1:8080) unless told otherwise.
.B GET /v1/openapi.json
describes every route;
.B GET /
serves the playground.
.SH OPTIONS
ROFF

# "  --flag ARG   text" starts an option; a line indented further continues its text.
"$bin" --help | awk '
function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
function text(s) { gsub(/\\/, "\\e", s); sub(/^[.'"'"']/, "\\\\\\&&", s); return s }
/^  -/ {
  line = substr($0, 3)
  n = match(line, /  +/)
  if (n) { head = substr(line, 1, n - 1); rest = substr(line, n); sub(/^ +/, "", rest) }
  else { head = line; rest = "" }
  print ".TP"
  k = split(head, w, " ")
  out = ""
  for (i = 1; i <= k; i++) {
    word = w[i]
    if (word ~ /^-/) out = out (out == "" ? "" : " ") "\\fB" esc(word) "\\fR"
    else out = out " \\fI" esc(word) "\\fR"
  }
  print out
  if (rest != "") print text(rest)
  next
}
/^      +/ { s = $0; sub(/^ +/, "", s); print text(s); next }
'

cat <<ROFF
.SH FILES
.TP
.I /etc/default/warpd
.B WARPD_OPTS
(the flags above) and the environment for
.BR warpd.service .
.TP
.I /var/cache/warpd
compiled kernels, as
.BR warpd.service
runs it: one file per specialization, named by its SHA\\-256, written to a temporary name and renamed.
.TP
.I /usr/share/warpd/templates
the CUDA templates NVRTC compiles.
.TP
.I /usr/share/warpd/web
the playground and the OpenAPI document.
.TP
.I /dev/shm
the shared\-memory objects clients register with
.B POST /v1/shm
(their names begin with the
.B \-\-shm\-prefix
value).
.B warpd.service
runs as a dynamic user in the group
.BR warpd\-shm ,
made by the package: it opens an object of that group with mode 0660
(see README.Debian).
.SH ENVIRONMENT
.TP
.B CUDA_HOME
the CUDA toolkit whose headers NVRTC reads (default
.IR /usr/local/cuda ).
.TP
.B XDG_CACHE_HOME
the default cache directory is
.I \$XDG_CACHE_HOME/warpd
(else
.IR ~/.cache/warpd ).
.SH NOTES
NVRTC (libnvrtc.so.13) comes from NVIDIA's CUDA 13 toolkit and is found in
.I /usr/local/cuda/lib64
or the dynamic linker's usual paths; without it warpd does not start.
libcuda.so.1 is optional: without it, or without a GPU, every request runs on the emulator.
.SH SEE ALSO
.BR systemctl (1),
.BR systemd.exec (5),
.I /usr/share/doc/warpd/README.Debian
ROFF
