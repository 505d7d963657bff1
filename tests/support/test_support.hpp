// Helpers every test folder uses: a temporary directory, the repository's data, and running the
// real kernelwatch binary as a child process. POSIX only; no mocks.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kernelwatch::testing {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const {
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

// The repository's data/ folder (kernelindex fixtures and Liger history; data/README.md).
[[nodiscard]] std::filesystem::path data_dir();
[[nodiscard]] std::filesystem::path fixture(const std::string& name);    // data/kernelindex/
[[nodiscard]] std::filesystem::path liger_csv(const std::string& name);  // data/liger/
[[nodiscard]] std::filesystem::path kernelwatch_binary();

[[nodiscard]] std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& content);

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs a program with arguments (no shell), waits, and captures both streams.
[[nodiscard]] ProcessResult run_process(const std::filesystem::path& program,
                                        const std::vector<std::string>& args);

// Runs the kernelwatch binary built with these tests.
[[nodiscard]] ProcessResult run_kernelwatch(const std::vector<std::string>& args);

// Fills a test record's ({run, protocol, environment}) four required run digests as a client
// would: the environment's and protocol's kernelindex digests, and digests of the workload and
// provider labels for the other two (no such documents in the record). Returns the record.
nlohmann::json with_digests(nlohmann::json record);

}  // namespace kernelwatch::testing
