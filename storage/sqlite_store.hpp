// The SQLite store: schema and migrations, runs keyed by comparability key, key aliases.
// Public API is plain C++ over core types; sqlite3.h stays inside storage/*.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/record.hpp"

namespace kernelwatch::storage {

using core::Result;
using core::Status;

enum class OpenMode {
  Create,    // read-write; creates the file and the schema when missing
  Existing,  // read-write; the file must exist
  ReadOnly,  // never writes; the file must exist and be at the current schema
};

// Schema version written to PRAGMA user_version by this build.
inline constexpr int kSchemaVersion = 4;

struct StoredRun {
  std::int64_t id = 0;
  std::int64_t key_id = 0;
  core::ComparabilityKey key;
  core::Record record;
  std::string implementation_version;  // "" when the source did not say
};

struct KeySummary {
  std::int64_t id = 0;
  core::ComparabilityKey key;
  std::int64_t run_count = 0;
  core::Timestamp first_observed{};
  core::Timestamp last_observed{};
};

// Empty strings match everything. limit 0 means no limit. Results are newest first.
struct RunFilter {
  std::string benchmark;
  std::string provider;
  std::string workload;
  std::string environment;
  std::size_t limit = 0;
};

enum class InsertOutcome { Inserted, Duplicate };

class Database;  // RAII over sqlite3*, defined in storage/detail/database.hpp (storage-private)

class SqliteStore {
 public:
  // Opens (or creates) a kernelwatch database. A file that is not SQLite, or one written by a
  // newer schema, fails with NotADatabase / VersionTooNew and is left untouched.
  [[nodiscard]] static Result<SqliteStore> open(const std::filesystem::path& path, OpenMode mode);

  SqliteStore(SqliteStore&&) noexcept;
  SqliteStore& operator=(SqliteStore&&) noexcept;
  ~SqliteStore();

  // One write transaction (BEGIN IMMEDIATE); rolled back on destruction unless committed.
  class Transaction {
   public:
    Transaction(Transaction&&) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    ~Transaction();
    [[nodiscard]] Status commit();

   private:
    friend class SqliteStore;
    friend class Outbox;
    friend class AlertStore;
    explicit Transaction(Database* db) : db_(db) {}
    Database* db_;
  };
  [[nodiscard]] Result<Transaction> begin();

  // Stores a run inside an open transaction. The same run (same key and observedAt) arriving
  // again is a Duplicate and changes nothing. raw_source is the text the run came from.
  [[nodiscard]] Result<InsertOutcome> insert_run(Transaction& tx, const core::Record& record,
                                                 std::string_view raw_source);

  [[nodiscard]] Result<std::vector<KeySummary>> keys() const;
  [[nodiscard]] Result<std::vector<StoredRun>> runs(const RunFilter& filter) const;
  // One key's newest `limit` runs, newest first, through the (key_id, observed_at) index.
  [[nodiscard]] Result<std::vector<StoredRun>> newest_runs(std::int64_t key_id,
                                                           std::size_t limit) const;
  // Every run of one key, oldest first (what a backtest replays).
  [[nodiscard]] Result<std::vector<StoredRun>> key_history(std::int64_t key_id) const;
  [[nodiscard]] Result<std::int64_t> run_count() const;
  // The id of the key with this digest (ComparabilityKey::digest()); nullopt when not stored.
  [[nodiscard]] Result<std::optional<std::int64_t>> find_key(std::string_view key_digest) const;
  // The canonical digest a source digest is an alias of ("" when unknown).
  [[nodiscard]] Result<std::string> resolve_alias(std::string_view digest) const;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  friend class Outbox;       // storage/outbox.cpp shares this connection
  friend class AlertStore;  // storage/alerts.cpp too
  SqliteStore(std::filesystem::path path, std::unique_ptr<Database> db);
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
};

}  // namespace kernelwatch::storage
