#include "storage/sqlite_store.hpp"

#include <array>
#include <fstream>
#include <system_error>

#include "core/digest.hpp"
#include "storage/detail/database.hpp"
#include "storage/detail/queries.hpp"
#include "storage/detail/schema.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;
using nlohmann::json;

constexpr std::string_view kSqliteHeader{"SQLite format 3\0", 16};

// Reads the first 16 bytes without opening the file through SQLite, so a file that is not a
// database is rejected before anything could write to it.
Status check_header(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return core::fail(ErrorCode::NotADatabase, path.string() + ": not a regular file");
  }
  if (std::filesystem::file_size(path, ec) == 0) return {};
  std::ifstream in(path, std::ios::binary);
  std::array<char, 16> header{};
  if (!in.read(header.data(), header.size()) ||
      std::string_view(header.data(), header.size()) != kSqliteHeader) {
    return core::fail(ErrorCode::NotADatabase,
                      path.string() +
                          ": not a SQLite database (the file does not start with the "
                          "SQLite header); refusing to touch it");
  }
  return {};
}

// Reads the schema version through a read-only connection.
Result<std::int64_t> read_version(const std::filesystem::path& path) {
  auto db = Database::open(path, /*read_only=*/true, /*create=*/false);
  if (!db) return tl::unexpected(db.error());
  auto version = (*db)->query_int("PRAGMA user_version");
  if (!version) return tl::unexpected(version.error());
  if (*version == 0) {
    auto tables = (*db)->query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table'");
    if (!tables) return tl::unexpected(tables.error());
    if (*tables > 0) {
      return core::fail(ErrorCode::NotADatabase,
                        path.string() + ": a SQLite database, but not kernelwatch's (it has " +
                            std::to_string(*tables) + " tables and no schema version)");
    }
  }
  return *version;
}

Status migrate(Database& db) {
  if (auto ok = db.begin_immediate(); !ok) return ok;
  auto version = db.query_int("PRAGMA user_version");
  if (!version) {
    db.rollback();
    return tl::unexpected(version.error());
  }
  const auto steps = migrations();
  for (auto v = static_cast<std::size_t>(*version); v < steps.size(); ++v) {
    if (auto ok = db.exec(steps[v]); !ok) {
      db.rollback();
      return tl::unexpected(
          ok.error().with_context("migration to schema version " + std::to_string(v + 1)));
    }
  }
  if (auto ok = db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion)); !ok) {
    db.rollback();
    return ok;
  }
  if (auto ok = db.commit(); !ok) {
    db.rollback();
    return ok;
  }
  return {};
}

// Inserts a (digest, label, document) row unless present and returns its id.
Result<std::int64_t> upsert_part(Database& db, const char* insert_sql, const char* select_sql,
                                 const std::string& digest, const std::string& label,
                                 const std::string& document) {
  auto insert = db.prepare_cached(insert_sql);
  if (!insert) return tl::unexpected(insert.error());
  (*insert)->bind(1, digest).bind(2, label).bind(3, document);
  if (auto ok = (*insert)->run(); !ok)
    return tl::unexpected(ok.error().with_context(db.path().string()));
  auto select = db.prepare_cached(select_sql);
  if (!select) return tl::unexpected(select.error());
  (*select)->bind(1, digest);
  auto row = (*select)->step();
  if (!row) return tl::unexpected(row.error().with_context(db.path().string()));
  KW_ASSERT(*row, "row inserted or present in the same transaction");
  return (*select)->column_int(0);
}

Status add_alias(Database& db, const std::string& alias, const char* part,
                 const std::string& canonical) {
  if (alias.empty() || alias == canonical) return {};
  auto stmt = db.prepare_cached(
      "INSERT INTO key_aliases (alias, part, canonical) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (alias) DO NOTHING");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, alias).bind(2, std::string_view(part)).bind(3, canonical);
  if (auto ok = (*stmt)->run(); !ok)
    return tl::unexpected(ok.error().with_context(db.path().string()));
  return {};
}

// Columns every run query selects, in this order.
constexpr const char* kRunColumns =
    "r.id, r.key_id, r.record, k.benchmark, k.benchmark_digest, k.provider, k.provider_digest, "
    "w.label, w.digest, e.label, e.digest, p.label, p.digest, coalesce(i.version, '') "
    "FROM runs r JOIN keys k ON k.id = r.key_id "
    "JOIN workloads w ON w.id = k.workload_id "
    "JOIN environments e ON e.id = k.environment_id "
    "JOIN protocols p ON p.id = k.protocol_id "
    "LEFT JOIN implementations i ON i.id = r.implementation_id ";

Result<StoredRun> read_run(const Statement& stmt, const std::filesystem::path& path) {
  StoredRun run;
  run.id = stmt.column_int(0);
  run.key_id = stmt.column_int(1);
  const std::string text = stmt.column_text(2);
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return core::fail(ErrorCode::NotADatabase, path.string() + ": run " + std::to_string(run.id) +
                                                   ": stored record is not JSON");
  }
  auto record = core::parse_record(doc);
  if (!record) {
    return tl::unexpected(
        record.error().with_context(path.string() + ": run " + std::to_string(run.id)));
  }
  run.record = std::move(*record);
  run.key.benchmark = {stmt.column_text(3), stmt.column_text(4)};
  run.key.provider = {stmt.column_text(5), stmt.column_text(6)};
  run.key.workload = {stmt.column_text(7), stmt.column_text(8)};
  run.key.environment = {stmt.column_text(9), stmt.column_text(10)};
  run.key.protocol = {stmt.column_text(11), stmt.column_text(12)};
  run.implementation_version = stmt.column_text(13);
  return run;
}

Result<std::vector<StoredRun>> collect(Statement& stmt, const std::filesystem::path& path) {
  std::vector<StoredRun> out;
  while (true) {
    auto row = stmt.step();
    if (!row) return tl::unexpected(row.error().with_context(path.string()));
    if (!*row) break;
    auto run = read_run(stmt, path);
    if (!run) {
      stmt.reset();
      return tl::unexpected(run.error());
    }
    out.push_back(std::move(*run));
  }
  stmt.reset();
  return out;
}

}  // namespace

SqliteStore::SqliteStore(std::filesystem::path path, std::unique_ptr<Database> db)
    : path_(std::move(path)), db_(std::move(db)) {}
SqliteStore::SqliteStore(SqliteStore&&) noexcept = default;
SqliteStore& SqliteStore::operator=(SqliteStore&&) noexcept = default;
SqliteStore::~SqliteStore() = default;

Result<SqliteStore> SqliteStore::open(const std::filesystem::path& path, OpenMode mode) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (!exists && mode != OpenMode::Create) {
    return core::fail(ErrorCode::NotFound, path.string() + ": no such database");
  }
  if (exists) {
    if (auto ok = check_header(path); !ok) return tl::unexpected(ok.error());
    if (std::filesystem::file_size(path, ec) > 0) {
      auto version = read_version(path);
      if (!version) return tl::unexpected(version.error());
      if (*version > kSchemaVersion) {
        return core::fail(ErrorCode::VersionTooNew,
                          path.string() + ": written by a newer kernelwatch (schema version " +
                              std::to_string(*version) + "; this build reads up to " +
                              std::to_string(kSchemaVersion) + "); upgrade kernelwatch to open it");
      }
      if (mode == OpenMode::ReadOnly && *version < kSchemaVersion) {
        // An older kernelwatch wrote it: migrate once through a read-write connection, then
        // read. A reader of an upgraded install should not have to run a writer first.
        auto writer = open(path, OpenMode::Existing);
        if (!writer) return tl::unexpected(writer.error());
      }
    } else if (mode == OpenMode::ReadOnly) {
      return core::fail(ErrorCode::NotFound,
                        path.string() + ": empty file, no kernelwatch database");
    }
  } else if (path.has_parent_path() && !std::filesystem::exists(path.parent_path(), ec)) {
    return core::fail(ErrorCode::NotFound, path.string() + ": directory " +
                                               path.parent_path().string() + " does not exist");
  }

  const bool read_only = mode == OpenMode::ReadOnly;
  auto db = Database::open(path, read_only, mode == OpenMode::Create);
  if (!db) return tl::unexpected(db.error());
  Database& conn = **db;
  if (auto ok = conn.exec("PRAGMA busy_timeout = 5000"); !ok) return tl::unexpected(ok.error());
  if (!read_only) {
    for (const char* pragma :
         {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"}) {
      if (auto ok = conn.exec(pragma); !ok) return tl::unexpected(ok.error());
    }
    if (auto ok = migrate(conn); !ok) return tl::unexpected(ok.error());
  }
  return SqliteStore(path, std::move(*db));
}

SqliteStore::Transaction::Transaction(Transaction&& other) noexcept : db_(other.db_) {
  other.db_ = nullptr;
}

SqliteStore::Transaction::~Transaction() {
  if (db_ != nullptr) db_->rollback();
}

Status SqliteStore::Transaction::commit() {
  KW_ASSERT(db_ != nullptr, "commit on a finished transaction");
  auto ok = db_->commit();
  if (!ok) db_->rollback();
  db_ = nullptr;
  return ok;
}

Result<SqliteStore::Transaction> SqliteStore::begin() {
  KW_ASSERT(!db_->in_transaction(), "one transaction at a time per store");
  if (auto ok = db_->begin_immediate(); !ok) return tl::unexpected(ok.error());
  return Transaction(db_.get());
}

Result<InsertOutcome> SqliteStore::insert_run(Transaction& tx, const core::Record& record,
                                              std::string_view raw_source) {
  KW_ASSERT(tx.db_ == db_.get(), "transaction belongs to this store");
  Database& db = *db_;
  auto key = core::key_of(record);
  if (!key) return tl::unexpected(key.error());

  auto workload = core::Workload::from_label(key->workload.label);
  KW_ASSERT(workload.has_value(), "key_of validated the workload label");
  auto workload_id = upsert_part(
      db,
      "INSERT INTO workloads (digest, label, document) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
      "SELECT id FROM workloads WHERE digest = ?1", key->workload.digest, key->workload.label,
      core::canonical_json(workload->canonical()));
  if (!workload_id) return tl::unexpected(workload_id.error());
  auto environment_id =
      upsert_part(db,
                  "INSERT INTO environments (digest, label, document) VALUES (?1, ?2, ?3) ON "
                  "CONFLICT DO NOTHING",
                  "SELECT id FROM environments WHERE digest = ?1", key->environment.digest,
                  key->environment.label,
                  core::canonical_json(core::environment_identity(record.environment.hardware)));
  if (!environment_id) return tl::unexpected(environment_id.error());
  const json protocol_identity = {{"apiVersion", core::kApiVersion},
                                  {"kind", "BenchmarkProtocol"},
                                  {"spec", record.protocol.spec}};
  auto protocol_id = upsert_part(
      db,
      "INSERT INTO protocols (digest, label, document) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
      "SELECT id FROM protocols WHERE digest = ?1", key->protocol.digest, key->protocol.label,
      core::canonical_json(protocol_identity));
  if (!protocol_id) return tl::unexpected(protocol_id.error());

  const auto& run = record.run;
  for (auto [alias, part, canonical] :
       {std::tuple{&run.workload_digest, "workload", &key->workload.digest},
        std::tuple{&run.environment_digest, "environment", &key->environment.digest},
        std::tuple{&run.protocol_digest, "protocol", &key->protocol.digest}}) {
    if (auto ok = add_alias(db, *alias, part, *canonical); !ok) return tl::unexpected(ok.error());
  }

  auto key_insert = db.prepare_cached(
      "INSERT INTO keys (digest, benchmark, benchmark_digest, provider, provider_digest, "
      "workload_id, environment_id, protocol_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
      "ON CONFLICT (digest) DO NOTHING");
  if (!key_insert) return tl::unexpected(key_insert.error());
  const std::string key_digest = key->digest();
  (*key_insert)
      ->bind(1, key_digest)
      .bind(2, key->benchmark.label)
      .bind(3, key->benchmark.digest)
      .bind(4, key->provider.label)
      .bind(5, key->provider.digest)
      .bind(6, *workload_id)
      .bind(7, *environment_id)
      .bind(8, *protocol_id);
  if (auto ok = (*key_insert)->run(); !ok)
    return tl::unexpected(ok.error().with_context(path_.string()));
  auto key_select = db.prepare_cached("SELECT id FROM keys WHERE digest = ?1");
  if (!key_select) return tl::unexpected(key_select.error());
  (*key_select)->bind(1, key_digest);
  if (auto row = (*key_select)->step(); !row || !*row) {
    return core::fail(ErrorCode::Internal, path_.string() + ": key row missing after insert");
  }
  const std::int64_t key_id = (*key_select)->column_int(0);
  (*key_select)->reset();

  const std::string version = core::implementation_version(run.metadata);
  std::string implementation_digest = run.implementation_digest;
  if (implementation_digest.empty()) {
    implementation_digest =
        core::digest_of(json{{"provider", key->provider.label}, {"version", version}});
  }
  auto implementation_insert = db.prepare_cached(
      "INSERT INTO implementations (digest, provider, version) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (digest) DO NOTHING");
  if (!implementation_insert) return tl::unexpected(implementation_insert.error());
  (*implementation_insert)
      ->bind(1, implementation_digest)
      .bind(2, key->provider.label)
      .bind(3, version);
  if (auto ok = (*implementation_insert)->run(); !ok)
    return tl::unexpected(ok.error().with_context(path_.string()));

  auto run_insert = db.prepare_cached(
      "INSERT INTO runs (key_id, observed_at_ns, status, median_ns, p20_ns, p80_ns, "
      "implementation_id, external_id, record, raw_source) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT id FROM implementations WHERE digest = ?7), ?8, ?9, "
      "?10) "
      "ON CONFLICT (key_id, observed_at_ns) DO NOTHING");
  if (!run_insert) return tl::unexpected(run_insert.error());
  const auto to_count =
      [](std::optional<std::chrono::nanoseconds> ns) -> std::optional<std::int64_t> {
    if (!ns) return std::nullopt;
    return ns->count();
  };
  (*run_insert)
      ->bind(1, key_id)
      .bind(2, static_cast<std::int64_t>(run.observed_at.time_since_epoch().count()))
      .bind(3, core::to_string(run.status))
      .bind(4, to_count(run.median))
      .bind(5, to_count(run.latency("p20")))
      .bind(6, to_count(run.latency("p80")))
      .bind(7, implementation_digest)
      .bind(8, run.source_native.external_id)
      .bind(9, core::canonical_json(core::to_json(record)));
  if (raw_source.empty()) {
    (*run_insert)->bind_null(10);
  } else {
    (*run_insert)->bind(10, raw_source);
  }
  if (auto ok = (*run_insert)->run(); !ok)
    return tl::unexpected(ok.error().with_context(path_.string()));
  return db.changes() > 0 ? InsertOutcome::Inserted : InsertOutcome::Duplicate;
}

Result<std::vector<KeySummary>> SqliteStore::keys() const {
  auto stmt = db_->prepare_cached(
      "SELECT k.id, k.benchmark, k.benchmark_digest, k.provider, k.provider_digest, w.label, "
      "w.digest, e.label, e.digest, p.label, p.digest, "
      "(SELECT count(*) FROM runs r WHERE r.key_id = k.id), "
      "(SELECT min(observed_at_ns) FROM runs r WHERE r.key_id = k.id), "
      "(SELECT max(observed_at_ns) FROM runs r WHERE r.key_id = k.id) "
      "FROM keys k JOIN workloads w ON w.id = k.workload_id "
      "JOIN environments e ON e.id = k.environment_id JOIN protocols p ON p.id = k.protocol_id "
      "ORDER BY k.benchmark, k.provider, e.label, w.label, p.label");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<KeySummary> out;
  while (true) {
    auto row = (*stmt)->step();
    if (!row) return tl::unexpected(row.error().with_context(path_.string()));
    if (!*row) break;
    const Statement& s = **stmt;
    KeySummary summary;
    summary.id = s.column_int(0);
    summary.key.benchmark = {s.column_text(1), s.column_text(2)};
    summary.key.provider = {s.column_text(3), s.column_text(4)};
    summary.key.workload = {s.column_text(5), s.column_text(6)};
    summary.key.environment = {s.column_text(7), s.column_text(8)};
    summary.key.protocol = {s.column_text(9), s.column_text(10)};
    summary.run_count = s.column_int(11);
    summary.first_observed = core::Timestamp{std::chrono::nanoseconds{s.column_int(12)}};
    summary.last_observed = core::Timestamp{std::chrono::nanoseconds{s.column_int(13)}};
    out.push_back(std::move(summary));
  }
  (*stmt)->reset();
  return out;
}

Result<std::vector<StoredRun>> SqliteStore::runs(const RunFilter& filter) const {
  static const std::string sql =
      std::string("SELECT ") + kRunColumns +
      "WHERE (?1 = '' OR k.benchmark = ?1) AND (?2 = '' OR k.provider = ?2) "
      "AND (?3 = '' OR w.label = ?3) AND (?4 = '' OR e.label = ?4) "
      "ORDER BY r.observed_at_ns DESC, k.digest LIMIT ?5";
  auto stmt = db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)
      ->bind(1, filter.benchmark)
      .bind(2, filter.provider)
      .bind(3, filter.workload)
      .bind(4, filter.environment)
      .bind(5, filter.limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(filter.limit));
  return collect(**stmt, path_);
}

Result<std::vector<StoredRun>> SqliteStore::newest_runs(std::int64_t key_id,
                                                        std::size_t limit) const {
  // The id subquery is the indexed part (its plan is tested); the joins then touch N rows.
  static const std::string sql = std::string("SELECT ") + kRunColumns + "WHERE r.id IN (" +
                                 queries::kNewestRunIds + ") ORDER BY r.observed_at_ns DESC";
  auto stmt = db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, key_id).bind(2,
                                limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  return collect(**stmt, path_);
}

Result<std::vector<StoredRun>> SqliteStore::key_history(std::int64_t key_id) const {
  static const std::string sql =
      std::string("SELECT ") + kRunColumns + "WHERE r.key_id = ?1 ORDER BY r.observed_at_ns ASC";
  auto stmt = db_->prepare_cached(sql.c_str());
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, key_id);
  return collect(**stmt, path_);
}

Result<std::int64_t> SqliteStore::run_count() const {
  return db_->query_int("SELECT count(*) FROM runs");
}

Result<std::optional<std::int64_t>> SqliteStore::find_key(std::string_view key_digest) const {
  auto stmt = db_->prepare_cached("SELECT id FROM keys WHERE digest = ?1");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, key_digest);
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(path_.string()));
  std::optional<std::int64_t> id;
  if (*row) id = (*stmt)->column_int(0);
  (*stmt)->reset();
  return id;
}

Result<std::string> SqliteStore::resolve_alias(std::string_view digest) const {
  auto stmt = db_->prepare_cached("SELECT canonical FROM key_aliases WHERE alias = ?1");
  if (!stmt) return tl::unexpected(stmt.error());
  (*stmt)->bind(1, digest);
  auto row = (*stmt)->step();
  if (!row) return tl::unexpected(row.error().with_context(path_.string()));
  std::string out = *row ? (*stmt)->column_text(0) : std::string();
  (*stmt)->reset();
  return out;
}

}  // namespace kernelwatch::storage
