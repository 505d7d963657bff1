#include "storage/detail/schema.hpp"

#include <string>
#include <vector>

#include "core/digest.hpp"
#include "core/record.hpp"
#include "storage/connection.hpp"
#include "storage/detail/database.hpp"
#include "storage/detail/record_layout.hpp"
#include "storage/detail/run_rows.hpp"

namespace kernelwatch::storage {
namespace {

// Rewrites every stored record still in an earlier form (run_status not set yet, or one of
// kernelwatch's own sources) as parse_record() upgrades it, a thousand rows at a time so memory
// stays flat. A row that cannot be read is left as it is, for the readers to skip and count as
// before.
Status upgrade_stored_records(Database& db) {
  struct Upgraded {
    std::int64_t id;
    std::string record;
    std::string run_status;
    std::string outcome;
    std::string software;
    std::string reason;
  };
  constexpr std::int64_t kBatch = 1000;
  std::int64_t after = 0;
  while (true) {
    std::vector<Upgraded> rows;
    std::int64_t last = after;
    {
      auto select = KW_TRY(
          db.statement("SELECT id, record FROM runs WHERE id > ?1 AND (run_status IS NULL "
                       "OR coalesce(source, '') IN ('kernelwatch', 'kernelwatch-liger-bench')) "
                       "ORDER BY id LIMIT ?2"));
      select->bind(1, after).bind(2, kBatch);
      while (KW_TRY(select->step())) {
        last = select->column_int(0);
        const auto parsed = nlohmann::json::parse(select->column_text(1), nullptr, false);
        if (parsed.is_discarded()) continue;
        auto record = core::parse_record(parsed);
        if (!record) continue;
        rows.push_back({last, core::canonical_json(core::to_json(*record)),
                        std::string(core::to_string(record->run.status)),
                        std::string(core::to_string(record->run.outcome())),
                        core::canonical_json(record->environment.software),
                        record->run.status_reason});
      }
    }
    if (last == after) return {};
    after = last;
    for (const auto& row : rows) {
      auto update = KW_TRY(
          db.statement("UPDATE runs SET record = ?2, run_status = ?3, status = ?4, software = ?5, "
                       "status_reason = nullif(?6, '') WHERE id = ?1"));
      update->bind(1, row.id)
          .bind(2, row.record)
          .bind(3, row.run_status)
          .bind(4, row.outcome)
          .bind(5, row.software)
          .bind(6, row.reason);
      KW_TRY(update->run());
    }
  }
}

// The software a replay reads from a version-7 column: an object, else none.
nlohmann::json effective_software(const nlohmann::json& software) {
  return software.is_object() ? software : nlohmann::json::object();
}

// Each row's implementation row (digest, version), for the leaves of its record that it holds.
using ImplementationRow = std::pair<std::optional<std::string>, std::optional<std::string>>;

// Up to `batch` version-7 runs with an id above `after`, in id order, their source split into
// its template and values; `implementations` gets each one's implementation row.
Status read_v7_runs(Database& db, std::int64_t after, std::int64_t batch, std::vector<RunRow>& rows,
                    std::vector<ImplementationRow>& implementations) {
  auto select = KW_TRY(db.statement(
      "SELECT r.id, r.key_id, r.observed_at_ns, r.status, r.run_status, r.median_ns, "
      "r.p20_ns, r.p80_ns, r.implementation_id, r.external_id, r.record, r.raw_source, "
      "r.implementation_digest, r.software, r.status_reason, r.source, r.settled, i.digest, "
      "i.version "
      "FROM runs_v7 r LEFT JOIN implementations i ON i.id = r.implementation_id "
      "WHERE r.id > ?1 ORDER BY r.id LIMIT ?2"));
  select->bind(1, after).bind(2, batch);
  const auto optional_int = [&](int column) {
    return select->column_is_null(column) ? std::optional<std::int64_t>()
                                          : std::optional<std::int64_t>(select->column_int(column));
  };
  const auto optional_text = [&](int column) {
    return select->column_is_null(column) ? std::optional<std::string>()
                                          : std::optional<std::string>(select->column_text(column));
  };
  while (KW_TRY(select->step())) {
    RunRow row;
    row.id = select->column_int(0);
    row.key_id = select->column_int(1);
    row.observed_at_ns = select->column_int(2);
    row.outcome = select->column_text(3);
    row.run_status = optional_text(4);
    row.median_ns = optional_int(5);
    row.p20_ns = optional_int(6);
    row.p80_ns = optional_int(7);
    row.implementation_id = optional_int(8);
    row.external_id = select->column_text(9);
    row.record = select->column_text(10);
    const auto raw_source = optional_text(11);
    const auto own_digest = optional_text(12);
    row.software = optional_text(13);
    row.status_reason = optional_text(14);
    row.source = optional_text(15);
    row.settled = optional_int(16);
    // The record's own implementationDigest: the implementation row's, none, or (never
    // written so, but kept if found) another.
    if (!own_digest) {
      row.implementation_digest = "";
    } else if (!select->column_is_null(17) && *own_digest == select->column_text(17)) {
      row.implementation_digest = std::nullopt;
    } else {
      row.implementation_digest = own_digest;
    }
    if (raw_source) {
      const auto source = nlohmann::json::parse(*raw_source, nullptr, false);
      layout::SplitDocument parts = source.is_discarded()
                                        ? layout::SplitDocument{nlohmann::json(*raw_source), ""}
                                        : layout::split_source(source);
      row.source_template = KW_TRY(store_document(db, parts.shape, nullptr));
      if (!parts.values.empty()) row.source_values = std::move(parts.values);
    }
    rows.push_back(std::move(row));
    implementations.emplace_back(optional_text(17), optional_text(18));
  }
  return {};
}

// A version-7 run's record split into its documents, template and values (kept whole where it
// does not split: a row that no longer parses stays unreadable, as it was).
Status split_v7_record(Database& db, RunRow& row, const ImplementationRow& implementation) {
  const auto record = nlohmann::json::parse(*row.record, nullptr, false);
  layout::RunColumns columns{row.run_status.value_or(""),
                             row.observed_at_ns,
                             row.median_ns,
                             row.external_id,
                             std::nullopt,
                             implementation.first,
                             implementation.second};
  auto split = record.is_discarded() ? std::nullopt : layout::split_record(record, columns);
  if (split) {
    row.record.reset();
    row.name = columns.name;
    if (split->run) {
      row.run_template = KW_TRY(store_document(db, split->run->shape, nullptr));
      if (!split->run->values.empty()) row.run_values = split->run->values;
    }
    for (auto [member, id] : {std::pair{&split->protocol, &row.protocol_doc},
                              std::pair{&split->environment, &row.environment_doc},
                              std::pair{&split->workload, &row.workload_doc},
                              std::pair{&split->implementation, &row.implementation_doc},
                              std::pair{&split->extra, &row.extra_doc}}) {
      if (*member) *id = KW_TRY(store_document(db, **member, nullptr));
    }
    // The software column becomes the environment document's where they agree.
    nlohmann::json from_document = nlohmann::json::object();
    if (split->environment && split->environment->is_object()) {
      const auto spec = split->environment->find("spec");
      if (spec != split->environment->end() && spec->is_object() && spec->contains("software"))
        from_document = effective_software((*spec)["software"]);
    }
    const auto stored = row.software ? nlohmann::json::parse(*row.software, nullptr, false)
                                     : nlohmann::json::object();
    if (effective_software(stored) == from_document) row.software.reset();
  }
  return {};
}

// Copies every run of the version-7 table into the version-8 one, a thousand at a time, with
// its id and every column a query reads; the record is split into its documents, template and
// values. Then the old table goes and the indexes are built.
Status split_stored_runs(Database& db) {
  constexpr std::int64_t kBatch = 1000;
  std::int64_t after = 0;
  while (true) {
    std::vector<RunRow> rows;
    std::vector<ImplementationRow> implementations;
    KW_TRY(read_v7_runs(db, after, kBatch, rows, implementations));
    if (rows.empty()) break;
    after = *rows.back().id;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      KW_TRY(split_v7_record(db, rows[i], implementations[i]));
      KW_TRY(insert_run_row(db, rows[i]));
    }
  }
  return db.exec(R"sql(
DROP TABLE runs_v7;
CREATE INDEX runs_by_time ON runs (observed_at_ns, key_id);
CREATE INDEX runs_unsettled ON runs (key_id) WHERE settled = 0;
)sql");
}

// Version 1: the comparability-key parts, aliases of source digests, and runs.
// The UNIQUE (key_id, observed_at_ns) index both deduplicates runs and serves a key's newest N
// runs by a backward index walk, with no scan and no sort.
constexpr const char* kV1 = R"sql(
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  document TEXT NOT NULL
);
CREATE TABLE environments (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  document TEXT NOT NULL
);
CREATE TABLE protocols (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  document TEXT NOT NULL
);
CREATE TABLE implementations (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  provider TEXT NOT NULL,
  version TEXT NOT NULL
);
CREATE TABLE keys (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  benchmark TEXT NOT NULL,
  benchmark_digest TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_digest TEXT NOT NULL,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  protocol_id INTEGER NOT NULL REFERENCES protocols(id)
);
CREATE INDEX keys_by_labels ON keys (benchmark, provider);
CREATE TABLE key_aliases (
  alias TEXT PRIMARY KEY,
  part TEXT NOT NULL CHECK (part IN ('workload', 'environment', 'protocol')),
  canonical TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES keys(id),
  observed_at_ns INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'inconclusive')),
  median_ns INTEGER,
  p20_ns INTEGER,
  p80_ns INTEGER,
  implementation_id INTEGER REFERENCES implementations(id),
  external_id TEXT NOT NULL,
  record TEXT NOT NULL,
  raw_source TEXT,
  UNIQUE (key_id, observed_at_ns)
);
)sql";

// Version 2: the notification outbox. One row per (notification, destination), written in the
// same transaction as the alert state that caused it. The partial indexes keep the worker's
// queries off delivered and dead rows: due rows in queue order (the oldest row probes a failing
// destination, so its growing backoff paces the whole queue), and the next due time.
constexpr const char* kV2 = R"sql(
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  destination TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at_ns INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
  next_attempt_at_ns INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '',
  finished_at_ns INTEGER,
  UNIQUE (destination, idempotency_key)
);
CREATE INDEX outbox_due ON outbox (destination, id) WHERE state = 'pending';
CREATE INDEX outbox_next ON outbox (destination, next_attempt_at_ns) WHERE state = 'pending';
CREATE INDEX outbox_dead ON outbox (finished_at_ns) WHERE state = 'dead';
)sql";

// Version 3: alert state for the status API, with the notifications a state change still owes
// (written with the run, sent grouped at the end of the cycle), and the operator's actions
// (acknowledge, rebaseline), the only alert input that cannot be rebuilt by replaying runs.
constexpr const char* kV3 = R"sql(
CREATE TABLE alerts (
  id TEXT PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES keys(id),
  kind TEXT NOT NULL,
  direction TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('firing', 'acknowledged', 'resolved', 'rebaselined')),
  fired_at_ns INTEGER NOT NULL,
  updated_at_ns INTEGER NOT NULL,
  document TEXT NOT NULL,
  pending_notifications TEXT
) WITHOUT ROWID;
CREATE INDEX alerts_pending ON alerts (fired_at_ns) WHERE pending_notifications IS NOT NULL;
CREATE INDEX alerts_by_state ON alerts (state, fired_at_ns);
CREATE INDEX alerts_by_key ON alerts (key_id, fired_at_ns);
CREATE TABLE alert_actions (
  id INTEGER PRIMARY KEY,
  alert_id TEXT NOT NULL,
  key_id INTEGER NOT NULL REFERENCES keys(id),
  action TEXT NOT NULL CHECK (action IN ('acknowledge', 'rebaseline')),
  at_ns INTEGER NOT NULL
);
CREATE INDEX alert_actions_by_key ON alert_actions (key_id, at_ns);
-- The status API counts the outbox per destination and state on every request: a covering
-- index keeps that off the payloads.
CREATE INDEX outbox_state ON outbox (destination, state);
)sql";

// Version 4: typed alert rows and the notification decided from them. What an alert's last
// notification said (`notified`) and when it was queued (`notified_at_ns`, wall clock) replace
// the list of notifications an alert owed: a flush announces what differs from the current state,
// and a reminder is due repeat_interval after the last notification, so replaying runs at start
// cannot invent or advance one. An environment incident has no key (`key_id` NULL). Rows that
// owed nothing count as announced in their state; what was owed stays owed. Runs get `settled`:
// NULL for imported runs, 0 for a run the daemon judged whose cycle has not closed yet (its alert
// may still be held), 1 once closed: a restart raises the alerts of unsettled runs.
constexpr const char* kV4 = R"sql(
CREATE TABLE alerts_v4 (
  id TEXT PRIMARY KEY,
  key_id INTEGER REFERENCES keys(id),
  kind TEXT NOT NULL CHECK (kind IN ('step', 'drift', 'environment', 'failed')),
  direction TEXT NOT NULL CHECK (direction IN ('regression', 'improvement')),
  state TEXT NOT NULL CHECK (state IN ('firing', 'acknowledged', 'resolved', 'rebaselined')),
  fired_at_ns INTEGER NOT NULL,
  updated_at_ns INTEGER NOT NULL,
  document TEXT NOT NULL,
  notified TEXT CHECK (notified IN ('firing', 'resolved')),
  notified_at_ns INTEGER
) WITHOUT ROWID;
INSERT INTO alerts_v4 (id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, document,
                       notified, notified_at_ns)
  SELECT id, key_id, kind, direction, state, fired_at_ns, updated_at_ns, document,
         CASE WHEN pending_notifications IS NULL
                THEN CASE state WHEN 'resolved' THEN 'resolved' ELSE 'firing' END
              WHEN state = 'resolved' THEN 'firing'
              ELSE NULL END,
         CASE WHEN pending_notifications IS NULL THEN updated_at_ns ELSE NULL END
  FROM alerts;
DROP TABLE alerts;
ALTER TABLE alerts_v4 RENAME TO alerts;
CREATE INDEX alerts_by_state ON alerts (state, fired_at_ns);
CREATE INDEX alerts_by_key ON alerts (key_id, fired_at_ns);
CREATE INDEX alerts_to_notify ON alerts (fired_at_ns)
  WHERE notified IS NULL OR (state = 'resolved' AND notified = 'firing');
CREATE INDEX alerts_reminders ON alerts (notified_at_ns) WHERE state = 'firing';
ALTER TABLE runs ADD COLUMN settled INTEGER;
CREATE INDEX runs_unsettled ON runs (key_id) WHERE settled = 0;
)sql";

// Version 5: what a replay (start, backtest) reads of each run, as columns, so that it never parses
// the stored record (a replay of 25,200 runs spent half its time in SQLite's JSON parser), and
// the index it reads the runs in time order through. Filled for the runs already stored.
constexpr const char* kV5 = R"sql(
ALTER TABLE runs ADD COLUMN implementation_digest TEXT;
ALTER TABLE runs ADD COLUMN software TEXT;
ALTER TABLE runs ADD COLUMN status_reason TEXT;
ALTER TABLE runs ADD COLUMN source TEXT;
UPDATE runs SET
  implementation_digest = json_extract(record, '$.run.spec.implementationDigest'),
  software = json_extract(record, '$.environment.spec.software'),
  status_reason = json_extract(record, '$.run.spec.statusReason'),
  source = json_extract(record, '$.run.spec.sourceNative.source');
CREATE INDEX IF NOT EXISTS runs_by_time ON runs (observed_at_ns, key_id);
)sql";

// Version 6: where an alert came from. 'history': the replay of imported history found it (no one
// was paged for runs imported after the fact, so it is never notified, not even its resolve);
// 'daemon': this daemon judged the run live and notifies it.
constexpr const char* kV6 = R"sql(
ALTER TABLE alerts ADD COLUMN origin TEXT NOT NULL DEFAULT 'daemon'
  CHECK (origin IN ('daemon', 'history'));
)sql";

// Version 7: runs in kernelindex's public vocabulary and forms (issue #23). `status` keeps what a
// run means to detection (passed, failed, inconclusive: its outcome); `run_status` is the
// record's public status (runtime_error, timeout, incomplete_evidence, ...). Records that
// kernelwatch wrote in its earlier forms (status "failed"/"inconclusive" with statusReason; its
// own runs' metrics, environment software and protocol) are rewritten by the C++ pass
// (upgrade_stored_records) into the forms it writes now; each keeps its key, since a key's
// protocol part is the equivalence of the old and new protocol documents.
constexpr const char* kV7 = R"sql(
ALTER TABLE runs ADD COLUMN run_status TEXT;
UPDATE runs SET run_status = 'passed'
  WHERE status = 'passed' AND coalesce(source, '') NOT IN ('kernelwatch', 'kernelwatch-liger-bench');
)sql";

// Version 8: a run kept small (issue #26). The documents runs share (protocol, environment,
// workload, implementation, and each run document's template: the document with its per-run
// leaves cut out) are stored once in `documents` and referenced by id; a run keeps its typed
// columns, the per-run leaves of its document (`run_values`, a short JSON array) and, for a Liger
// CSV row, the columns of its source row that its key does not already say (storage/detail/
// record_layout.hpp). `implementation_digest` is NULL when the record's digest is its
// implementation row's ('' when it had none); `software` NULL when it is its environment
// document's. `record` holds a record whole only where it could not be split. No foreign keys on
// the document ids: documents are never deleted, and each would cost a lookup per insert. The
// status CHECK is spelled with OR: SQLite checked `IN (...)` through a temporary table built for
// every insert (a fifth of an import's time). The rows are copied by the C++ pass
// (split_stored_runs), which also drops the old table and builds the indexes once at the end.
constexpr const char* kV8 = R"sql(
DROP INDEX IF EXISTS runs_by_time;
DROP INDEX IF EXISTS runs_unsettled;
ALTER TABLE runs RENAME TO runs_v7;
CREATE TABLE documents (
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  body TEXT NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  key_id INTEGER NOT NULL REFERENCES keys(id),
  observed_at_ns INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status = 'passed' OR status = 'failed' OR status = 'inconclusive'),
  run_status TEXT,
  median_ns INTEGER,
  p20_ns INTEGER,
  p80_ns INTEGER,
  implementation_id INTEGER REFERENCES implementations(id),
  implementation_digest TEXT,
  external_id TEXT NOT NULL,
  name TEXT,
  status_reason TEXT,
  source TEXT,
  software TEXT,
  settled INTEGER,
  run_template INTEGER,
  run_values TEXT,
  protocol_doc INTEGER,
  environment_doc INTEGER,
  workload_doc INTEGER,
  implementation_doc INTEGER,
  extra_doc INTEGER,
  source_template INTEGER,
  source_values TEXT,
  record TEXT,
  UNIQUE (key_id, observed_at_ns)
);
)sql";

// Version 9: how the daemon judged each
// run it stored, so that a replay judges it the same way: confirmed by the next run (its own rerun)
// or alone (a posted run), or not judged at all (it came older than its key's newest run by more
// than the clock tolerance); the place in time it was judged at (its observedAt, or just after its
// key's newest run when it came a little late: a run dated minutes ahead must not stop the next one
// from being judged); and the cycle or posted batch it was judged in (a replay closes the cycle
// where the daemon closed it). The runs the daemon judged before this version are taken as judged
// at their observedAt, confirmed as their source was, in no known cycle. An action on an incident
// is stored without a key.
constexpr const char* kRunJudgements = R"sql(
CREATE TABLE run_judgements (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id),
  confirmation TEXT NOT NULL CHECK (confirmation IN ('next', 'alone', 'not_judged')),
  order_ns INTEGER NOT NULL,
  cycle INTEGER NOT NULL
);
INSERT INTO run_judgements (run_id, confirmation, order_ns, cycle)
  SELECT id, CASE WHEN source IN ('kernelwatch', 'kernelwatch-liger-bench') THEN 'next'
                  ELSE 'alone' END, observed_at_ns, 0
  FROM runs WHERE settled IS NOT NULL;
-- An operator's action on an incident has no key (key_id NULL): a replay acts on the incident,
-- and its members' keys get an action row each.
CREATE TABLE alert_actions_new (
  id INTEGER PRIMARY KEY,
  alert_id TEXT NOT NULL,
  key_id INTEGER REFERENCES keys(id),
  action TEXT NOT NULL CHECK (action IN ('acknowledge', 'rebaseline')),
  at_ns INTEGER NOT NULL
);
INSERT INTO alert_actions_new (id, alert_id, key_id, action, at_ns)
  SELECT id, alert_id, key_id, action, at_ns FROM alert_actions;
DROP TABLE alert_actions;
ALTER TABLE alert_actions_new RENAME TO alert_actions;
CREATE INDEX alert_actions_by_key ON alert_actions (key_id, at_ns);
)sql";

constexpr Migration kMigrations[] = {{kV1},
                                     {kV2},
                                     {kV3},
                                     {kV4},
                                     {kV5},
                                     {kV6},
                                     {kV7, upgrade_stored_records},
                                     {kV8, split_stored_runs},
                                     {kRunJudgements}};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const Migration> migrations() {
  return kMigrations;
}

}  // namespace kernelwatch::storage
