# The implementation digest rule (docs/KERNELS.md), checked on cmake/build_info.cmake itself over
# a scratch kernels/ tree: a kernel's digest is the SHA-256 of the manifest "<path> <sha256>\n"
# (sorted by path) of its own folder and the shared sources; adding a kernel, or changing another
# kernel, an oracle or the harness, leaves it as it was; changing a shared source changes all.
# Run: cmake -DSCRIPT=<cmake/build_info.cmake> -DWORK=<scratch dir> -P source_digest_test.cmake
set(src ${WORK}/src)
file(REMOVE_RECURSE ${WORK})
file(WRITE ${src}/kernels/shared.cpp "shared\n")
file(WRITE ${src}/kernels/detail/support.hpp "support\n")
file(WRITE ${src}/kernels/harness/timing.cpp "harness\n")
file(WRITE ${src}/kernels/alpha/alpha_cpu.cpp "alpha\n")
file(WRITE ${src}/kernels/alpha/alpha.cu "alpha cuda\n")
file(WRITE ${src}/kernels/alpha/oracle.cpp "alpha oracle\n")
file(WRITE ${src}/kernels/beta/beta_cpu.cpp "beta\n")

# Runs the generator for `kernels` and sets digest_<name> for each.
function(digests kernels)
  string(REPLACE ";" "," list "${kernels}")
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${src} -DOUTPUT=${WORK}/info.hpp
                          -DVERSION=0.0.0 -DKERNELS=${list} -P ${SCRIPT}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "build_info.cmake failed: ${rc}")
  endif()
  file(READ ${WORK}/info.hpp header)
  foreach(kernel IN LISTS kernels)
    if(NOT header MATCHES "{\"${kernel}\", \"(sha256:[0-9a-f]+)\"}")
      message(FATAL_ERROR "no digest of ${kernel} in:\n${header}")
    endif()
    set(digest_${kernel} ${CMAKE_MATCH_1} PARENT_SCOPE)
  endforeach()
endfunction()

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: got ${actual}, expected ${expected}")
  endif()
endfunction()
function(expect_changed what before after)
  if("${before}" STREQUAL "${after}")
    message(FATAL_ERROR "${what}: the digest did not change (${after})")
  endif()
endfunction()

digests("alpha;beta")
set(alpha ${digest_alpha})
set(beta ${digest_beta})

# The rule, spelled out: alpha's own folder (not its oracle) and the shared sources.
set(manifest "")
foreach(path kernels/alpha/alpha.cu kernels/alpha/alpha_cpu.cpp kernels/detail/support.hpp
        kernels/shared.cpp)
  file(SHA256 ${src}/${path} hash)
  string(APPEND manifest "${path} ${hash}\n")
endforeach()
string(SHA256 expected "${manifest}")
expect("alpha's digest is its manifest's" ${alpha} "sha256:${expected}")

file(WRITE ${src}/kernels/gamma/gamma_cpu.cpp "gamma\n")
digests("alpha;beta;gamma")
expect("adding a kernel leaves alpha" ${digest_alpha} ${alpha})
expect("adding a kernel leaves beta" ${digest_beta} ${beta})

file(WRITE ${src}/kernels/alpha/alpha_cpu.cpp "alpha, faster\n")
digests("alpha;beta;gamma")
expect_changed("changing alpha changes alpha" ${alpha} ${digest_alpha})
expect("changing alpha leaves beta" ${digest_beta} ${beta})
set(alpha ${digest_alpha})
set(gamma ${digest_gamma})

file(WRITE ${src}/kernels/alpha/oracle.cpp "alpha oracle, fixed\n")
file(WRITE ${src}/kernels/harness/timing.cpp "harness, fixed\n")
digests("alpha;beta;gamma")
expect("an oracle or the harness leaves alpha" ${digest_alpha} ${alpha})

file(WRITE ${src}/kernels/detail/support.hpp "support, changed\n")
digests("alpha;beta;gamma")
expect_changed("a shared source changes alpha" ${alpha} ${digest_alpha})
expect_changed("a shared source changes beta" ${beta} ${digest_beta})
expect_changed("a shared source changes gamma" ${gamma} ${digest_gamma})
message(STATUS "source digest rule holds")
