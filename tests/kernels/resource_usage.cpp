#include "tests/kernels/resource_usage.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

namespace kernelwatch::kernels::testing {

namespace {

int number_before(const std::string& line, const std::string& suffix) {
  const std::regex pattern("(\\d+) " + suffix);
  std::smatch match;
  return std::regex_search(line, match, pattern) ? std::stoi(match[1].str()) : 0;
}

KernelResources& find_or_add(PtxasReport& report, const std::string& name) {
  for (auto& function : report.functions) {
    if (function.function == name) return function;
  }
  report.functions.push_back(KernelResources{});
  report.functions.back().function = name;
  return report.functions.back();
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return name;
  std::string result = text.get();
  // "void ns::(anonymous namespace)::ln_forward_fused_registers<float, 4>(...)" ->
  // "ln_forward_fused_registers<float, 4>".
  for (const std::string noise :
       {"(anonymous namespace)::", "kernelwatch::kernels::detail::cuda::", "__nv_bfloat16"}) {
    const std::string replacement = noise == "__nv_bfloat16" ? "bf16" : "";
    for (std::size_t at; (at = result.find(noise)) != std::string::npos;) {
      result.replace(at, noise.size(), replacement);
    }
  }
  if (result.rfind("void ", 0) == 0) result.erase(0, 5);
  const std::size_t paren = result.find('(');
  if (paren != std::string::npos) result.erase(paren);
  return result;
}

}  // namespace

PtxasReport parse_ptxas_report(std::string_view text) {
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  PtxasReport report;
  std::string current_entry;
  std::string current_properties;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (std::regex_search(line, match, entry)) {
      current_entry = match[1].str();
      auto& function = find_or_add(report, current_entry);
      function.entry = true;
      function.arch = match[2].str();
    } else if (std::regex_search(line, match, properties)) {
      current_properties = match[1].str();
      find_or_add(report, current_properties);
    } else if (std::regex_search(line, match, frame)) {
      auto& function = find_or_add(report, current_properties);
      function.stack_frame_bytes = std::stoi(match[1].str());
      function.spill_store_bytes = std::stoi(match[2].str());
      function.spill_load_bytes = std::stoi(match[3].str());
    } else if (line.find("Used ") != std::string::npos &&
               line.find(" registers") != std::string::npos && !current_entry.empty()) {
      auto& function = find_or_add(report, current_entry);
      function.registers = number_before(line, "registers");
      function.barriers = number_before(line, "barriers");
      function.shared_bytes = number_before(line, "bytes smem");
      function.cumulative_stack_bytes = number_before(line, "bytes cumulative stack size");
    } else if (line.find("Local memory used") != std::string::npos ||
               line.find("spilled to local memory") != std::string::npos) {
      report.local_memory_warnings.push_back(line);
    }
  }
  return report;
}

std::vector<std::string> local_memory_violations(const PtxasReport& report) {
  std::vector<std::string> violations = report.local_memory_warnings;
  for (const auto& function : report.functions) {
    if (function.stack_frame_bytes > 0 || function.spill_store_bytes > 0 ||
        function.spill_load_bytes > 0 || function.cumulative_stack_bytes > 0) {
      violations.push_back(demangle(function.function) + ": " +
                           std::to_string(function.stack_frame_bytes) + " bytes stack frame, " +
                           std::to_string(function.spill_store_bytes) + " bytes spill stores, " +
                           std::to_string(function.spill_load_bytes) + " bytes spill loads");
    }
  }
  return violations;
}

std::string resource_table(const PtxasReport& report) {
  std::ostringstream out;
  out << "| kernel | arch | registers | static shared (bytes) | stack (bytes) | spill stores / "
         "loads (bytes) |\n";
  out << "| --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& function : report.functions) {
    if (!function.entry) continue;
    out << "| `" << demangle(function.function) << "` | " << function.arch << " | "
        << function.registers << " | " << function.shared_bytes << " | "
        << function.stack_frame_bytes << " | " << function.spill_store_bytes << " / "
        << function.spill_load_bytes << " |\n";
  }
  return out.str();
}

}  // namespace kernelwatch::kernels::testing
