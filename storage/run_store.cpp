#include "storage/run_store.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "core/digest.hpp"
#include "core/names.hpp"
#include "storage/detail/database.hpp"
#include "storage/detail/queries.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;
using nlohmann::json;

// ---- Writing a run: its key (parts, aliases, key row), its implementation, the run row. ----

struct PartIds {
  std::int64_t workload = 0;
  std::int64_t environment = 0;
  std::int64_t protocol = 0;
};

// Inserts a part's (digest, label, document) row into `table` unless present; returns its id.
Result<std::int64_t> store_part(Database& db, const std::string& table, const core::KeyPart& part,
                                const std::string& document) {
  {
    auto insert = KW_TRY(db.statement("INSERT INTO " + table +
                                      " (digest, label, document) VALUES (?1, ?2, ?3) "
                                      "ON CONFLICT DO NOTHING"));
    insert->bind(1, part.digest).bind(2, part.label).bind(3, document);
    KW_TRY(insert->run());
  }
  auto select = KW_TRY(db.statement("SELECT id FROM " + table + " WHERE digest = ?1"));
  select->bind(1, part.digest);
  const bool found = KW_TRY(select->step());
  KW_ASSERT(found, "row inserted or present in the same transaction");
  return select->column_int(0);
}

// The workload, environment and protocol rows, each with its canonical identity document.
Result<PartIds> store_parts(Database& db, const core::ComparabilityKey& key,
                            const core::Record& record) {
  const auto workload = core::Workload::from_label(key.workload.label);
  KW_ASSERT(workload.has_value(), "key_of validated the workload label");
  const json protocol_identity = {{"apiVersion", core::kApiVersion},
                                  {"kind", "BenchmarkProtocol"},
                                  {"spec", record.protocol.spec}};
  PartIds ids;
  ids.workload = KW_TRY(
      store_part(db, "workloads", key.workload, core::canonical_json(workload->canonical())));
  ids.environment = KW_TRY(
      store_part(db, "environments", key.environment,
                 core::canonical_json(core::environment_identity(record.environment.hardware))));
  ids.protocol =
      KW_TRY(store_part(db, "protocols", key.protocol, core::canonical_json(protocol_identity)));
  return ids;
}

// The part digests the source carried, where they differ from ours, as aliases of ours.
Status store_aliases(Database& db, const core::ComparabilityKey& key,
                     const core::BenchmarkRun& run) {
  for (auto [alias, part, canonical] :
       {std::tuple{&run.workload_digest, "workload", &key.workload.digest},
        std::tuple{&run.environment_digest, "environment", &key.environment.digest},
        std::tuple{&run.protocol_digest, "protocol", &key.protocol.digest}}) {
    if (alias->empty() || *alias == *canonical) continue;
    auto stmt =
        KW_TRY(db.statement("INSERT INTO key_aliases (alias, part, canonical) VALUES (?1, ?2, ?3) "
                            "ON CONFLICT (alias) DO NOTHING"));
    stmt->bind(1, *alias).bind(2, std::string_view(part)).bind(3, *canonical);
    KW_TRY(stmt->run());
  }
  return {};
}

Result<std::optional<std::int64_t>> find_key_id(Database& db, std::string_view key_digest) {
  auto stmt = KW_TRY(db.statement("SELECT id FROM keys WHERE digest = ?1"));
  stmt->bind(1, key_digest);
  return first_row(*stmt, [](const Statement& s) { return s.column_int(0); });
}

// The key's row, inserted unless present; returns its id.
Result<std::int64_t> store_key_row(Database& db, const core::ComparabilityKey& key,
                                   const PartIds& parts) {
  const std::string key_digest = key.digest();
  {
    auto insert = KW_TRY(db.statement(
        "INSERT INTO keys (digest, benchmark, benchmark_digest, provider, provider_digest, "
        "workload_id, environment_id, protocol_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
        "ON CONFLICT (digest) DO NOTHING"));
    insert->bind(1, key_digest)
        .bind(2, key.benchmark.label)
        .bind(3, key.benchmark.digest)
        .bind(4, key.provider.label)
        .bind(5, key.provider.digest)
        .bind(6, parts.workload)
        .bind(7, parts.environment)
        .bind(8, parts.protocol);
    KW_TRY(insert->run());
  }
  const auto id = KW_TRY(find_key_id(db, key_digest));
  if (!id)
    return core::fail(ErrorCode::Internal, db.path().string() + ": key row missing after insert");
  return *id;
}

// Everything a key is made of: its parts, the source's digests as aliases, the key row.
Result<std::int64_t> store_key(Database& db, const core::ComparabilityKey& key,
                               const core::Record& record) {
  const PartIds parts = KW_TRY(store_parts(db, key, record));
  KW_TRY(store_aliases(db, key, record.run));
  return store_key_row(db, key, parts);
}

// The run's implementation row, inserted unless present. Returns its digest: the record's
// own, else ours over provider and version.
Result<std::string> store_implementation(Database& db, const core::KeyPart& provider,
                                         const core::BenchmarkRun& run) {
  const std::string version = core::implementation_version(run.metadata);
  std::string digest = run.implementation_digest;
  if (digest.empty()) {
    digest = core::digest_of(json{{"provider", provider.label}, {"version", version}});
  }
  auto stmt = KW_TRY(
      db.statement("INSERT INTO implementations (digest, provider, version) VALUES (?1, ?2, ?3) "
                   "ON CONFLICT (digest) DO NOTHING"));
  stmt->bind(1, digest).bind(2, provider.label).bind(3, version);
  KW_TRY(stmt->run());
  return digest;
}

std::optional<std::int64_t> nanoseconds(std::optional<std::chrono::nanoseconds> value) {
  if (!value) return std::nullopt;
  return value->count();
}

// The run row. A run already stored under this key and observedAt is a Duplicate.
Result<InsertOutcome> store_run_row(Database& db, std::int64_t key_id, const core::Record& record,
                                    const std::string& implementation_digest,
                                    std::string_view raw_source) {
  const auto& run = record.run;
  auto stmt = KW_TRY(db.statement(
      "INSERT INTO runs (key_id, observed_at_ns, status, median_ns, p20_ns, p80_ns, "
      "implementation_id, external_id, record, raw_source, implementation_digest, software, "
      "status_reason, source, run_status) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT id FROM implementations WHERE digest = ?7), ?8, ?9, "
      "?10, json_extract(?9, '$.run.spec.implementationDigest'), "
      "json_extract(?9, '$.environment.spec.software'), nullif(?11, ''), "
      "json_extract(?9, '$.run.spec.sourceNative.source'), ?12) "
      "ON CONFLICT (key_id, observed_at_ns) DO NOTHING"));
  stmt->bind(1, key_id)
      .bind(2, run.observed_at)
      .bind(3, core::to_string(run.outcome()))
      .bind(4, nanoseconds(run.median))
      .bind(5, nanoseconds(run.latency("p20")))
      .bind(6, nanoseconds(run.latency("p80")))
      .bind(7, implementation_digest)
      .bind(8, run.source_native.external_id)
      .bind(9, core::canonical_json(core::to_json(record)));
  if (raw_source.empty()) {
    stmt->bind_null(10);
  } else {
    stmt->bind(10, raw_source);
  }
  stmt->bind(11, run.status == core::RunStatus::Passed ? std::string_view() : run.status_reason)
      .bind(12, core::to_string(run.status));
  KW_TRY(stmt->run());
  return db.changes() > 0 ? InsertOutcome::Inserted : InsertOutcome::Duplicate;
}

// ---- Reading runs and keys. ----

// Columns every run query selects, in this order; the key's parts as in read_key().
constexpr const char* kRunColumns =
    "r.id, r.key_id, r.record, k.benchmark, k.benchmark_digest, k.provider, k.provider_digest, "
    "w.label, w.digest, e.label, e.digest, p.label, p.digest, coalesce(i.version, ''), "
    "r.settled "
    "FROM runs r JOIN keys k ON k.id = r.key_id "
    "JOIN workloads w ON w.id = k.workload_id "
    "JOIN environments e ON e.id = k.environment_id "
    "JOIN protocols p ON p.id = k.protocol_id "
    "LEFT JOIN implementations i ON i.id = r.implementation_id ";

// The five key parts from ten columns starting at `first`: benchmark, provider, workload,
// environment and protocol, each as label then digest.
core::ComparabilityKey read_key(const Statement& s, int first) {
  const auto part = [&](int i) {
    return core::KeyPart{s.column_text(first + 2 * i), s.column_text(first + 2 * i + 1)};
  };
  return core::ComparabilityKey{part(0), part(1), part(2), part(3), part(4)};
}

Result<StoredRun> read_run(const Statement& stmt, const std::filesystem::path& path) {
  StoredRun run;
  run.id = stmt.column_int(0);
  run.key_id = stmt.column_int(1);
  const json doc = json::parse(stmt.column_text(2), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return core::fail(ErrorCode::NotADatabase, path.string() + ": run " + std::to_string(run.id) +
                                                   ": stored record is not JSON");
  }
  run.record =
      KW_TRY_WITH(core::parse_record(doc), path.string() + ": run " + std::to_string(run.id));
  run.key = read_key(stmt, 3);
  run.implementation_version = stmt.column_text(13);
  if (!stmt.column_is_null(14)) {
    run.judged = stmt.column_int(14) == 0 ? Judged::CycleOpen : Judged::CycleClosed;
  }
  return run;
}

// Rows that cannot be read (a record that no longer parses, a column out of range), per database
// file: each is skipped with its reason, never fatal, so no stored row can stop the daemon from
// starting or a query from answering.
std::mutex unreadable_mutex;
std::map<std::string, std::map<std::int64_t, std::string>>& unreadable_rows() {
  static std::map<std::string, std::map<std::int64_t, std::string>> rows;
  return rows;
}

void note_unreadable(const std::filesystem::path& path, std::int64_t id, std::string why) {
  const std::lock_guard lock(unreadable_mutex);
  unreadable_rows()[path.string()].try_emplace(id, std::move(why));
}

// Every readable row; an unreadable one is noted and left out.
Result<std::vector<StoredRun>> collect_runs(const Database& db, Statement& stmt) {
  std::vector<StoredRun> out;
  while (KW_TRY(stmt.step())) {
    auto run = read_run(stmt, db.path());
    if (!run) {
      note_unreadable(db.path(), stmt.column_int(0), run.error().message);
      continue;
    }
    out.push_back(std::move(*run));
  }
  return out;
}

bool latency_column_ok(const Statement& s, int column) {
  if (s.column_is_null(column)) return true;
  const std::int64_t ns = s.column_int(column);
  return ns >= 0 && ns <= core::kMaxLatencyNs;
}

KeySummary read_summary(const Statement& s) {
  KeySummary summary;
  summary.id = s.column_int(0);
  summary.key = read_key(s, 1);
  summary.run_count = s.column_int(11);
  summary.first_observed = s.column_timestamp(12);
  summary.last_observed = s.column_timestamp(13);
  return summary;
}

}  // namespace

RunStore::RunStore(Connection& connection) : db_(&connection.database()) {}

Result<Insertion> RunStore::insert_run(Transaction& tx, const core::Record& record,
                                       std::string_view raw_source) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  const core::ComparabilityKey key = KW_TRY(core::key_of(record));
  const std::int64_t key_id = KW_TRY(store_key(*db_, key, record));
  const std::string implementation = KW_TRY(store_implementation(*db_, key.provider, record.run));
  const InsertOutcome outcome =
      KW_TRY(store_run_row(*db_, key_id, record, implementation, raw_source));
  return Insertion{outcome, key_id};
}

Result<std::vector<KeySummary>> RunStore::keys() const {
  auto stmt = KW_TRY(db_->statement(
      "SELECT k.id, k.benchmark, k.benchmark_digest, k.provider, k.provider_digest, w.label, "
      "w.digest, e.label, e.digest, p.label, p.digest, "
      "(SELECT count(*) FROM runs r WHERE r.key_id = k.id), "
      "(SELECT min(observed_at_ns) FROM runs r WHERE r.key_id = k.id), "
      "(SELECT max(observed_at_ns) FROM runs r WHERE r.key_id = k.id) "
      "FROM keys k JOIN workloads w ON w.id = k.workload_id "
      "JOIN environments e ON e.id = k.environment_id JOIN protocols p ON p.id = k.protocol_id "
      "ORDER BY k.benchmark, k.provider, e.label, w.label, p.label"));
  return collect(*stmt, read_summary);
}

Result<std::vector<StoredRun>> RunStore::runs(const RunFilter& filter) const {
  static const std::string sql =
      std::string("SELECT ") + kRunColumns +
      "WHERE (?1 = '' OR k.benchmark = ?1) AND (?2 = '' OR k.provider = ?2) "
      "AND (?3 = '' OR w.label = ?3) AND (?4 = '' OR e.label = ?4) "
      "ORDER BY r.observed_at_ns DESC, k.digest LIMIT ?5";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, filter.benchmark)
      .bind(2, filter.provider)
      .bind(3, filter.workload)
      .bind(4, filter.environment)
      .bind_limit(5, filter.limit);
  return collect_runs(*db_, *stmt);
}

Result<std::vector<StoredRun>> RunStore::newest_runs(std::int64_t key_id, std::size_t limit) const {
  // The id subquery is the indexed part (its plan is tested); the joins then touch N rows.
  static const std::string sql = std::string("SELECT ") + kRunColumns + "WHERE r.id IN (" +
                                 queries::kNewestRunIds + ") ORDER BY r.observed_at_ns DESC";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, key_id).bind_limit(2, limit);
  return collect_runs(*db_, *stmt);
}

Result<std::vector<StoredRun>> RunStore::key_history(std::int64_t key_id) const {
  static const std::string sql =
      std::string("SELECT ") + kRunColumns + "WHERE r.key_id = ?1 ORDER BY r.observed_at_ns ASC";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, key_id);
  return collect_runs(*db_, *stmt);
}

namespace {

// Columns only (schema v5): parsing each stored record was half the replay's time. The record is
// read only for a run without an externalId.
constexpr const char* kSummaryColumns =
    "SELECT r.key_id, r.observed_at_ns, coalesce(r.run_status, r.status), r.median_ns, r.p20_ns, "
    "r.p80_ns, "
    "coalesce(nullif(r.external_id, ''), json_extract(r.record, '$.run.metadata.name'), ''), "
    "coalesce(i.version, ''), coalesce(r.implementation_digest, ''), r.software, "
    "coalesce(r.status_reason, ''), r.settled, coalesce(r.source, ''), r.id, "
    "j.confirmation, j.order_ns, j.cycle "
    "FROM runs r LEFT JOIN implementations i ON i.id = r.implementation_id "
    "LEFT JOIN run_judgements j ON j.run_id = r.id ";

Status visit_summaries(const Database& db, Statement& stmt,
                       const std::function<Status(const RunSummary&)>& visit) {
  const auto optional_ns = [](const Statement& s, int column) {
    return s.column_is_null(column) ? std::optional<std::chrono::nanoseconds>()
                                    : std::optional<std::chrono::nanoseconds>(
                                          std::chrono::nanoseconds(s.column_int(column)));
  };
  RunSummary run;
  std::string software;
  while (KW_TRY(stmt.step())) {
    const Statement& s = stmt;
    run.key_id = s.column_int(0);
    run.observed_at = s.column_timestamp(1);
    auto status = core::parse_run_status(s.column_text(2));
    // A row the version-7 pass could not upgrade (its record does not parse) keeps its old
    // columns: read them as that pass would have.
    if (!status && s.column_text(2) == "failed") {
      status = core::status_for_failure_reason(s.column_text(10));
    } else if (!status && s.column_text(2) == "inconclusive") {
      status = core::RunStatus::IncompleteEvidence;
    }
    if (!status) {
      note_unreadable(db.path(), s.column_int(13),
                      db.path().string() + ": run " + std::to_string(s.column_int(13)) + ": " +
                          status.error().message);
      continue;
    }
    if (!latency_column_ok(s, 3) || !latency_column_ok(s, 4) || !latency_column_ok(s, 5)) {
      note_unreadable(db.path(), s.column_int(13),
                      db.path().string() + ": run " + std::to_string(s.column_int(13)) +
                          ": a stored latency is negative or over 2^53 - 1 ns");
      continue;
    }
    run.status = *status;
    run.median = optional_ns(s, 3);
    run.p20 = optional_ns(s, 4);
    run.p80 = optional_ns(s, 5);
    run.external_id = s.column_text(6);
    run.implementation_version = s.column_text(7);
    run.implementation_digest = s.column_text(8);
    // Most runs of a key share one software environment: parse it only when it changes.
    if (std::string text = s.column_text(9); text != software) {
      software = std::move(text);
      run.software = software.empty() ? json::object() : json::parse(software, nullptr, false);
      if (!run.software.is_object()) run.software = json::object();
    }
    run.status_reason = s.column_text(10);
    run.source = s.column_text(12);
    run.judged = s.column_is_null(11)    ? Judged::Never
                 : s.column_int(11) == 0 ? Judged::CycleOpen
                                         : Judged::CycleClosed;
    run.judgement.reset();
    if (!s.column_is_null(14)) {
      auto confirmation = parse_confirmation(s.column_text(14));
      if (!confirmation) {
        note_unreadable(db.path(), s.column_int(13),
                        db.path().string() + ": run " + std::to_string(s.column_int(13)) + ": " +
                            confirmation.error().message);
        continue;
      }
      run.judgement = Judgement{*confirmation, s.column_timestamp(15), s.column_int(16)};
    }
    KW_TRY(visit(run));
  }
  return {};
}

}  // namespace

Status RunStore::for_each_in_time_order(
    const std::function<Status(const RunSummary&)>& visit) const {
  auto stmt =
      KW_TRY(db_->statement(std::string(kSummaryColumns) + "ORDER BY r.observed_at_ns, r.key_id"));
  return visit_summaries(*db_, *stmt, visit);
}

Result<std::map<std::int64_t, RunStore::RecentMedians>> RunStore::recent_medians(
    std::size_t newest) const {
  // The counts in one pass over the (key_id, observed_at) index, then each key's newest runs
  // through it: a window function over every run was several times slower.
  std::map<std::int64_t, RecentMedians> out;
  {
    auto counts = KW_TRY(db_->statement("SELECT key_id, count(*) FROM runs GROUP BY key_id"));
    while (KW_TRY(counts->step())) out[counts->column_int(0)].runs = counts->column_int(1);
  }
  for (auto& [key_id, recent] : out) {
    auto stmt = KW_TRY(db_->statement(
        "SELECT CASE WHEN status = 'passed' THEN median_ns END FROM runs WHERE key_id = ?1 "
        "ORDER BY observed_at_ns DESC LIMIT ?2"));
    stmt->bind(1, key_id).bind_limit(2, newest);
    // Only passed runs with a median are drawn.
    while (KW_TRY(stmt->step())) {
      if (!stmt->column_is_null(0) && stmt->column_int(0) > 0)
        recent.medians_ns.push_back(stmt->column_int(0));
    }
    std::reverse(recent.medians_ns.begin(), recent.medians_ns.end());
  }
  return out;
}

Result<std::vector<RunSummary>> RunStore::key_summaries(std::int64_t key_id,
                                                        std::size_t newest) const {
  // The newest N through the (key_id, observed_at) index, then oldest first.
  static const std::string all =
      std::string(kSummaryColumns) + "WHERE r.key_id = ?1 ORDER BY r.observed_at_ns";
  static const std::string limited = "SELECT * FROM (" + std::string(kSummaryColumns) +
                                     "WHERE r.key_id = ?1 ORDER BY r.observed_at_ns DESC "
                                     "LIMIT ?2) ORDER BY 2";
  auto stmt = KW_TRY(db_->statement(newest == 0 ? all : limited));
  stmt->bind(1, key_id);
  if (newest != 0) stmt->bind_limit(2, newest);
  std::vector<RunSummary> runs;
  KW_TRY(visit_summaries(*db_, *stmt, [&](const RunSummary& run) -> Status {
    runs.push_back(run);
    return {};
  }));
  return runs;
}

std::string_view to_string(Confirmation confirmation) noexcept {
  switch (confirmation) {
    case Confirmation::Next:
      return "next";
    case Confirmation::Alone:
      return "alone";
    case Confirmation::NotJudged:
      return "not_judged";
  }
  return "alone";
}

Result<Confirmation> parse_confirmation(std::string_view text) {
  static constexpr Confirmation kValues[] = {Confirmation::Next, Confirmation::Alone,
                                             Confirmation::NotJudged};
  return core::parse_name("judgement", text, kValues);
}

Status RunStore::record_judgement(Transaction& tx, std::int64_t key_id,
                                  core::Timestamp observed_at, const Judgement& judgement) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  if (judgement.confirmation != Confirmation::NotJudged) {
    auto stmt = KW_TRY(
        db_->statement("UPDATE runs SET settled = 0 WHERE key_id = ?1 AND observed_at_ns = ?2"));
    stmt->bind(1, key_id).bind(2, observed_at);
    KW_TRY(stmt->run());
  }
  auto stmt = KW_TRY(db_->statement(
      "INSERT OR REPLACE INTO run_judgements (run_id, confirmation, order_ns, cycle) "
      "SELECT id, ?3, ?4, ?5 FROM runs WHERE key_id = ?1 AND observed_at_ns = ?2"));
  stmt->bind(1, key_id)
      .bind(2, observed_at)
      .bind(3, to_string(judgement.confirmation))
      .bind(4, judgement.order)
      .bind(5, judgement.cycle);
  return stmt->run();
}

Status RunStore::close_judged_cycles(Transaction& tx) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  auto stmt = KW_TRY(db_->statement("UPDATE runs SET settled = 1 WHERE settled = 0"));
  return stmt->run();
}

std::vector<std::string> RunStore::unreadable() const {
  const std::lock_guard lock(unreadable_mutex);
  std::vector<std::string> out;
  const auto it = unreadable_rows().find(db_->path().string());
  if (it == unreadable_rows().end()) return out;
  for (const auto& [id, why] : it->second) out.push_back(why);
  return out;
}

Result<std::int64_t> RunStore::run_count() const {
  return db_->query_int("SELECT count(*) FROM runs");
}

Result<std::optional<std::int64_t>> RunStore::find_key(std::string_view key_digest) const {
  return find_key_id(*db_, key_digest);
}

Result<std::string> RunStore::resolve_alias(std::string_view digest) const {
  auto stmt = KW_TRY(db_->statement("SELECT canonical FROM key_aliases WHERE alias = ?1"));
  stmt->bind(1, digest);
  const auto canonical =
      KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_text(0); }));
  return canonical.value_or(std::string());
}

}  // namespace kernelwatch::storage
