#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A failed read of a good zone whose size is consistent is only reported
# (EIO): no recovery action under any errors= policy (zonefs.rst).
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/errors.sh"

p2z_init "read error on a good zone: EIO, no policy action"
need_emu "injects faults with po2zfs-emu set-zone"
for mode in remount-ro zone-ro zone-offline repair; do
	p2z_device "$P2Z_GEOM" 4 0
	p2z_mount "errors=$mode"
	k=$MNT/seq/1
	append "$k" 0 $((LBA * 4)) 181
	append "$MNT/seq/2" 0 "$LBA" 182
	p2z_umount
	# a fresh mount: nothing cached, the read goes to the device
	p2z_mount "errors=$mode"
	run_tio_emu set-zone "$DEV" $((NCNV + 1)) fail-next-io
	expect EIO "read hitting the injected fault (errors=$mode)" \
		read "$k" 0 $((LBA * 4)) -d
	# the fault was one-shot and nothing changed
	assert_size "$k" $((LBA * 4)) "errors=$mode, after a read error"
	verify "$k" 0 $((LBA * 4)) 181
	stat_field "$k" mode
	assert_eq 0640 "$REPLY" "mode of seq/1 after a read error (errors=$mode)"
	append "$k" $((LBA * 4)) "$LBA" 181
	append "$MNT/seq/2" "$LBA" "$LBA" 182
	verify "$MNT/seq/2" 0 $((LBA * 2)) 182
	p2z_umount
	info "ok: errors=$mode"
done
exit 0
