/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the synchronous dispatcher (dev.c) shares with the asynchronous
 * one (dev_queue.c): the statistics and the split-append landing check.
 */
#ifndef P2Z_DEV_PRIV_H
#define P2Z_DEV_PRIV_H

#include "po2zfs/dev.h"

/**
 * p2z_dev_count() - count one request in dev->stats
 * @dev: device
 * @op: enum p2z_dev_stat_op
 * @t0: p2z_stat_now() when it started
 * @ret: its result
 *
 * Return: @ret.
 */
ssize_t p2z_dev_count(struct p2z_dev *dev, unsigned int op, uint64_t t0,
		      ssize_t ret);

/**
 * p2z_dev_append_strayed() - log a piece of a split append that did not
 *			      land right after the previous one
 * @dev: device
 * @zidx: zone
 * @expect_lba: where it should have landed
 * @got_lba: where it did
 *
 * Return: -EIO.
 */
ssize_t p2z_dev_append_strayed(struct p2z_dev *dev, uint64_t zidx,
			       uint64_t expect_lba, uint64_t got_lba);

#endif
