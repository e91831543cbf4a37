// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_zonefs_sb - write the 4 KiB super block the kernel's zonefs expects
 * in the first block of its device, as mkzonefs (zonefs-tools, which Debian
 * 12 does not package) would, for the QEMU guests of po2zfs-blk's test
 * (tests/vm/blk.sh) and of the guest benchmark (contrib/bench), which
 * build it with lib.sh's build_zonefs_sb.
 *
 *   p2z_zonefs_sb OUT
 *
 * Layout: struct zonefs_super in Linux fs/zonefs/zonefs.h, little endian:
 * magic, crc32, label[64], uuid[16], features (none), uid, gid, perm 0640.
 * The CRC is the kernel's crc32(~0, sb) (crc32_le, no final inversion) over
 * the block with the CRC field zeroed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define P2Z_ZONEFS_MAGIC 0x5a4f4653u
#define P2Z_ZONEFS_SB_BYTES 4096

static uint32_t p2z_crc32_le(uint32_t crc, const unsigned char *p, size_t n)
{
	int i;

	while (n--) {
		crc ^= *p++;
		for (i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

static void p2z_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

int main(int argc, char **argv)
{
	unsigned char sb[P2Z_ZONEFS_SB_BYTES] = { 0 };
	static const char label[] = "po2zfs-bench";
	int fd, rfd;

	if (argc != 2) {
		fprintf(stderr, "usage: p2z_zonefs_sb OUT\n");
		return 2;
	}
	p2z_put_le32(sb, P2Z_ZONEFS_MAGIC);
	memcpy(sb + 8, label, sizeof(label) - 1);
	/* s_uuid: random, as mkzonefs does; zonefs never checks it */
	rfd = open("/dev/urandom", O_RDONLY);
	if (rfd < 0 || read(rfd, sb + 72, 16) != 16) {
		fprintf(stderr, "p2z_zonefs_sb: /dev/urandom: %s\n",
			strerror(errno));
		return 1;
	}
	close(rfd);
	/* s_features at 88 (none), s_uid 96, s_gid 100 (root), s_perm 104 */
	p2z_put_le32(sb + 104, 0640);
	p2z_put_le32(sb + 4, p2z_crc32_le(~0u, sb, sizeof(sb)));

	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, sb, sizeof(sb)) != (ssize_t)sizeof(sb) ||
	    close(fd)) {
		fprintf(stderr, "p2z_zonefs_sb: %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	return 0;
}
