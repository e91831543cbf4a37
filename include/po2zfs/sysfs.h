/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sysfs attributes, read strictly: a number is decimal digits and nothing
 * else (the trailing newline aside), never a sign, blanks or a value past
 * 64 bits that strtoull(3) would clamp or negate.
 */
#ifndef PO2ZFS_SYSFS_H
#define PO2ZFS_SYSFS_H

#include <stddef.h>
#include <stdint.h>

/* sysfs.c */

/**
 * p2z_sysfs_read() - read a sysfs attribute as a string
 * @path: attribute file
 * @buf: gets the contents, NUL-terminated, trailing newlines and blanks cut
 * @size: size of @buf; longer contents are cut to @size - 1 bytes
 *
 * Return: 0 or -errno.
 */
int p2z_sysfs_read(const char *path, char *buf, size_t size);

/**
 * p2z_sysfs_parse_u64() - parse a decimal number, strictly
 * @s: string; digits only
 * @v: gets the value
 *
 * Return: 0, or -EINVAL (empty, a sign, blanks, any other character, or
 * a value above UINT64_MAX).
 */
int p2z_sysfs_parse_u64(const char *s, uint64_t *v);

/**
 * p2z_sysfs_u64() - read a sysfs attribute holding a decimal number
 * @dir: directory of the attribute
 * @file: attribute name, relative to @dir (may hold a '/')
 * @v: gets the value
 *
 * Return: 0, -EINVAL if the attribute is no number (see
 * p2z_sysfs_parse_u64()), -ENAMETOOLONG, or another -errno.
 */
int p2z_sysfs_u64(const char *dir, const char *file, uint64_t *v);

#endif /* PO2ZFS_SYSFS_H */
