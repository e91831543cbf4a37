#!/bin/bash
# Install what po2zfs needs on Debian 12, from Debian's packages only.
#   contrib/install-deps.sh          build and run (the quick start's main job)
#   contrib/install-deps.sh --test   also everything the test suite needs
set -euo pipefail

pkgs=(build-essential cmake pkg-config libfuse3-dev fuse3 liburing-dev
      libnvme-dev libjson-c-dev libzbd-dev attr)
if [ "${1:-}" = --test ]; then
	pkgs+=(check valgrind clang libclang-rt-14-dev clang-format groff-base fio
	       python3 shellcheck
	       qemu-system-x86 busybox-static cpio kmod xz-utils zstd nvme-cli
	       f2fs-tools btrfs-progs
	       util-linux mount debootstrap lintian)
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# FUSE needs the character device; containers sometimes lack the node.
if [ ! -c /dev/fuse ]; then
	modprobe fuse 2>/dev/null || true
	[ -c /dev/fuse ] || mknod -m 0666 /dev/fuse c 10 229 2>/dev/null || true
fi
