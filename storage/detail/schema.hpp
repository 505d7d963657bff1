// Storage-private: the schema as an ordered list of migrations keyed by PRAGMA user_version.
// Migration i takes a database from version i to i + 1. Only storage/*.cpp include this.
#pragma once

#include <span>

namespace kernelwatch::storage {

// migrations()[i] is the SQL that moves user_version i to i + 1.
[[nodiscard]] std::span<const char* const> migrations();

}  // namespace kernelwatch::storage
