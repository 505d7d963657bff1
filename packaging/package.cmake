# The Debian package, kernelwatch_<version>_<arch>.deb, built by CPack's DEB generator from the
# same install rules as `cmake --install` (binary, unit, example configs, docs), with prefix /usr;
# stage.cmake then adds what only the package has (the unit in /lib/systemd/system pointing at
# /usr, /etc/kernelwatch/kernelwatch.json as a conffile, /var/lib/kernelwatch, the man page,
# copyright and changelog). `cmake --build --preset default --target deb` writes it to
# build/default/package/. Included from the top-level CMakeLists.txt (CPack writes its config
# next to the top-level build).
set(KERNELWATCH_PACKAGE_MAINTAINER "kernelwatch developers <dev@kernelwatch.invalid>"
  CACHE STRING "Maintainer field of the Debian package")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kernelwatch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR kernelwatch)
set(CPACK_PACKAGE_CONTACT "${KERNELWATCH_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_OUTPUT_FILE_PREFIX package)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KERNELWATCH_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries' packages (libc6, libssl3, libsqlite3-0, libsystemd0, ...) from
# dpkg-shlibdeps; adduser for the postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus-alertmanager, prometheus, python3")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "GPU kernel performance-regression watcher
kernelwatch reruns GPU kernels (its own TVD and LayerNorm kernels, and
Liger-Kernel's and PyTorch's benchmarks) on a schedule, records every run in
SQLite as a kernelindex.dev record, compares each new median with the
historic band of comparable runs, confirms a breach by rerunning, and alerts
through Slack, signed webhooks and Alertmanager. Without a GPU it runs the
same pipeline on CPU reference kernels.
.
This package runs it as the systemd service kernelwatch.service under the
system user kernelwatch (a member of the GPU device group), with its config
in /etc/kernelwatch and its database in /var/lib/kernelwatch.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_LIST_DIR}/deb/conffiles ${CMAKE_CURRENT_LIST_DIR}/deb/postinst
  ${CMAKE_CURRENT_LIST_DIR}/deb/prerm ${CMAKE_CURRENT_LIST_DIR}/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/stage.cmake)
# What stage.cmake needs: the sources, and the changelog's date (the commit's, so that the same
# commit builds the same package).
set(CPACK_KERNELWATCH_SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(CPACK_KERNELWATCH_DATE "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%cD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE CPACK_KERNELWATCH_DATE
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
include(CPack)

# The package alone (the default `package` target would build the tests too).
add_custom_target(deb
  COMMAND ${CMAKE_CPACK_COMMAND} -G DEB --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Building package/kernelwatch_${PROJECT_VERSION}_<arch>.deb"
  VERBATIM)
add_dependencies(deb kernelwatch)
