// Helpers for storage tests: a logical dump of a database (every row of every table) read
// through SQLite directly, so "unchanged" is checked row for row, independent of the store.
#pragma once

#include <filesystem>
#include <string>

namespace kernelwatch::storage::testing {

[[nodiscard]] std::string dump_database(const std::filesystem::path& path);
[[nodiscard]] long long user_version(const std::filesystem::path& path);
[[nodiscard]] std::string pragma_text(const std::filesystem::path& path, const char* pragma);
void exec_sql(const std::filesystem::path& path, const std::string& sql);

}  // namespace kernelwatch::storage::testing
