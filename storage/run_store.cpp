#include "storage/run_store.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/digest.hpp"
#include "core/names.hpp"
#include "storage/detail/database.hpp"
#include "storage/detail/queries.hpp"
#include "storage/detail/run_rows.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;
using nlohmann::json;

// ---- Reading runs and keys. ----

// Columns every run query selects, in this order; the key's parts as in read_key(), the
// record's as read_record() reads them.
const std::string kRunSelect =
    std::string(
        "r.id, r.key_id, k.benchmark, k.benchmark_digest, k.provider, k.provider_digest, "
        "w.label, w.digest, e.label, e.digest, p.label, p.digest, coalesce(i.version, ''), "
        "r.settled, ") +
    kRecordColumns;
const std::string kRunFrom =
    " FROM runs r JOIN keys k ON k.id = r.key_id "
    "JOIN workloads w ON w.id = k.workload_id "
    "JOIN environments e ON e.id = k.environment_id "
    "JOIN protocols p ON p.id = k.protocol_id "
    "LEFT JOIN implementations i ON i.id = r.implementation_id ";
const std::string kRunColumns = kRunSelect + kRunFrom;
constexpr int kFirstRecordColumn = 14;
constexpr int kRunColumnCount = kFirstRecordColumn + kRecordColumnCount;

// The five key parts from ten columns starting at `first`: benchmark, provider, workload,
// environment and protocol, each as label then digest.
core::ComparabilityKey read_key(const Statement& s, int first) {
  const auto part = [&](int i) {
    return core::KeyPart{s.column_text(first + 2 * i), s.column_text(first + 2 * i + 1)};
  };
  return core::ComparabilityKey{part(0), part(1), part(2), part(3), part(4)};
}

Result<StoredRun> read_run(const Statement& stmt, const std::filesystem::path& path,
                           DocumentReader& documents) {
  StoredRun run;
  run.id = stmt.column_int(0);
  run.key_id = stmt.column_int(1);
  const std::string where = path.string() + ": run " + std::to_string(run.id);
  const json doc = KW_TRY_WITH(read_record(stmt, kFirstRecordColumn, documents), where);
  run.record = KW_TRY_WITH(core::parse_record(doc), where);
  run.key = read_key(stmt, 2);
  run.implementation_version = stmt.column_text(12);
  if (!stmt.column_is_null(13)) {
    run.judged = stmt.column_int(13) == 0 ? Judged::CycleOpen : Judged::CycleClosed;
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

// Every readable row, one at a time; an unreadable one is noted and left out.
// Where a newest-first walk of runs stopped: the rows stepped (readable or not) and the last
// row's observedAt and key digest, read from the two columns after kRunSelect's.
struct RunWalkEnd {
  std::int64_t rows = 0;
  std::int64_t observed_at_ns = 0;
  std::string key_digest;
};

Status visit_runs(Database& db, Statement& stmt,
                  const std::function<Status(const StoredRun&)>& visit, RunWalkEnd* end = nullptr) {
  DocumentReader documents(db);
  while (KW_TRY(stmt.step())) {
    if (end != nullptr) {
      ++end->rows;
      end->observed_at_ns = stmt.column_int(kRunColumnCount);
      end->key_digest = stmt.column_text(kRunColumnCount + 1);
    }
    auto run = read_run(stmt, db.path(), documents);
    if (!run) {
      note_unreadable(db.path(), stmt.column_int(0), run.error().message);
      continue;
    }
    KW_TRY(visit(*run));
  }
  return {};
}

Result<std::vector<StoredRun>> collect_runs(Database& db, Statement& stmt) {
  std::vector<StoredRun> out;
  KW_TRY(visit_runs(db, stmt, [&](const StoredRun& run) -> Status {
    out.push_back(run);
    return {};
  }));
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

Result<Insertion> RunStore::insert_run(Transaction& tx, const core::Run& run,
                                       std::string_view raw_source) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  const RunRow row =
      KW_TRY(prepare_run(*db_, run.record(), run.key(), run.key_digest(), raw_source, nullptr));
  const InsertOutcome outcome = KW_TRY(insert_run_row(*db_, row));
  return Insertion{outcome, row.key_id};
}

Result<Insertion> RunStore::insert_run(Transaction& tx, core::Record record,
                                       std::string_view raw_source) {
  return insert_run(tx, KW_TRY(core::Run::of(std::move(record))), raw_source);
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

Status RunStore::for_each_run(const RunFilter& filter,
                              const std::function<Status(const StoredRun&)>& visit) const {
  static const std::string sql =
      "SELECT " + kRunColumns +
      "WHERE (?1 = '' OR k.benchmark = ?1) AND (?2 = '' OR k.provider = ?2) "
      "AND (?3 = '' OR w.label = ?3) AND (?4 = '' OR e.label = ?4) "
      "ORDER BY r.observed_at_ns DESC, k.digest LIMIT ?5";
  if (db_->dialect() == Dialect::Sqlite) {
    auto stmt = KW_TRY(db_->statement(sql));
    stmt->bind(1, filter.benchmark)
        .bind(2, filter.provider)
        .bind(3, filter.workload)
        .bind(4, filter.environment)
        .bind_limit(5, filter.limit);
    return visit_runs(*db_, *stmt, visit);
  }
  // PostgreSQL hands a statement's rows over whole: pages in the same order, each after the last
  // row of the one before, keep `history --limit 0` of any size in flat memory.
  static const std::string page =
      "SELECT " + kRunSelect + ", r.observed_at_ns, k.digest" + kRunFrom +
      "WHERE (?1 = '' OR k.benchmark = ?1) AND (?2 = '' OR k.provider = ?2) "
      "AND (?3 = '' OR w.label = ?3) AND (?4 = '' OR e.label = ?4) "
      "AND (?6 = 0 OR r.observed_at_ns < ?7 OR (r.observed_at_ns = ?7 AND k.digest > ?8)) "
      "ORDER BY r.observed_at_ns DESC, k.digest LIMIT ?5";
  RunWalkEnd end;
  std::int64_t left = filter.limit == 0 ? std::numeric_limits<std::int64_t>::max()
                                        : static_cast<std::int64_t>(filter.limit);
  for (bool first = true; left > 0; first = false) {
    const std::int64_t rows = std::min(left, page_rows_);
    auto stmt = KW_TRY(db_->statement(page));
    stmt->bind(1, filter.benchmark)
        .bind(2, filter.provider)
        .bind(3, filter.workload)
        .bind(4, filter.environment)
        .bind(5, rows)
        .bind(6, std::int64_t{first ? 0 : 1})
        .bind(7, end.observed_at_ns)
        .bind(8, end.key_digest);
    end.rows = 0;
    KW_TRY(visit_runs(*db_, *stmt, visit, &end));
    if (end.rows < rows) return {};
    left -= rows;
  }
  return {};
}

Result<std::vector<StoredRun>> RunStore::runs(const RunFilter& filter) const {
  std::vector<StoredRun> out;
  KW_TRY(for_each_run(filter, [&](const StoredRun& run) -> Status {
    out.push_back(run);
    return {};
  }));
  return out;
}

Result<std::vector<StoredRun>> RunStore::newest_runs(std::int64_t key_id, std::size_t limit) const {
  // The id subquery is the indexed part (its plan is tested); the joins then touch N rows.
  static const std::string sql = "SELECT " + kRunColumns + "WHERE r.id IN (" +
                                 queries::kNewestRunIds + ") ORDER BY r.observed_at_ns DESC";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, key_id).bind_limit(2, limit);
  return collect_runs(*db_, *stmt);
}

Result<std::vector<StoredRun>> RunStore::newest_passed_runs(std::int64_t key_id,
                                                            core::Timestamp before,
                                                            std::size_t limit) const {
  static const std::string sql =
      "SELECT " + kRunColumns +
      "WHERE r.id IN (SELECT id FROM runs WHERE key_id = ?1 AND observed_at_ns < ?3 AND "
      "status = 'passed' AND NOT EXISTS (SELECT 1 FROM run_judgements s WHERE s.run_id = runs.id "
      "AND s.cycle < 0) ORDER BY observed_at_ns DESC LIMIT ?2) ORDER BY r.observed_at_ns DESC";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, key_id).bind_limit(2, limit).bind(3, before);
  return collect_runs(*db_, *stmt);
}

Result<std::vector<StoredRun>> RunStore::key_history(std::int64_t key_id) const {
  static const std::string sql =
      "SELECT " + kRunColumns + "WHERE r.key_id = ?1 ORDER BY r.observed_at_ns ASC";
  auto stmt = KW_TRY(db_->statement(sql));
  stmt->bind(1, key_id);
  return collect_runs(*db_, *stmt);
}

namespace {

// Columns only (schema v5): parsing each stored record was half the replay's time. The record is
// read only for a run without an externalId, and for the labels of a row kept whole (a query of
// its own, rare); the labels of a split row (where it ran) are its run template's, read once per
// template.
constexpr const char* kSummaryColumns =
    "SELECT r.key_id, r.observed_at_ns, coalesce(r.run_status, r.status), r.median_ns, r.p20_ns, "
    "r.p80_ns, "
    "coalesce(nullif(r.external_id, ''), r.name, json_extract(r.record, '$.run.metadata.name'), "
    "''), coalesce(i.version, ''), "
    "CASE WHEN r.implementation_digest IS NULL THEN coalesce(i.digest, '') "
    "ELSE r.implementation_digest END, r.software, "
    "coalesce(r.status_reason, ''), r.settled, coalesce(r.source, ''), r.id, r.environment_doc, "
    "j.confirmation, j.order_ns, j.cycle, r.run_template "
    "FROM runs r LEFT JOIN implementations i ON i.id = r.implementation_id "
    "LEFT JOIN run_judgements j ON j.run_id = r.id ";

// The software of the environment document `id` (an object, else none).
Result<json> document_software(Database& db, std::int64_t id) {
  auto stmt = KW_TRY(
      db.statement("SELECT json_extract(body, '$.spec.software') FROM documents WHERE id = ?1"));
  stmt->bind(1, id);
  if (!KW_TRY(stmt->step()) || stmt->column_is_null(0)) return json::object();
  json software = json::parse(stmt->column_text(0), nullptr, /*allow_exceptions=*/false);
  return software.is_object() ? software : json::object();
}

core::Placement placement_from_labels(const json& labels) {
  core::Placement out;
  if (!labels.is_object()) return out;
  const auto text = [&](std::string_view name) {
    const auto it = labels.find(std::string(name));
    return it != labels.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  out.host = text(core::kHostLabel);
  out.gpu = text(core::kGpuLabel);
  out.gpu_uuid = text(core::kGpuUuidLabel);
  out.pci_bus_id = text(core::kPciBusIdLabel);
  return out;
}

// Where the runs of a run template ran: its labels are strings, kept in the template (never a
// run's own values, storage/detail/record_layout.hpp), so every run of it shares them.
// The four labels from an object as SQLite's json_extract() writes one (minified): read from the
// text while it is flat, every value a string without escapes; nullopt for anything else (then
// parsed). Parsing each template's labels as a JSON document cost more than the rest of its read.
std::optional<core::Placement> flat_placement(std::string_view text) {
  std::size_t at = 0;
  const auto take = [&](char c) {
    if (at >= text.size() || text[at] != c) return false;
    ++at;
    return true;
  };
  const auto string = [&](std::string_view& out) {
    if (!take('"')) return false;
    const std::size_t end = text.find('"', at);
    if (end == std::string_view::npos) return false;
    out = text.substr(at, end - at);
    at = end + 1;
    return out.find('\\') == std::string_view::npos;
  };
  core::Placement out;
  if (!take('{')) return std::nullopt;
  if (take('}')) return at == text.size() ? std::optional(out) : std::nullopt;
  for (;;) {
    std::string_view name;
    std::string_view value;
    if (!string(name) || !take(':') || !string(value)) return std::nullopt;
    if (name == core::kHostLabel) out.host = value;
    if (name == core::kGpuLabel) out.gpu = value;
    if (name == core::kGpuUuidLabel) out.gpu_uuid = value;
    if (name == core::kPciBusIdLabel) out.pci_bus_id = value;
    if (take(',')) continue;
    return take('}') && at == text.size() ? std::optional(out) : std::nullopt;
  }
}

// Where the runs of a run template ran: its labels are strings, kept in the template (never a
// run's own values, storage/detail/record_layout.hpp), so every run of it shares them.
Result<core::Placement> template_placement(Database& db, std::int64_t id) {
  auto stmt =
      KW_TRY(db.statement("SELECT json_extract(body, '$.metadata.labels') FROM documents WHERE "
                          "id = ?1 AND json_valid(body)"));
  stmt->bind(1, id);
  if (!KW_TRY(stmt->step()) || stmt->column_is_null(0)) return core::Placement{};
  const std::string labels = stmt->column_text(0);
  if (auto flat = flat_placement(labels)) return *std::move(flat);
  return placement_from_labels(json::parse(labels, nullptr, false));
}

// Where a run kept whole ran: its record's labels.
Result<core::Placement> whole_row_placement(Database& db, std::int64_t run_id) {
  auto stmt = KW_TRY(
      db.statement("SELECT json_extract(record, '$.run.metadata.labels') FROM runs WHERE id = ?1 "
                   "AND record IS NOT NULL AND json_valid(record)"));
  stmt->bind(1, run_id);
  if (!KW_TRY(stmt->step()) || stmt->column_is_null(0)) return core::Placement{};
  return placement_from_labels(json::parse(stmt->column_text(0), nullptr, false));
}

// The rows a walk stepped through, readable or not, and the last one's place in time order.
struct WalkEnd {
  std::int64_t rows = 0;
  std::int64_t observed_at_ns = 0;
  std::int64_t key_id = 0;
};

Status visit_summaries(Database& db, Statement& stmt,
                       const std::function<Status(const RunSummary&)>& visit,
                       WalkEnd* end = nullptr) {
  const auto optional_ns = [](const Statement& s, int column) {
    return s.column_is_null(column) ? std::optional<std::chrono::nanoseconds>()
                                    : std::optional<std::chrono::nanoseconds>(
                                          std::chrono::nanoseconds(s.column_int(column)));
  };
  RunSummary run;
  // The software parsed last: an environment document's (its id; 0 for none) or a row's own.
  std::int64_t last_document = 0;
  std::optional<std::string> last_text;
  // Placements by run template (a few per key: one per host and GPU), and each host and GPU's
  // one shared placement (the templates of its runs of each key share it), by its fields.
  std::unordered_map<std::int64_t, core::SharedPlacement> placements;
  std::unordered_map<std::string, core::SharedPlacement> distinct;
  std::int64_t last_template = -1;  // the template of run.placement (-1: none)
  while (KW_TRY(stmt.step())) {
    const Statement& s = stmt;
    run.key_id = s.column_int(0);
    run.observed_at = s.column_timestamp(1);
    if (end != nullptr) *end = WalkEnd{end->rows + 1, s.column_int(1), run.key_id};
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
    // Most runs of a key share one software environment: parse it only when it changes. It is
    // the environment document's (schema v8) unless the row has its own.
    if (s.column_is_null(9) && !s.column_is_null(14)) {
      if (const std::int64_t id = s.column_int(14); last_document != id) {
        run.software = KW_TRY(document_software(db, id));
        last_document = id;
        last_text.reset();
      }
    } else if (std::string text = s.column_text(9); last_document != 0 || last_text != text) {
      run.software = text.empty() ? json::object() : json::parse(text, nullptr, false);
      if (!run.software.is_object()) run.software = json::object();
      last_text = std::move(text);
      last_document = 0;
    }
    run.status_reason = s.column_text(10);
    run.source = s.column_text(12);
    if (s.column_is_null(18)) {  // a row kept whole (rare): its labels from its record
      run.placement = KW_TRY(whole_row_placement(db, s.column_int(13)));
      last_template = -1;
    } else if (const std::int64_t id = s.column_int(18); id != last_template) {
      auto it = placements.find(id);
      if (it == placements.end()) {
        core::Placement placement = KW_TRY(template_placement(db, id));
        const std::string fields = placement.host + '\0' + placement.gpu + '\0' +
                                   placement.gpu_uuid + '\0' + placement.pci_bus_id;
        auto known = distinct.find(fields);
        if (known == distinct.end())
          known = distinct.emplace(fields, core::SharedPlacement(std::move(placement))).first;
        it = placements.emplace(id, known->second).first;
      }
      run.placement = it->second;
      last_template = id;
    }
    run.judged = s.column_is_null(11)    ? Judged::Never
                 : s.column_int(11) == 0 ? Judged::CycleOpen
                                         : Judged::CycleClosed;
    run.judgement.reset();
    if (!s.column_is_null(15)) {
      auto confirmation = parse_confirmation(s.column_text(15));
      if (!confirmation) {
        note_unreadable(db.path(), s.column_int(13),
                        db.path().string() + ": run " + std::to_string(s.column_int(13)) + ": " +
                            confirmation.error().message);
        continue;
      }
      run.judgement = Judgement{*confirmation, s.column_timestamp(16), s.column_int(17)};
    }
    KW_TRY(visit(run));
  }
  return {};
}

}  // namespace

Status RunStore::for_each_in_time_order(
    const std::function<Status(const RunSummary&)>& visit) const {
  if (db_->dialect() == Dialect::Sqlite) {
    // SQLite steps through the index a row at a time: one statement, flat memory.
    auto stmt = KW_TRY(
        db_->statement(std::string(kSummaryColumns) + "ORDER BY r.observed_at_ns, r.key_id"));
    return visit_summaries(*db_, *stmt, visit);
  }
  // PostgreSQL hands a statement's rows over whole: pages through the (observed_at, key_id)
  // index, each after the last row of the one before, keep a replay of any size in flat memory.
  static const std::string page =
      std::string(kSummaryColumns) +
      "WHERE r.observed_at_ns >= ?1 AND NOT (r.observed_at_ns = ?1 AND r.key_id <= ?2) "
      "ORDER BY r.observed_at_ns, r.key_id LIMIT ?3";
  WalkEnd end{0, std::numeric_limits<std::int64_t>::min(),
              std::numeric_limits<std::int64_t>::min()};
  while (true) {
    auto stmt = KW_TRY(db_->statement(page));
    stmt->bind(1, end.observed_at_ns).bind(2, end.key_id).bind(3, page_rows_);
    end.rows = 0;
    KW_TRY(visit_summaries(*db_, *stmt, visit, &end));
    if (end.rows < page_rows_) return {};
  }
}

Result<std::map<std::int64_t, RunStore::RecentMedians>> RunStore::recent_medians(
    std::size_t newest) const {
  // The counts in one pass over the (key_id, observed_at) index, then each key's newest runs
  // through it: a window function over every run was several times slower.
  // Only this host's runs: the other hosts' runs it keeps (seeds and controls, cycle < 0) are
  // neither counted nor drawn.
  std::map<std::int64_t, RecentMedians> out;
  {
    auto counts = KW_TRY(db_->statement("SELECT key_id, count(*) FROM runs GROUP BY key_id"));
    while (KW_TRY(counts->step())) out[counts->column_int(0)].runs = counts->column_int(1);
    auto fleet = KW_TRY(
        db_->statement("SELECT r.key_id, count(*) FROM run_judgements j JOIN runs r ON r.id = "
                       "j.run_id WHERE j.cycle < 0 GROUP BY r.key_id"));
    while (KW_TRY(fleet->step())) out[fleet->column_int(0)].runs -= fleet->column_int(1);
  }
  for (auto& [key_id, recent] : out) {
    auto stmt = KW_TRY(db_->statement(
        "SELECT CASE WHEN status = 'passed' THEN median_ns END FROM runs WHERE key_id = ?1 "
        "AND NOT EXISTS (SELECT 1 FROM run_judgements j WHERE j.run_id = runs.id AND j.cycle < 0) "
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
                                     "LIMIT ?2) AS newest ORDER BY 2";
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

Status RunStore::record_judgement(Transaction& tx, std::int64_t key_id, core::Timestamp observed_at,
                                  const Judgement& judgement) {
  KW_ASSERT(tx.is_open_on(*db_), "the transaction is open on this store's connection");
  // A run judged here is unsettled until its cycle closes; another host's is never judged here.
  if (judgement.confirmation != Confirmation::NotJudged && !judgement.is_fleet()) {
    auto stmt = KW_TRY(
        db_->statement("UPDATE runs SET settled = 0 WHERE key_id = ?1 AND observed_at_ns = ?2"));
    stmt->bind(1, key_id).bind(2, observed_at);
    KW_TRY(stmt->run());
  }
  auto stmt = KW_TRY(db_->statement(
      "INSERT INTO run_judgements (run_id, confirmation, order_ns, cycle) "
      "SELECT id, CAST(?3 AS TEXT), CAST(?4 AS BIGINT), CAST(?5 AS BIGINT) FROM runs "
      "WHERE key_id = ?1 AND observed_at_ns = ?2 ON CONFLICT (run_id) DO UPDATE SET "
      "confirmation = excluded.confirmation, order_ns = excluded.order_ns, "
      "cycle = excluded.cycle"));
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
  auto stmt = KW_TRY(db_->statement("SELECT id FROM keys WHERE digest = ?1"));
  stmt->bind(1, key_digest);
  return first_row(*stmt, [](const Statement& s) { return s.column_int(0); });
}

Result<std::string> RunStore::resolve_alias(std::string_view digest) const {
  auto stmt = KW_TRY(db_->statement("SELECT canonical FROM key_aliases WHERE alias = ?1"));
  stmt->bind(1, digest);
  const auto canonical =
      KW_TRY(first_row(*stmt, [](const Statement& s) { return s.column_text(0); }));
  return canonical.value_or(std::string());
}

}  // namespace kernelwatch::storage
