#!/usr/bin/env bash
# Builds ringfire's and etcd's images without a container engine, as image
# archives that `ctr images import` and `kind load image-archive` take:
#
#   e2e/node/images.sh OUTDIR [TAG]
#
#   OUTDIR/ringfire.tar   ringfire.local/ringfire:TAG   bin/ringfire (static, CGO off) as /ringfire,
#                                                       entrypoint /ringfire, user 65532
#   OUTDIR/etcd.tar       ringfire.local/etcd:VERSION   the pinned etcd of e2e/tools as
#                                                       /usr/local/bin/etcd (the manifests call `etcd`)
#
# TAG defaults to `e2e`. The image names are printed, one per line, after the
# build (NAME ARCHIVE). Same inputs, same image digests (mkimage writes the
# layers with fixed timestamps), so a second load of an unchanged image is a
# no-op for containerd.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:?usage: images.sh OUTDIR [TAG]}"
tag="${2:-e2e}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

bin="$("$here/build.sh" | tail -n 1)"
etcd_version="v$("$bin/etcd" --version | awk '/^etcd Version:/ {print $3}')"

(cd "$repo" && CGO_ENABLED=0 go build -trimpath \
	-ldflags "-s -w -X github.com/ringfire/ringfire/internal/version.stamped=$tag" \
	-o "$out/ringfire" ./cmd/ringfire)

"$bin/mkimage" -name "ringfire.local/ringfire:$tag" -out "$out/ringfire.tar" \
	-file /ringfire="$out/ringfire" -entrypoint /ringfire -user 65532:65532
"$bin/mkimage" -name "ringfire.local/etcd:$etcd_version" -out "$out/etcd.tar" \
	-file /usr/local/bin/etcd="$bin/etcd" -user 65532:65532

echo "ringfire.local/ringfire:$tag $out/ringfire.tar"
echo "ringfire.local/etcd:$etcd_version $out/etcd.tar"
