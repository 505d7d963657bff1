// The names of kernelwatch's own benchmarks, shared by every module: pass and provider, each with
// its text form and its parser in one place, and the helper that parses any such enum. A kernel
// is named by its own name ("tvd", "layer_norm", "rms_norm"): the catalogue of kernels/ knows
// them, core does not (kernels/catalogue.hpp). Plain C++ over core/error.hpp, no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace kernelwatch::core {

enum class Pass { Forward, Backward, Full };
// kernelwatch's own implementations. Fused: reads each input once where the math allows.
// Reference: a composition of simple passes, the way a framework's composite ops run. Other
// providers (liger, torch, ...) are labels of imported runs, never parsed into this.
enum class Provider { Fused, Reference };

[[nodiscard]] std::string_view to_string(Pass pass) noexcept;          // "forward", ...
[[nodiscard]] std::string_view to_string(Provider provider) noexcept;  // "kernelwatch-fused"

// Every value, in the order messages list them.
inline constexpr Pass kPasses[] = {Pass::Forward, Pass::Backward, Pass::Full};
inline constexpr Provider kProviders[] = {Provider::Fused, Provider::Reference};

// "forward, backward, full": the names of `values` for a message that lists what is accepted.
template <class Enum, std::size_t N>
[[nodiscard]] std::string names_of(const Enum (&values)[N]) {
  std::string out;
  for (const Enum value : values) {
    if (!out.empty()) out += ", ";
    out += to_string(value);
  }
  return out;
}

// The value of `values` whose to_string() is `text`; otherwise InvalidArgument:
// `unknown pass "sideways" (known: forward, backward, full)`, with `what` naming the kind.
template <class Enum, std::size_t N>
[[nodiscard]] Result<Enum> parse_name(std::string_view what, std::string_view text,
                                      const Enum (&values)[N]) {
  for (const Enum value : values) {
    if (to_string(value) == text) return value;
  }
  return fail(ErrorCode::InvalidArgument, "unknown " + std::string(what) + " \"" +
                                              std::string(text) + "\" (known: " + names_of(values) +
                                              ")");
}

[[nodiscard]] Result<Pass> parse_pass(std::string_view text);
[[nodiscard]] Result<Provider> parse_provider(std::string_view text);

}  // namespace kernelwatch::core
