# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): runs on the staged tree after
# `cmake --install` put the project's files under <staging>/usr, and adds what only the Debian
# package has. Inputs: CPACK_TEMPORARY_INSTALL_DIRECTORY, CPACK_PACKAGE_VERSION,
# CPACK_DEBIAN_PACKAGE_MAINTAINER, CPACK_KERNELWATCH_SOURCE_DIR, CPACK_KERNELWATCH_DATE.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
set(src "${CPACK_KERNELWATCH_SOURCE_DIR}")
if(NOT EXISTS "${root}/usr/bin/kernelwatch")
  message(FATAL_ERROR "stage.cmake: no ${root}/usr/bin/kernelwatch (the staged install)")
endif()

# The unit where Debian 12's packages put units, naming the /usr paths the package uses.
file(READ "${root}/usr/lib/systemd/system/kernelwatch.service" unit)
string(REPLACE "/usr/local/" "/usr/" unit "${unit}")
file(REMOVE_RECURSE "${root}/usr/lib/systemd")
file(GLOB left "${root}/usr/lib/*")
if(NOT left)
  file(REMOVE_RECURSE "${root}/usr/lib")
endif()
file(MAKE_DIRECTORY "${root}/lib/systemd/system")
file(WRITE "${root}/lib/systemd/system/kernelwatch.service" "${unit}")

# The config (a conffile: dpkg keeps the operator's edits on upgrade) is the CPU example, which
# starts on any host; the postinst gives it group kernelwatch and mode 0640.
file(MAKE_DIRECTORY "${root}/etc/kernelwatch")
file(COPY_FILE "${src}/config/kernelwatch.example.json" "${root}/etc/kernelwatch/kernelwatch.json")
# The state directory (the postinst makes it the service user's, mode 0750).
file(MAKE_DIRECTORY "${root}/var/lib/kernelwatch")

# Debian's documentation: copyright, the changelog of a native package (gzip -9n), the man page.
set(doc "${root}/usr/share/doc/kernelwatch")
file(COPY_FILE "${src}/packaging/deb/copyright" "${doc}/copyright")
set(date "${CPACK_KERNELWATCH_DATE}")
if(date STREQUAL "")
  string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
file(WRITE "${doc}/changelog"
  "kernelwatch (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
  "  * Built from the kernelwatch sources by CPack (packaging/package.cmake).\n\n"
  " -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}\n")
file(MAKE_DIRECTORY "${root}/usr/share/man/man1")
file(COPY_FILE "${src}/packaging/deb/kernelwatch.1" "${root}/usr/share/man/man1/kernelwatch.1")
foreach(file "${doc}/changelog" "${root}/usr/share/man/man1/kernelwatch.1")
  execute_process(COMMAND gzip -9nf "${file}" RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "stage.cmake: gzip ${file} failed")
  endif()
endforeach()

# Debian's modes: 0644 for data, 0755 for directories and programs, whatever the umask was.
file(GLOB_RECURSE staged LIST_DIRECTORIES true "${root}/*")
foreach(path IN LISTS staged)
  if(IS_DIRECTORY "${path}" OR path STREQUAL "${root}/usr/bin/kernelwatch")
    file(CHMOD "${path}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
      GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  else()
    file(CHMOD "${path}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
endforeach()
