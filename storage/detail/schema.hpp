// Storage-private: the schema as an ordered list of migrations keyed by PRAGMA user_version.
// Migration i takes a database from version i to i + 1. Only storage/*.cpp include this.
#pragma once

#include <span>

#include "core/error.hpp"

namespace kernelwatch::storage {

class Database;

// One step: its SQL, then (where SQL cannot say it) a C++ pass over the rows, in the same
// transaction.
struct Migration {
  const char* sql = nullptr;
  core::Status (*rows)(Database& db) = nullptr;
};

// migrations()[i] moves user_version i to i + 1.
[[nodiscard]] std::span<const Migration> migrations();

}  // namespace kernelwatch::storage
