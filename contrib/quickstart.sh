#!/bin/bash
# The quick start's main job, from a fresh clone on Debian 12, as root:
# install what is missing, build, create an emulated zoned device with
# non-power-of-2 zones (96 MiB zones, 80 MiB capacity), mount it, append a
# log to a zone twice with dd, list the zones, show a zone's attributes,
# unmount. Leaves the build in build/ and the image in /tmp.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

contrib/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2Z_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" -- --no-print-directory >/dev/null

work=$(mktemp -d /tmp/po2zfs-quickstart.XXXXXX)
img=$work/npo2.img
mnt=$work/mnt
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" && fusermount3 -u "$mnt"
	rm -rf "$work"
}
trap cleanup EXIT

set -x
build/po2zfs-emu create "$img" --zone-size 96M --zone-cap 80M --zones 16
build/mount.po2zfs "$img" "$mnt"
ls "$mnt"
printf 'hello, zoned world\n' | dd of="$mnt/seq/0" oflag=append conv=notrunc,sync bs=4096 status=none
printf 'second line\n' | dd of="$mnt/seq/0" oflag=append conv=notrunc,sync bs=4096 status=none
ls -l "$mnt/seq" | head -5
tr -d '\0' < "$mnt/seq/0"
getfattr -d "$mnt/seq/0"
getfattr -d "$mnt"
stat -f "$mnt"
fusermount3 -u "$mnt"
set +x
echo "quickstart: ok"
