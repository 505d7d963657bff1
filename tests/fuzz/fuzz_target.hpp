// The one entry point every fuzz target defines (libFuzzer's). The same source is compiled twice:
// by clang with -fsanitize=fuzzer,address,undefined into a fuzzer (scripts/fuzz), and by the
// normal build into a program that runs every seed and every committed regression input through
// it (seed_runner.cpp, a ctest test), so a fixed crash stays tested in ordinary CI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace kernelwatch::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A broken invariant the sanitizers would not see: abort, so the fuzzer records a crash and the
// seed runner fails.
[[noreturn]] void invariant_failed(const char* what);

}  // namespace kernelwatch::fuzz
