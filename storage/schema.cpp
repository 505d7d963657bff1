#include "storage/detail/schema.hpp"

#include <string>
#include <vector>

#include "core/digest.hpp"
#include "core/record.hpp"
#include "storage/connection.hpp"
#include "storage/detail/database.hpp"

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

// Version 8 (the entry after #23's; renumbered if another lands first): how the daemon judged each
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

constexpr Migration kMigrations[] = {
    {kV1}, {kV2}, {kV3}, {kV4}, {kV5}, {kV6}, {kV7, upgrade_stored_records}, {kRunJudgements}};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const Migration> migrations() {
  return kMigrations;
}

}  // namespace kernelwatch::storage
