// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Strict reading of sysfs numbers. strtoull(3) takes leading blanks and a
 * sign ("-1" reads as UINT64_MAX), which turned a broken attribute into a
 * huge limit: only digits are taken here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "po2zfs/sysfs.h"

int p2z_sysfs_read(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

int p2z_sysfs_parse_u64(const char *s, uint64_t *v)
{
	uint64_t val = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d = (unsigned char)*s - '0';

		if (d > 9 || val > (UINT64_MAX - d) / 10)
			return -EINVAL;
		val = val * 10 + d;
	}
	*v = val;
	return 0;
}

int p2z_sysfs_u64(const char *dir, const char *file, uint64_t *v)
{
	char path[PATH_MAX], buf[64];
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	ret = p2z_sysfs_read(path, buf, sizeof(buf));
	if (ret)
		return ret;
	return p2z_sysfs_parse_u64(buf, v);
}
