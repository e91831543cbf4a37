// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * p2z_vm_raw - raw NVMe access for the device tests, sharing no code with
 * po2zfs: plain NVME_IOCTL_* ioctls on a namespace's generic or block
 * device, so what it reads is what the device holds.
 *
 *   p2z_vm_raw nsid DEV                 print the namespace id
 *   p2z_vm_raw lbs DEV                  print the LBA size in bytes
 *   p2z_vm_raw read DEV SLBA BYTES      read to stdout
 *
 * Exit 0 on success, 1 on failure (with a message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Below every transfer limit the guest's devices have (124 KiB). */
#define RAW_CHUNK (64 * 1024)

static int raw_nsid(int fd, const char *dev, uint32_t *nsid)
{
	int ret = ioctl(fd, NVME_IOCTL_ID);

	if (ret <= 0) {
		fprintf(stderr, "%s: NVME_IOCTL_ID: %s\n", dev,
			ret < 0 ? strerror(errno) : "no namespace");
		return -1;
	}
	*nsid = ret;
	return 0;
}

static int raw_lbs(int fd, const char *dev, uint32_t nsid, uint32_t *lbs)
{
	struct nvme_admin_cmd c;
	uint8_t *id;
	unsigned int fmt;
	int ret;

	id = aligned_alloc(4096, 4096);
	if (!id)
		return -1;
	memset(id, 0, 4096);
	memset(&c, 0, sizeof(c));
	c.opcode = 0x06; /* Identify */
	c.nsid = nsid;
	c.addr = (uintptr_t)id;
	c.data_len = 4096;
	c.cdw10 = 0; /* CNS 0: namespace */
	ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);
	if (ret) {
		fprintf(stderr, "%s: identify namespace: %s\n", dev,
			ret < 0 ? strerror(errno) : "NVMe error");
		free(id);
		return -1;
	}
	/* FLBAS bits 3:0 and 6:5 select the format; LBADS is byte 2 of it. */
	fmt = (id[26] & 0xf) | ((id[26] >> 5) & 0x3) << 4;
	*lbs = 1U << id[128 + 4 * fmt + 2];
	free(id);
	return 0;
}

static int raw_read(int fd, const char *dev, uint32_t nsid, uint32_t lbs,
		    uint64_t slba, uint64_t bytes)
{
	struct nvme_passthru_cmd c;
	uint8_t *buf;
	int ret = 0;

	if (bytes % lbs) {
		fprintf(stderr, "%s: %" PRIu64 " bytes: not whole LBAs\n", dev,
			bytes);
		return -1;
	}
	buf = aligned_alloc(4096, RAW_CHUNK);
	if (!buf)
		return -1;
	while (bytes && !ret) {
		uint32_t n = bytes < RAW_CHUNK ? bytes : RAW_CHUNK;

		memset(&c, 0, sizeof(c));
		c.opcode = 0x02; /* Read */
		c.nsid = nsid;
		c.addr = (uintptr_t)buf;
		c.data_len = n;
		c.cdw10 = (uint32_t)slba;
		c.cdw11 = (uint32_t)(slba >> 32);
		c.cdw12 = n / lbs - 1;
		ret = ioctl(fd, NVME_IOCTL_IO_CMD, &c);
		if (ret) {
			fprintf(stderr, "%s: read LBA %" PRIu64 ": %s (%d)\n",
				dev, slba,
				ret < 0 ? strerror(errno) : "NVMe status", ret);
			break;
		}
		if (fwrite(buf, 1, n, stdout) != n) {
			perror("stdout");
			ret = -1;
		}
		slba += n / lbs;
		bytes -= n;
	}
	free(buf);
	return ret ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint32_t nsid, lbs;
	int fd, ret = -1;

	if (argc < 3 || (!strcmp(argv[1], "read") && argc != 5)) {
		fprintf(stderr,
			"usage: %s nsid|lbs DEV | read DEV SLBA BYTES\n",
			argv[0]);
		return 1;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	if (raw_nsid(fd, argv[2], &nsid))
		goto out;
	if (!strcmp(argv[1], "nsid")) {
		printf("%u\n", nsid);
		ret = 0;
	} else if (raw_lbs(fd, argv[2], nsid, &lbs)) {
		goto out;
	} else if (!strcmp(argv[1], "lbs")) {
		printf("%u\n", lbs);
		ret = 0;
	} else if (!strcmp(argv[1], "read")) {
		ret = raw_read(fd, argv[2], nsid, lbs,
			       strtoull(argv[3], NULL, 0),
			       strtoull(argv[4], NULL, 0));
	} else {
		fprintf(stderr, "%s: unknown command %s\n", argv[0], argv[1]);
	}
out:
	close(fd);
	return ret ? 1 : 0;
}
