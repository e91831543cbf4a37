/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the two halves of the nvme backend share: dev_nvme.c (I/O, zone
 * reports, open) and nvme_identify.c (the namespace's geometry and limits
 * from Identify). Not an interface: nothing else includes it.
 */
#ifndef PO2ZFS_NVME_PRIV_H
#define PO2ZFS_NVME_PRIV_H

#include <limits.h>
#include <stdint.h>

#include "po2zfs/dev.h"
#include "po2zfs/nvme_path.h"
#include "uring.h"

/* Ring size; also the number of read pieces in flight at once. */
#define P2Z_NVME_QD 16

/*
 * Linux supports only controllers whose minimum memory page size is 4 KiB
 * (nvme_enable_ctrl() refuses larger ones; the spec allows no smaller), so
 * MDTS and ZASL, both in units of CAP.MPSMIN, are in units of 4 KiB.
 */
#define P2Z_NVME_MPSMIN 4096U

/* The NVMe status in a positive cqe->res, without the More and DNR bits. */
#define P2Z_NVME_STATUS_MASK 0x7ff

/* NLB is a 0-based 16-bit field of CDW12. */
#define P2Z_NVME_MAX_NLB 65536U

/* Force Unit Access: CDW12 bit 30 of Write and Zone Append. */
#define P2Z_NVME_CDW12_FUA (1U << 30)

/**
 * struct p2z_nvme - an open ZNS namespace
 * @dev: generic part, first
 * @np: the namespace: generic device, its claim, nsid
 * @fd: np.fd, the generic char device
 * @ng: its path, for messages
 * @nsid: namespace id, from NVME_IOCTL_ID
 * @nr_lba: zones x zone size, the addressable LBAs
 * @cap_lba: capacity of each zone as its last report gave it, the zone
 *	     size until then; read and written with relaxed atomics
 * @rings: one SQE128|CQE32 ring per calling thread
 */
struct p2z_nvme {
	struct p2z_dev dev;
	struct p2z_nvme_path np;
	int fd;
	char ng[PATH_MAX];
	uint32_t nsid;
	uint64_t nr_lba;
	uint32_t dma_mask; /* p2z_nvme_path_dma_mask() */
	uint64_t *cap_lba;
	struct p2z_rings rings;
};

/**
 * struct p2z_nvme_cmd - one NVMe I/O command
 * @opcode: NVMe opcode
 * @slba: CDW10/11
 * @cdw12: CDW12 (NLB and flags, or NUMD for a report)
 * @cdw13: CDW13 (zone action)
 * @buf: data buffer or NULL
 * @len: bytes at @buf
 */
struct p2z_nvme_cmd {
	uint8_t opcode;
	uint64_t slba;
	uint32_t cdw12;
	uint32_t cdw13;
	void *buf;
	uint32_t len;
};

static inline struct p2z_nvme *P2Z_NVME(struct p2z_dev *dev)
{
	return container_of(dev, struct p2z_nvme, dev);
}

/* nvme_identify.c */

/**
 * p2z_nvme_identify() - fill the device's geometry and limits from Identify
 * @nv: the namespace, its generic device open
 * @w: where the user's path led (sysfs disk, transfer limits)
 *
 * Return: 0, or -errno after one line saying why.
 */
int p2z_nvme_identify(struct p2z_nvme *nv, const struct p2z_nvme_path *w);

#endif /* PO2ZFS_NVME_PRIV_H */
