// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount option parser: the input is one -o list. Whatever it holds, the
 * parser returns 0 or -EINVAL (-ENOMEM aside) and leaves the options
 * within their ranges.
 */
#include <errno.h>
#include <string.h>

#include "po2zfs/opts.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct p2z_opts o;
	char *list;
	int ret;

	if (size > 8192)
		return 0;
	list = malloc(size + 1);
	if (!list)
		return 0;
	memcpy(list, data, size);
	list[size] = '\0';
	memset(&o, 0, sizeof(o));
	o.zone.errors = P2Z_ERRORS_REMOUNT_RO;
	o.fs.perm = 0640;
	ret = p2z_opts_parse(&o, list);
	P2Z_FUZZ_ASSERT(!ret || ret == -EINVAL || ret == -ENOMEM);
	P2Z_FUZZ_ASSERT(o.fs.perm <= 0777);
	P2Z_FUZZ_ASSERT(o.zone.errors <= P2Z_ERRORS_REPAIR);
	P2Z_FUZZ_ASSERT(memchr(o.backend, '\0', sizeof(o.backend)));
	P2Z_FUZZ_ASSERT(!o.backend[0] || !strcmp(o.backend, "nvme") ||
			!strcmp(o.backend, "zbd") || !strcmp(o.backend, "emu"));
	P2Z_FUZZ_ASSERT(memchr(o.fuse_opts, '\0', sizeof(o.fuse_opts)));
	free(list);
	return 0;
}
