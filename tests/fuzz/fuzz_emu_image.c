// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Emulated image parser: the input becomes an image file, which
 * p2z_emu_check_image() must refuse with a reason or accept; an accepted
 * image is then opened as a device, read-only, and its zones reported.
 * Input:
 *   [0]      flags: bit 0 recompute the header CRC (else a mutated header
 *            never gets past it), bit 1 extend the file (sparse) to the
 *            size its header asks for, bit 2 open the image as a device
 *   [1..88]  the 88-byte header, at offset 0 of the image
 *   [89..]   the zone table, at offset 4096 (16 bytes per zone)
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "po2zfs/dev.h"
#include "po2zfs/emu.h"
#include "emu_priv.h"

#include "fuzz_common.h"

#define FUZZ_HDR_LEN 88
#define FUZZ_CRC_OFS 84
#define FUZZ_TABLE_OFS 4096
#define FUZZ_MAX_FILE (64ULL << 30)

static char fuzz_path[64];

static uint64_t fuzz_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The file size the header asks for, 0 if past FUZZ_MAX_FILE. */
static uint64_t fuzz_file_bytes(const uint8_t *hdr)
{
	uint64_t lba = hdr[12] | hdr[13] << 8 | (uint64_t)hdr[14] << 16 |
		       (uint64_t)hdr[15] << 24;
	uint64_t zone_lba = fuzz_le64(hdr + 16), nr = fuzz_le64(hdr + 32);
	uint64_t zone, data, table;

	if (nr > (1U << 20) || __builtin_mul_overflow(zone_lba, lba, &zone) ||
	    __builtin_mul_overflow(zone, nr, &data))
		return 0;
	table = (FUZZ_TABLE_OFS + nr * 16 + (1U << 20) - 1) &
		~((1ULL << 20) - 1);
	return data + table > FUZZ_MAX_FILE ? 0 : data + table;
}

static void fuzz_open_dev(void)
{
	struct p2z_zone_info zi[16];
	struct p2z_dev *dev;
	int ret;

	if (p2z_dev_open(fuzz_path, "emu", P2Z_DEV_RDONLY | P2Z_DEV_PEEK, &dev))
		return;
	ret = p2z_dev_report_zones(dev, 0, 16, zi);
	P2Z_FUZZ_ASSERT(ret <= 16);
	p2z_dev_close(dev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[FUZZ_HDR_LEN] = { 0 };
	struct p2z_emu_params p;
	char why[256] = "";
	uint64_t want;
	uint32_t crc;
	int fd, ret;

	if (!size || size > (1U << 20))
		return 0;
	if (!fuzz_path[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_path, sizeof(fuzz_path), "%.40s/p2zfuzzXXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		fd = mkstemp(fuzz_path);
		P2Z_FUZZ_ASSERT(fd >= 0);
		close(fd);
	}
	memcpy(hdr, data + 1,
	       size - 1 < FUZZ_HDR_LEN ? size - 1 : FUZZ_HDR_LEN);
	if (data[0] & 1) {
		crc = p2z_emu_crc32c(hdr, FUZZ_CRC_OFS);
		memcpy(hdr + FUZZ_CRC_OFS, &crc, 4); /* host is little endian */
	}
	fd = open(fuzz_path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	P2Z_FUZZ_ASSERT(fd >= 0);
	P2Z_FUZZ_ASSERT(
		pwrite(fd, hdr,
		       size - 1 < FUZZ_HDR_LEN ? size - 1 : FUZZ_HDR_LEN,
		       0) >= 0);
	if (size > 1 + FUZZ_HDR_LEN)
		P2Z_FUZZ_ASSERT(pwrite(fd, data + 1 + FUZZ_HDR_LEN,
				       size - 1 - FUZZ_HDR_LEN,
				       FUZZ_TABLE_OFS) >= 0);
	want = fuzz_file_bytes(hdr);
	if ((data[0] & 2) && want)
		P2Z_FUZZ_ASSERT(!ftruncate(fd, (off_t)want));
	close(fd);

	ret = p2z_emu_check_image(fuzz_path, &p, why, sizeof(why));
	if (getenv("P2Z_FUZZ_VERBOSE"))
		fprintf(stderr, "check_image: %d %s\n", ret, why);
	/* A refusal says why, and is one of the documented errors. */
	P2Z_FUZZ_ASSERT(!ret || why[0]);
	P2Z_FUZZ_ASSERT(!ret || ret == -EINVAL || ret == -EUCLEAN);
	if (!ret) {
		P2Z_FUZZ_ASSERT(p.nr_zones && p.cap_bytes <= p.zone_bytes);
		if (data[0] & 4)
			fuzz_open_dev();
	}
	return 0;
}
