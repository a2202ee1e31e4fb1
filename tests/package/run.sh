#!/usr/bin/env bash
# Debian package suite: builds the .deb (make deb), checks its fields and contents,
# lintian (no errors, no unused overrides), the man page (groff warnings, every --help flag),
# systemd-analyze verify on the unit (and that it does reject a broken copy), then, as root,
# dpkg -i, the installed binary started by hand on a free loopback port (no init here) with one curl
# per route (routes.py), the service's shared-memory access as its dynamic user would have it (an unused
# uid whose one supplementary group is warpd-shm, under setpriv: a client's object of group warpd-shm
# and mode 0660 registers, one of mode 0600 does not, and without the group neither does),
# dpkg -r (the conffile and the group stay), dpkg --purge (nothing stays but the group) and a second
# install over the kept group. Ends with "package: N passed, N failed". Needs root and an uninstalled
# warpd: it will not replace one. A warpd-shm group this suite made is removed at the end.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass+1)); }
no() { echo "FAIL $*"; fail=$((fail+1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else no "$what"; fi; }
finish() { echo "package: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }
tmp=$(mktemp -d); pid=; installed_by_us=; svc=; group_made=
obj=warpd-pkg-$$ # the shared-memory objects this suite makes: /dev/shm/$obj-*
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$installed_by_us" ] && dpkg --purge warpd >/dev/null 2>&1
  [ -n "$group_made" ] && groupdel warpd-shm 2>/dev/null
  rm -rf "$tmp" ${svc:+"$svc"} /dev/shm/"$obj"-*
}
trap cleanup EXIT

for tool in dpkg-deb dpkg-shlibdeps lintian systemd-analyze man curl python3 setpriv; do
  command -v "$tool" >/dev/null || { no "$tool is missing (make deps installs it)"; finish; }
done
version=$(sed -n 's/^#define WP_VERSION "\(.*\)"/\1/p' server/engine/app.h)
if ! ${MAKE:-make} -s deb BUILD="$BUILD" >"$tmp/make.log" 2>&1; then
  tail -n 30 "$tmp/make.log"; no "make deb"; finish
fi
deb=$(ls -t "$BUILD"/warpd_"$version"-*_"$(dpkg --print-architecture)".deb | head -n 1)
check "make deb built $deb" test -s "$deb"

# ---- the plain tree's hardening flags (Makefile HARDEN): dpkg-buildflags' own, but not its link-time
# optimization, which Ubuntu's asks for and a compiler without lto-wrapper cannot link (the GPU machines')
mkdir -p "$tmp/fakebin"
printf '#!/bin/sh\ncase "$*" in *CPPFLAGS*) echo "-Wdate-time -D_FORTIFY_SOURCE=3" ;;\n*CFLAGS*) echo "-g -O2 -flto=auto -ffat-lto-objects -fstack-protector-strong -fcf-protection" ;; esac\n' \
  >"$tmp/fakebin/dpkg-buildflags"
chmod +x "$tmp/fakebin/dpkg-buildflags"
harden=$(PATH="$tmp/fakebin:$PATH" ${MAKE:-make} --no-print-directory --eval '__harden: ; @echo $(HARDEN)' __harden)
check "HARDEN from an Ubuntu-like dpkg-buildflags: $harden" \
  test "$harden" = "-fstack-protector-strong -fcf-protection -Wdate-time -D_FORTIFY_SOURCE=3"

# ---- the package's fields and files
field() { dpkg-deb -f "$deb" "$1"; }
check "Package: warpd, Version: $version-*" test "$(field Package)" = warpd -a "${deb##*/}" = "warpd_$(field Version)_$(field Architecture).deb"
case $(field Version) in "$version"-*) ok "version from server/engine/app.h ($version)";; *) no "version $(field Version) is not $version-*";; esac
deps=$(field Depends)
for lib in adduser libc6 libcjson1 libmicrohttpd12; do
  case ", $deps," in *", $lib "*|*", $lib,"*) ok "Depends: $lib";; *) no "Depends: $deps lacks $lib";; esac
done
case $deps in *nvrtc*|*cuda*) no "Depends: names NVRTC/CUDA, which Debian does not package: $deps";; *) ok "Depends: no CUDA package";; esac
dpkg-deb -c "$deb" | awk '{print $1, $2, $6}' >"$tmp/contents"
for f in ./usr/sbin/warpd ./usr/share/warpd/templates/reduce.cu ./usr/share/warpd/templates/wp_abi.h \
         ./usr/share/warpd/web/index.html ./usr/share/warpd/web/openapi.json ./usr/share/man/man8/warpd.8.gz \
         ./lib/systemd/system/warpd.service ./etc/default/warpd ./usr/share/doc/warpd/copyright \
         ./usr/share/doc/warpd/changelog.Debian.gz; do
  check "contains $f" grep -q " $f\$" "$tmp/contents"
done
check "every file root:root, no group/world write" \
  sh -c "! awk '\$2 != \"root/root\" || \$1 ~ /^.....w|^........w/' '$tmp/contents' | grep -q ."
dpkg-deb -e "$deb" "$tmp/DEBIAN"
check "conffiles: /etc/default/warpd" grep -qx /etc/default/warpd "$tmp/DEBIAN/conffiles"
check "md5sums lists the binary" grep -q ' usr/sbin/warpd$' "$tmp/DEBIAN/md5sums"

# ---- lintian: no errors; warnings are listed (README in packaging/deb says why each stays)
lintian --fail-on error --pedantic "$deb" >"$tmp/lintian" 2>&1; lrc=$?
sed 's/^/     lintian: /' "$tmp/lintian" | grep -v 'root privileges'
check "lintian: no errors (exit $lrc)" test "$lrc" = 0 -a -z "$(grep '^E:' "$tmp/lintian")"
check "lintian: every override still needed" sh -c "! grep -q 'unused-override\|mismatched-override' '$tmp/lintian'"

# ---- the man page
dpkg-deb -x "$deb" "$tmp/root"
LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$tmp/root/usr/share/man/man8/warpd.8.gz" \
  >/dev/null 2>"$tmp/man.err"
check "man warpd: no groff warnings" test ! -s "$tmp/man.err"
zcat "$tmp/root/usr/share/man/man8/warpd.8.gz" | sed 's/\\-/-/g' >"$tmp/man.txt"
missing=$("$BUILD/warpd" --help | grep -oE '^  --[a-z-]+' | tr -d ' ' | while read -r flag; do
  grep -q -- "fB$flag" "$tmp/man.txt" || echo "$flag"; done)
check "man warpd: every flag of --help${missing:+ (missing: $missing)}" test -z "$missing"

# ---- the unit: its settings, and systemd-analyze verify. verify checks the ExecStart binary and the
# Documentation= man page exist, so it runs on the installed unit (below); here, that it is not a
# no-op in this container: a misspelt directive is reported.
unit=$tmp/root/lib/systemd/system/warpd.service
for want in DynamicUser=yes SupplementaryGroups=warpd-shm CacheDirectory=warpd ProtectSystem=strict NoNewPrivileges=yes \
            EnvironmentFile=-/etc/default/warpd 'ExecStart=/usr/sbin/warpd --cache-dir /var/cache/warpd $WARPD_OPTS'; do
  check "unit: $want" grep -qxF "$want" "$unit"
done
mkdir -p "$tmp/bad" && sed 's/^ProtectSystem=/ProtectSytem=/' "$unit" >"$tmp/bad/warpd.service"
systemd-analyze verify "$tmp/bad/warpd.service" >"$tmp/bad.out" 2>&1
check "systemd-analyze verify reports a misspelt directive" grep -q "ProtectSytem" "$tmp/bad.out"

# ---- install, run, remove (as root, never over a warpd installed by someone else)
if [ "$(id -u)" != 0 ]; then no "dpkg -i needs root (CI runs as root)"; finish; fi
if dpkg-query -W -f='${Status}' warpd 2>/dev/null | grep -q 'ok installed'; then
  no "a warpd package is already installed here: not replacing it"; finish
fi
installed_by_us=1
getent group warpd-shm >/dev/null || group_made=1
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg -i (exit $rc)" test "$rc" = 0
[ "$rc" = 0 ] || { cat "$tmp/dpkg.log"; finish; }
shm_gid=$(getent group warpd-shm | cut -d: -f3)
check "postinst made the system group warpd-shm (gid ${shm_gid:-none})" test -n "$shm_gid" -a "${shm_gid:-1000}" -lt 1000
check "the installed unit: SupplementaryGroups=warpd-shm" grep -qxF SupplementaryGroups=warpd-shm /lib/systemd/system/warpd.service
check "dpkg --verify warpd: files match md5sums" sh -c '[ -z "$(dpkg --verify warpd)" ]'
systemd-analyze verify /lib/systemd/system/warpd.service >"$tmp/verify.out" 2>&1; rc=$?
[ -s "$tmp/verify.out" ] && sed 's/^/     verify: /' "$tmp/verify.out"
check "systemd-analyze verify warpd.service: clean (exit $rc)" test "$rc" = 0 -a ! -s "$tmp/verify.out"
check "warpd --version says $version" sh -c "/usr/sbin/warpd --version | grep -qx 'warpd $version'"
check "--help names the installed templates and playground" \
  sh -c "/usr/sbin/warpd --help | grep -q '(default /usr/share/warpd/templates)' && /usr/sbin/warpd --help | grep -q '(default /usr/share/warpd/web)'"

. tests/daemon.sh
if warpd_start /usr/sbin/warpd "$tmp" --backend emu; then
  ok "installed warpd started on 127.0.0.1:$port"
  url=http://127.0.0.1:$port
  curl -sS "$url/" -o "$tmp/index.html"
  check "GET / serves /usr/share/warpd/web/index.html" cmp -s "$tmp/index.html" /usr/share/warpd/web/index.html
  python3 tests/package/routes.py "$url" >"$tmp/routes" 2>&1
  sed 's/^/     /' "$tmp/routes"
  rp=$(sed -nE 's/^routes: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$tmp/routes")
  rf=$(sed -nE 's/^routes: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$tmp/routes")
  check "one curl per route: ${rp:-?} answered as documented" test -n "$rp" -a "${rp:-0}" -gt 0 -a "${rf:-1}" = 0
  kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
  check "SIGTERM: clean exit ($rc)" test "$rc" = 0
else
  cat "$tmp/err"; no "the installed warpd did not start"
fi

# ---- the service's shared-memory access (README.Debian, "Shared memory"). No systemd runs here, so
# the dynamic user is emulated: an unused uid, its own gid, warpd-shm as its one supplementary group
# (SupplementaryGroups=), under setpriv. Objects belong to another user (nobody).
svc_uid=61234
while getent passwd "$svc_uid" >/dev/null || getent group "$svc_uid" >/dev/null; do svc_uid=$((svc_uid + 1)); done
svc=$(mktemp -d) && chown "$svc_uid:$svc_uid" "$svc" # its cache; the daemon's out and err are ours
printf '#!/bin/sh\nexec setpriv --reuid=%s --regid=%s %s /usr/sbin/warpd "$@"\n' "$svc_uid" "$svc_uid" \
  "--groups=$shm_gid" >"$tmp/as-service"
printf '#!/bin/sh\nexec setpriv --reuid=%s --regid=%s --clear-groups /usr/sbin/warpd "$@"\n' "$svc_uid" "$svc_uid" \
  >"$tmp/no-group"
chmod 755 "$tmp/as-service" "$tmp/no-group"
make_object() { # name mode: a 4 KiB object of nobody's, group warpd-shm, f32 1 and 2 at its start
  dd if=/dev/zero of="/dev/shm/$obj-$1" bs=4096 count=1 status=none &&
    printf '\000\000\200\077\000\000\000\100' | dd of="/dev/shm/$obj-$1" conv=notrunc status=none &&
    chown nobody:warpd-shm "/dev/shm/$obj-$1" && chmod "$2" "/dev/shm/$obj-$1"
}
register() { # name: the status of POST /v1/shm, the answer in $tmp/shm.json
  curl -sS -o "$tmp/shm.json" -w '%{http_code}' "$url/v1/shm" -H 'Content-Type: application/json' \
    -d "{\"name\":\"/$obj-$1\"}"
}
make_object group 0660 && make_object private 0600
check "objects of nobody:warpd-shm made, modes 0660 and 0600" \
  test "$(stat -c %U:%G:%a "/dev/shm/$obj-group" "/dev/shm/$obj-private" | tr '\n' ' ')" = "nobody:warpd-shm:660 nobody:warpd-shm:600 "
if warpd_start "$tmp/as-service" "$svc" --backend emu; then
  ok "warpd as uid $svc_uid with supplementary group warpd-shm started on 127.0.0.1:$port"
  url=http://127.0.0.1:$port
  check "as the service: its uid and groups are $svc_uid and warpd-shm only" \
    sh -c "grep -q '^Uid:[[:space:]]$svc_uid[[:space:]]' /proc/$pid/status && grep -qx 'Groups:[[:space:]]*$shm_gid[[:space:]]*' /proc/$pid/status"
  st=$(register group)
  check "as the service: group warpd-shm, mode 0660 -> 201, read-write ($st $(head -c 200 "$tmp/shm.json"))" \
    sh -c "[ '$st' = 201 ] && grep -q '\"read_only\":false' '$tmp/shm.json'"
  id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$tmp/shm.json")
  sum=$(curl -sS "$url/v1/reduce" -H 'Content-Type: application/json' \
    -d "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$id\",\"count\":2}}")
  check "as the service: a reduction over that region (1 + 2 = 3)" sh -c "echo '$sum' | grep -q '\"value\":3[,}]'"
  st=$(register private)
  check "as the service: mode 0600 -> 403 shm_denied ($st)" sh -c "[ '$st' = 403 ] && grep -q '\"code\":\"shm_denied\"' '$tmp/shm.json'"
  kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
  check "as the service: SIGTERM, clean exit ($rc)" test "$rc" = 0
else
  cat "$svc/err"; no "warpd as uid $svc_uid with group warpd-shm did not start"
fi
if warpd_start "$tmp/no-group" "$svc" --backend emu; then
  url=http://127.0.0.1:$port
  st=$(register group)
  check "without the group: mode 0660 -> 403 shm_denied ($st)" sh -c "[ '$st' = 403 ] && grep -q '\"code\":\"shm_denied\"' '$tmp/shm.json'"
  kill -TERM "$pid"; wait "$pid"; pid=
else
  cat "$svc/err"; no "warpd as uid $svc_uid without groups did not start"
fi
check "the objects are untouched (the service never unlinks them)" test -f "/dev/shm/$obj-group" -a -f "/dev/shm/$obj-private"

dpkg -r warpd >"$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg -r (exit $rc)" test "$rc" = 0
check "removed: binary, unit, templates, man page gone" \
  sh -c '! [ -e /usr/sbin/warpd ] && ! [ -e /lib/systemd/system/warpd.service ] && ! [ -e /usr/share/warpd ] && ! [ -e /usr/share/man/man8/warpd.8.gz ]'
check "removed: the conffile stays until purge" test -f /etc/default/warpd
check "removed: the group warpd-shm stays" sh -c "getent group warpd-shm >/dev/null"
dpkg --purge warpd >"$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg --purge (exit $rc)" test "$rc" = 0
check "purged: /etc/default/warpd gone, dpkg knows no warpd" \
  sh -c '! [ -e /etc/default/warpd ] && ! dpkg-query -W -f="\${Status}" warpd 2>/dev/null | grep -q installed'
check "purged: the group warpd-shm stays (gid $shm_gid: clients' objects still name it)" \
  test "$(getent group warpd-shm | cut -d: -f3)" = "$shm_gid"
# Installed again over the kept group: postinst leaves it as it is.
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg -i again, the group already there (exit $rc; gid still $shm_gid)" \
  test "$rc" = 0 -a "$(getent group warpd-shm | cut -d: -f3)" = "$shm_gid"
dpkg --purge warpd >"$tmp/dpkg.log" 2>&1; rc=$?
check "dpkg --purge again (exit $rc)" test "$rc" = 0
installed_by_us=
finish
