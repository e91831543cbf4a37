# SPDX-License-Identifier: GPL-2.0-or-later
# Install step (install(CODE) includes this): the mount(8) helper
# ${P2Z_HELPER_DIR}/mount.po2zfs, a relative symlink to the installed po2zfs.
# Runs at install time, so that "cmake --install --prefix P" and DESTDIR are
# honoured. Input: P2Z_HELPER_DIR (absolute), P2Z_SBINDIR (relative to the
# prefix, or absolute), CMAKE_INSTALL_PREFIX (set by cmake --install).
#
# The link climbs to "/" with one ".." more than the helper directory is
# deep: ".." stops at "/", so the link resolves the same whether /sbin is a
# directory or, on a merged /usr (Debian 12), a symlink to usr/sbin, one
# level deeper: /sbin/mount.po2zfs -> ../../usr/local/sbin/po2zfs.
if(IS_ABSOLUTE "${P2Z_SBINDIR}")
	set(sbindir "${P2Z_SBINDIR}")
else()
	set(sbindir "${CMAKE_INSTALL_PREFIX}/${P2Z_SBINDIR}")
endif()
string(REGEX REPLACE "/+" "/" sbindir "${sbindir}")
string(REGEX REPLACE "(.)/$" "\\1" sbindir "${sbindir}")
string(REGEX REPLACE "/+" "/" hdir "${P2Z_HELPER_DIR}")
string(REGEX REPLACE "(.)/$" "\\1" hdir "${hdir}")
if(hdir STREQUAL sbindir)
	set(target po2zfs)
else()
	string(REGEX MATCHALL "[^/]+" parts "${hdir}")
	set(target "../")
	foreach(part IN LISTS parts)
		string(APPEND target "../")
	endforeach()
	string(REGEX REPLACE "^/+" "" rel "${sbindir}")
	string(APPEND target "${rel}/po2zfs")
endif()
set(d "$ENV{DESTDIR}${hdir}")
file(MAKE_DIRECTORY "${d}")
message(STATUS "Installing: ${d}/mount.po2zfs -> ${target}")
file(CREATE_LINK "${target}" "${d}/mount.po2zfs" SYMBOLIC)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${hdir}/mount.po2zfs")
