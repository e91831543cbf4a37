/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the Check suites of tests/unit/ share: the table size macro, the
 * short-run switch, per-test temporary directories and the runner main()
 * calls. Header-only, so each suite stays one executable.
 */
#ifndef P2Z_CHECK_H
#define P2Z_CHECK_H

#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* P2Z_SHORT=1 (valgrind) asks for shorter loops. */
static inline bool p2z_check_short_run(void)
{
	const char *s = getenv("P2Z_SHORT");

	return s && *s && strcmp(s, "0");
}

/*
 * Whether this build runs under ThreadSanitizer, whose instrumentation
 * makes a single-stepped (ptrace) run take many times the instructions.
 */
static inline bool p2z_check_tsan(void)
{
#if defined(__SANITIZE_THREAD__)
	return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

/* Create "$TMPDIR/@name.XXXXXX" (/tmp without TMPDIR) into @dir. */
static inline void p2z_check_mkdtemp(char *dir, size_t size, const char *name)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, size, "%s/%s.XXXXXX", t && *t ? t : "/tmp", name);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Remove @dir and the files in it (no subdirectories). */
static inline void p2z_check_rmdtemp(const char *dir)
{
	char path[PATH_MAX + 300];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		remove(path);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Run one suite; CK_VERBOSITY picks the output (normal when unset) and
 * CK_FORK=no runs in-process (valgrind). Return: main()'s exit status.
 */
static inline int p2z_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int nr_failed;

	srunner_run_all(sr, CK_ENV);
	nr_failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nr_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* P2Z_CHECK_H */
