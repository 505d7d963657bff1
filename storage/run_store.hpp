// Runs keyed by comparability key: the key's parts, the source digests kept as their aliases,
// implementations, and the runs. A peer of AlertStore and Outbox on one Connection.
// Public API is plain C++ over core types; the SQL stays in storage/run_store.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/key.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/run.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

// Whether the daemon judged a run: imported runs never were (their alerts are history, not
// news); a judged run's cycle is open until its held alerts were decided and stored.
enum class Judged { Never, CycleOpen, CycleClosed };

// How the daemon judged a run it stored (schema v7): what a replay needs to judge it the same way.
enum class Confirmation {
  Next,       // confirmed by the next run: the daemon's own rerun
  Alone,      // judged alone: a posted run, which cannot be rerun
  NotJudged,  // stored, not judged: older than its key's newest run beyond the clock tolerance
};
[[nodiscard]] std::string_view to_string(Confirmation confirmation) noexcept;
[[nodiscard]] Result<Confirmation> parse_confirmation(std::string_view text);

struct Judgement {
  Confirmation confirmation = Confirmation::Alone;
  // Where in time the daemon judged it: its observedAt, or just after its key's newest run when
  // it came a little late (within the clock tolerance).
  core::Timestamp order{};
  // The cycle or posted batch it was judged in (0: not known, judged before schema v7;
  // kSeedCycle: a fleet's seed; kControlCycle: a fleet's control).
  std::int64_t cycle = 0;

  // A seed (storage.warm_start): another host's run stored as the start of a key new to this
  // host. Never judged here and no part of this host's cycles; a replay builds its key's detector
  // from it as Engine::warm_start did (detectors::Watch::seed), and a fleet's reads skip it.
  static constexpr std::int64_t kSeedCycle = -1;
  [[nodiscard]] static Judgement seed(core::Timestamp observed_at) {
    return Judgement{Confirmation::Next, observed_at, kSeedCycle};
  }
  [[nodiscard]] bool is_seed() const { return cycle == kSeedCycle; }
  // A control (storage.fleet_controls): another host's run of a key read around a step of this
  // host's run of it, stored with `order` the observedAt of the run that confirmed the step (the
  // step it was read for). Never judged here and no part of this host's cycles; a replay gives it
  // to the step's decision as Engine::read_fleet_controls did (detectors::Watch::add_fleet_run).
  static constexpr std::int64_t kControlCycle = -2;
  [[nodiscard]] static Judgement control(core::Timestamp for_step) {
    return Judgement{Confirmation::Next, for_step, kControlCycle};
  }
  [[nodiscard]] bool is_control() const { return cycle == kControlCycle; }
  // Another host's run (a seed or a control), not this host's: a fleet's reads skip it.
  [[nodiscard]] bool is_fleet() const { return cycle < 0; }
};

struct StoredRun {
  std::int64_t id = 0;
  std::int64_t key_id = 0;
  core::ComparabilityKey key;
  core::Record record;
  std::string implementation_version;  // "" when the source did not say
  Judged judged = Judged::Never;
};

// A run as a replay needs it, read from the columns and a few fields of its stored record
// without parsing the whole record: what makes a backtest or a restart cheap in time and memory.
struct RunSummary {
  std::int64_t key_id = 0;
  core::Timestamp observed_at{};
  core::RunStatus status = core::RunStatus::Passed;
  std::optional<std::chrono::nanoseconds> median;
  std::optional<std::chrono::nanoseconds> p20;
  std::optional<std::chrono::nanoseconds> p80;
  std::string external_id;  // sourceNative.externalId, else metadata.name
  std::string implementation_version;
  std::string implementation_digest;                   // the record's own ("" when it had none)
  nlohmann::json software = nlohmann::json::object();  // the environment's software
  std::string status_reason;
  std::string source;  // sourceNative.source ("kernelwatch" for the daemon's own runs)
  // Where it ran (its host, gpu_index, gpu_uuid and pci_bus_id labels): read from its run
  // template, once per template, not per run (the siblings rule of a replay needs it); the
  // templates of one host and GPU share one (core::SharedPlacement: a copy is a pointer).
  core::SharedPlacement placement;
  Judged judged = Judged::Never;
  std::optional<Judgement> judgement;  // nullopt: never judged by the daemon (imported)
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

// What insert_run did, and the id of the run's key (stored now or before), so the caller
// never derives and looks up the key again.
struct Insertion {
  InsertOutcome outcome = InsertOutcome::Inserted;
  std::int64_t key_id = 0;
};

// Shares its Connection with AlertStore and Outbox: use it on the thread that uses the
// connection. Cheap to build; build one where it is needed.
class RunStore {
 public:
  explicit RunStore(Connection& connection);

  // Stores a run inside an open transaction of the same connection, under the key it carries.
  // The same run (same key and observedAt) arriving again is a Duplicate and changes nothing.
  // raw_source is the text the run came from ("" for none).
  [[nodiscard]] Result<Insertion> insert_run(Transaction& tx, const core::Run& run,
                                             std::string_view raw_source);
  // insert_run() of a record that is not a run yet (its key derived here): a ParseError when it
  // has none. For writers that hold bare records (benchmarks, tests).
  [[nodiscard]] Result<Insertion> insert_run(Transaction& tx, core::Record record,
                                             std::string_view raw_source);

  // The daemon judged this run (stored just before, in the same transaction) as `judgement`
  // says: its cycle is open (a run it did not judge has no cycle to close).
  [[nodiscard]] Status record_judgement(Transaction& tx, std::int64_t key_id,
                                        core::Timestamp observed_at, const Judgement& judgement);
  // Every judged run's cycle closed: their alerts are decided and stored.
  [[nodiscard]] Status close_judged_cycles(Transaction& tx);

  [[nodiscard]] Result<std::vector<KeySummary>> keys() const;
  // The runs a filter selects, newest first, one at a time from the query (a history of any size
  // in the memory of one run). Stops at the first error `visit` returns.
  [[nodiscard]] Status for_each_run(const RunFilter& filter,
                                    const std::function<Status(const StoredRun&)>& visit) const;
  [[nodiscard]] Result<std::vector<StoredRun>> runs(const RunFilter& filter) const;
  // One key's newest `limit` runs, newest first, through the (key_id, observed_at) index.
  [[nodiscard]] Result<std::vector<StoredRun>> newest_runs(std::int64_t key_id,
                                                           std::size_t limit) const;
  // One key's newest `limit` passed runs observed before `before`, newest first, less the runs
  // this host took from others (seeds and controls: storage/fleet.hpp).
  [[nodiscard]] Result<std::vector<StoredRun>> newest_passed_runs(std::int64_t key_id,
                                                                  core::Timestamp before,
                                                                  std::size_t limit) const;
  // Every run of one key, oldest first (what a backtest replays).
  [[nodiscard]] Result<std::vector<StoredRun>> key_history(std::int64_t key_id) const;
  // Every run of every key in observedAt order (ties: key, then insertion), one at a time:
  // memory stays what `visit` keeps, whatever the history's size. Stops at the first error
  // `visit` returns.
  [[nodiscard]] Status for_each_in_time_order(
      const std::function<Status(const RunSummary&)>& visit) const;
  // One key's runs as summaries, oldest first: all of them (newest 0), or only the newest N
  // (the dashboard's key page and sparklines: no stored record is parsed).
  // Every key's run count and the medians of its newest `newest` runs that passed (oldest
  // first): the dashboard's sparklines. This host's runs only: the other hosts' runs it keeps
  // (seeds and controls) are neither counted nor drawn.
  struct RecentMedians {
    std::int64_t runs = 0;
    std::vector<std::int64_t> medians_ns;
  };
  [[nodiscard]] Result<std::map<std::int64_t, RecentMedians>> recent_medians(
      std::size_t newest) const;
  [[nodiscard]] Result<std::vector<RunSummary>> key_summaries(std::int64_t key_id,
                                                              std::size_t newest = 0) const;
  [[nodiscard]] Result<std::int64_t> run_count() const;
  // The stored rows of this database file that this process could not read, each with why
  // ("FILE: run 12: ..."). Every query skips them instead of failing: no stored row can stop
  // the daemon from starting or an answer from being given.
  [[nodiscard]] std::vector<std::string> unreadable() const;
  // The id of the key with this digest (ComparabilityKey::digest()); nullopt when not stored.
  [[nodiscard]] Result<std::optional<std::int64_t>> find_key(std::string_view key_digest) const;
  // The canonical digest a source digest is an alias of ("" when unknown).
  [[nodiscard]] Result<std::string> resolve_alias(std::string_view digest) const;

  // Rows per page of a PostgreSQL database's walks in time order (for_each_in_time_order,
  // for_each_run; SQLite's is one statement each). Tests
  // make it small to cross page boundaries.
  void set_page_rows(std::int64_t rows) { page_rows_ = rows; }

 private:
  Database* db_;
  std::int64_t page_rows_ = 20000;
};

}  // namespace kernelwatch::storage
