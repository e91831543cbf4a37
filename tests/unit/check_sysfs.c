// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Strict sysfs numbers: digits only. strtoull(3) took "-1" (as UINT64_MAX)
 * and leading blanks, which turned a broken queue attribute into a huge
 * transfer limit (found by tests/fuzz/fuzz_nvme_path).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p2z_check.h"
#include "po2zfs/sysfs.h"

struct parse_case {
	const char *s;
	int ret;
	uint64_t v;
};

static const struct parse_case parse_cases[] = {
	{ "0", 0, 0 },
	{ "128", 0, 128 },
	{ "007", 0, 7 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", -EINVAL, 0 },
	{ "99999999999999999999", -EINVAL, 0 },
	{ "", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ " 128", -EINVAL, 0 },
	{ "\t8", -EINVAL, 0 },
	{ "12 ", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 },
	{ "1e3", -EINVAL, 0 },
	{ "host-managed", -EINVAL, 0 },
};

START_TEST(test_p2z_sysfs_parse_u64_table)
{
	const struct parse_case *c = &parse_cases[_i];
	uint64_t v = 12345;
	int ret;

	ret = p2z_sysfs_parse_u64(c->s, &v);
	ck_assert_msg(ret == c->ret, "\"%s\": %d, expected %d", c->s, ret,
		      c->ret);
	ck_assert_uint_eq(v, c->ret ? 12345 : c->v);
}
END_TEST

struct file_case {
	const char *contents;
	int ret;
	uint64_t v;
};

/* As the kernel writes attributes: a trailing newline. */
static const struct file_case file_cases[] = {
	{ "512\n", 0, 512 },	    { "4096", 0, 4096 },
	{ "4096 \n", 0, 4096 },	    { "-1\n", -EINVAL, 0 },
	{ " 127\n", -EINVAL, 0 },   { "\n", -EINVAL, 0 },
	{ "12\n34\n", -EINVAL, 0 },
};

START_TEST(test_p2z_sysfs_u64_file)
{
	const struct file_case *c = &file_cases[_i];
	char dir[] = "/tmp/check_sysfs.XXXXXX", path[64];
	uint64_t v = 0;
	int fd, ret;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/attr", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, c->contents, strlen(c->contents)),
			 (int)strlen(c->contents));
	close(fd);
	ret = p2z_sysfs_u64(dir, "attr", &v);
	ck_assert_int_eq(ret, c->ret);
	if (!ret)
		ck_assert_uint_eq(v, c->v);
	ck_assert_int_eq(p2z_sysfs_u64(dir, "missing", &v), -ENOENT);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *sysfs_suite(void)
{
	Suite *s = suite_create("sysfs");
	TCase *tc;

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_p2z_sysfs_parse_u64_table, 0,
			    sizeof(parse_cases) / sizeof(parse_cases[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("file");
	tcase_add_loop_test(tc, test_p2z_sysfs_u64_file, 0,
			    sizeof(file_cases) / sizeof(file_cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return p2z_check_run(sysfs_suite());
}
