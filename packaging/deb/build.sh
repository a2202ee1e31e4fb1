#!/bin/sh
# build.sh BIN DEB_VERSION STAGE OUT.deb — lays out the warpd package in STAGE (emptied first) and
# builds OUT.deb with dpkg-deb. BIN must be built with the installed paths (make deb does that).
# Run from the top of the tree. Layout (Debian policy; a daemon run by root goes in sbin):
#   /usr/sbin/warpd                    stripped, RUNPATH /usr/local/cuda/lib64 (README.Debian says why)
#   /usr/share/warpd/{templates,web}   what the binary was built to read (and prewarm/, when there is one)
#   /usr/share/man/man8/warpd.8.gz     OPTIONS made from --help (manpage.sh)
#   /lib/systemd/system/warpd.service  /etc/default/warpd (conffile)
#   /usr/share/doc/warpd/              copyright, changelog.Debian.gz, README.Debian
set -eu
# The Maintainer: field and the changelog's signature. The tree has no maintainer address yet; the
# default is an RFC 2606 ".invalid" one that says so. Set DEB_MAINTAINER before distributing.
maint=${DEB_MAINTAINER:-warpd developers <maintainers@warpd.invalid>}
bin=$1 version=$2 out=$4
here=packaging/deb
rm -rf "$3" && mkdir -p "$3"
stage=$(cd "$3" && pwd)
root=$stage/root
arch=$(dpkg --print-architecture)
# One date for the changelog and the man page: the last commit's, else now (or SOURCE_DATE_EPOCH).
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

umask 022
install -d "$root/DEBIAN" "$root/usr/sbin" "$root/usr/share/warpd/templates" "$root/usr/share/warpd/web" \
  "$root/usr/share/man/man8" "$root/lib/systemd/system" "$root/etc/default" "$root/usr/share/doc/warpd" \
  "$root/usr/share/lintian/overrides"

install -m 755 "$bin" "$root/usr/sbin/warpd"
strip --remove-section=.comment --remove-section=.note "$root/usr/sbin/warpd"
install -m 644 templates/* kernels/wp_abi.h "$root/usr/share/warpd/templates/"
cp -r clients/web/. "$root/usr/share/warpd/web/"
if [ -d prewarm ]; then # prewarm sets (warpd --prewarm FILE), where the tree has them
  install -d "$root/usr/share/warpd/prewarm" && install -m 644 prewarm/*.json "$root/usr/share/warpd/prewarm/"
fi
find "$root/usr/share/warpd" -type d -exec chmod 755 {} + && find "$root/usr/share/warpd" -type f -exec chmod 644 {} +

"$here/manpage.sh" "$bin" "${version%-*}" "$(date -u -d "@$epoch" +%Y-%m-%d)" >"$stage/warpd.8"
gzip -9n <"$stage/warpd.8" >"$root/usr/share/man/man8/warpd.8.gz"
install -m 644 "$here/warpd.service" "$root/lib/systemd/system/warpd.service"
install -m 644 "$here/default" "$root/etc/default/warpd"
install -m 644 "$here/README.Debian" "$root/usr/share/doc/warpd/"
sed "s|@MAINTAINER@|$maint|" "$here/copyright" >"$root/usr/share/doc/warpd/copyright"
chmod 644 "$root/usr/share/doc/warpd/copyright"
sed -e "s/@VERSION@/$version/" -e "s|@MAINTAINER@|$maint|" -e "s/@DATE@/$(LC_ALL=C date -u -R -d "@$epoch")/" "$here/changelog.in" |
  gzip -9n >"$root/usr/share/doc/warpd/changelog.Debian.gz"
chmod 644 "$root/usr/share/doc/warpd/changelog.Debian.gz" "$root/usr/share/man/man8/warpd.8.gz"
install -m 644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/warpd"

install -m 755 "$here/postinst" "$here/prerm" "$here/postrm" "$root/DEBIAN/"
echo /etc/default/warpd >"$root/DEBIAN/conffiles"

# Depends: from the libraries the binary needs (dpkg-shlibdeps, which wants a debian/control to
# read). libnvrtc is no Debian package's: --ignore-missing-info leaves it out (README.Debian).
mkdir -p "$stage/src/debian"
printf 'Source: warpd\n\nPackage: warpd\nArchitecture: any\n' >"$stage/src/debian/control"
depends=$(cd "$stage/src" && dpkg-shlibdeps -O --ignore-missing-info -e"$root/usr/sbin/warpd" 2>"$stage/shlibdeps.err" |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { cat "$stage/shlibdeps.err" >&2; echo "build.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
grep -v 'libnvrtc' "$stage/shlibdeps.err" >&2 || true

(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/md5sums" "$root/DEBIAN/conffiles"
size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" -e "s|@MAINTAINER@|$maint|" \
  "$here/control.in" >"$root/DEBIAN/control"

mkdir -p "$(dirname "$out")"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "built $out (Depends: $depends)"
