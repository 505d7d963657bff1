#include "storage/fleet.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <utility>

#include "storage/detail/database.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::storage {
namespace {

Status read_host(Database& db, const AlertStore& alerts, FleetHost& host) {
  const std::string schema = quoted_identifier(host.schema);
  host.keys = KW_TRY(db.query_int("SELECT count(*) FROM " + schema + ".keys"));
  // runs_by_time (observed_at_ns, key_id): the newest run is one index probe.
  auto newest = KW_TRY(db.statement("SELECT max(observed_at_ns) FROM " + schema + ".runs"));
  if (KW_TRY(newest->step())) host.newest_run = newest->column_optional_timestamp(0);
  auto counts = KW_TRY(db.statement("SELECT state, count(*) FROM " + schema +
                                    ".alerts WHERE state IN ('firing', 'acknowledged') "
                                    "GROUP BY state"));
  while (KW_TRY(counts->step())) {
    (counts->column_text(0) == "firing" ? host.firing : host.acknowledged) = counts->column_int(1);
  }
  host.open = KW_TRY(alerts.open_in_schema(host.schema, kFleetOpenAlerts));
  return {};
}

// Every schema of the database that holds kernelwatch's tables, by name, and whether it is the
// connection's own.
Result<std::vector<std::pair<std::string, bool>>> kernelwatch_schemas(Database& db) {
  std::vector<std::pair<std::string, bool>> schemas;
  auto stmt = KW_TRY(
      db.statement("SELECT schemaname, CASE WHEN schemaname = current_schema() THEN 1 ELSE 0 END "
                   "FROM pg_catalog.pg_tables WHERE tablename = 'kernelwatch_schema' "
                   "ORDER BY schemaname COLLATE \"C\""));
  while (KW_TRY(stmt->step())) schemas.emplace_back(stmt->column_text(0), stmt->column_int(1) == 1);
  return schemas;
}

// A schema name a URL's options=-csearch_path%3DNAME carries as it is (storage.schema's form).
bool plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

struct Candidate {
  core::Timestamp observed_at{};
  std::size_t host = 0;  // index into the schemas read
  core::Record record;
};

}  // namespace

bool problems_first(const FleetHost& a, const FleetHost& b) {
  const auto rank = [](const FleetHost& h) {
    return std::make_tuple(h.unreadable.empty(), -h.firing, -h.acknowledged,
                           h.newest_run.has_value(), h.newest_run.value_or(core::Timestamp{}));
  };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  return a.schema < b.schema;
}

Result<std::vector<FleetHost>> fleet_hosts(Connection& connection) {
  Database& db = connection.database();
  std::vector<FleetHost> hosts;
  if (db.dialect() != Dialect::PostgreSql) return hosts;
  for (auto& [schema, own] : KW_TRY(kernelwatch_schemas(db))) {
    FleetHost host;
    host.schema = std::move(schema);
    host.own = own;
    hosts.push_back(std::move(host));
  }
  const AlertStore alerts(connection);
  for (auto& host : hosts) {
    if (auto read = read_host(db, alerts, host); !read) {
      host = FleetHost{host.schema, host.own, 0, std::nullopt, 0, 0, {}, read.error().message};
    }
  }
  std::sort(hosts.begin(), hosts.end(), problems_first);
  return hosts;
}

namespace {

// The newest `per_key` candidates, newest first. Two hosts' runs at the same instant are one run
// of the key here (UNIQUE(key, observedAt)): the later host's is kept.
void keep_newest(std::vector<Candidate>& candidates, std::size_t per_key) {
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.observed_at, a.host) > std::tie(b.observed_at, b.host);
  });
  candidates.erase(std::unique(candidates.begin(), candidates.end(),
                               [](const Candidate& a, const Candidate& b) {
                                 return a.observed_at == b.observed_at;
                               }),
                   candidates.end());
  if (candidates.size() > per_key) candidates.resize(per_key);
}

}  // namespace

namespace {

using LocationOf = std::function<std::filesystem::path(const std::string& schema)>;

// Each other schema of the database that holds kernelwatch's tables (not the connection's own),
// by name, read by `read` on a read-only connection of its own at location_of(schema), one at a
// time. A schema that is no storage.schema name, or whose read fails part way, is named in
// `problems` ("schema NAME: why"); `read` keeps what it read of a schema only when it succeeds.
Status for_each_other_schema(
    Database& db, const LocationOf& location_of, std::vector<std::string>& problems,
    const std::function<Status(const std::string&, const RunStore&)>& read) {
  for (const auto& [schema, own] : KW_TRY(kernelwatch_schemas(db))) {
    if (own) continue;
    if (!plain_name(schema)) {
      problems.push_back("schema \"" + schema +
                         "\": not a storage.schema name (lower-case letters, digits, '_')");
      continue;
    }
    auto other = Connection::open(location_of(schema), OpenMode::ReadOnly);
    auto ok = other ? read(schema, RunStore(*other)) : Status(tl::unexpected(other.error()));
    if (!ok) problems.push_back("schema " + schema + ": " + ok.error().message);
  }
  return {};
}

}  // namespace

Result<FleetSeeds> fleet_seeds(Connection& connection, const LocationOf& location_of,
                               std::span<const SeedRequest> wanted, std::size_t per_key,
                               std::size_t min_runs) {
  FleetSeeds out;
  Database& db = connection.database();
  if (db.dialect() != Dialect::PostgreSql || wanted.empty() || per_key == 0) return out;
  std::vector<std::string> hosts;
  std::map<std::string, std::vector<Candidate>> found;
  KW_TRY(for_each_other_schema(
      db, location_of, out.problems,
      [&](const std::string& schema, const RunStore& runs) -> Status {
        std::map<std::string, std::vector<Candidate>> of_host;  // merged when read through
        for (const auto& request : wanted) {
          const auto key_id = KW_TRY(runs.find_key(request.key_digest));
          if (!key_id) continue;
          for (auto& stored : KW_TRY(runs.newest_passed_runs(*key_id, request.before, per_key))) {
            const core::Timestamp at = stored.record.run.observed_at;
            of_host[request.key_digest].push_back(
                Candidate{at, hosts.size(), std::move(stored.record)});
          }
        }
        hosts.push_back(schema);
        for (auto& [digest, candidates] : of_host) {
          auto& all = found[digest];
          all.insert(all.end(), std::make_move_iterator(candidates.begin()),
                     std::make_move_iterator(candidates.end()));
          keep_newest(all, per_key);  // memory: per_key a key whatever the number of hosts
        }
        return {};
      }));
  for (auto& [digest, candidates] : found) {
    if (candidates.size() < min_runs) continue;
    FleetSeeds::Key& key = out.keys[digest];
    std::vector<bool> from(hosts.size(), false);
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      from[it->host] = true;
      key.records.push_back(std::move(it->record));
    }
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      if (from[h]) key.hosts.push_back(hosts[h]);
    }
  }
  return out;
}

Result<FleetControls> fleet_controls(Connection& connection, const LocationOf& location_of,
                                     std::span<const ControlRequest> wanted, std::size_t in_window,
                                     std::size_t before) {
  FleetControls out;
  out.runs.resize(wanted.size());
  Database& db = connection.database();
  if (db.dialect() != Dialect::PostgreSql || wanted.empty()) return out;
  KW_TRY(for_each_other_schema(
      db, location_of, out.problems, [&](const std::string&, const RunStore& runs) -> Status {
        std::vector<std::vector<core::Record>> of_host(wanted.size());  // merged when read through
        for (std::size_t i = 0; i < wanted.size(); ++i) {
          const ControlRequest& request = wanted[i];
          const auto key_id = KW_TRY(runs.find_key(request.key_digest));
          if (!key_id) continue;
          const core::Timestamp end = request.window_end + std::chrono::nanoseconds(1);
          for (auto& stored : KW_TRY(runs.newest_passed_runs(*key_id, end, in_window))) {
            if (stored.record.run.observed_at <= request.window_start) break;  // (read below)
            of_host[i].push_back(std::move(stored.record));
          }
          const core::Timestamp start = request.window_start + std::chrono::nanoseconds(1);
          for (auto& stored : KW_TRY(runs.newest_passed_runs(*key_id, start, before))) {
            of_host[i].push_back(std::move(stored.record));
          }
        }
        for (std::size_t i = 0; i < wanted.size(); ++i) {
          out.runs[i].insert(out.runs[i].end(), std::make_move_iterator(of_host[i].begin()),
                             std::make_move_iterator(of_host[i].end()));
        }
        return {};
      }));
  return out;
}

}  // namespace kernelwatch::storage
