#include "storage/fleet.hpp"

#include <algorithm>
#include <tuple>

#include "storage/detail/database.hpp"

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
  auto schemas = KW_TRY(
      db.statement("SELECT schemaname, CASE WHEN schemaname = current_schema() THEN 1 ELSE 0 END "
                   "FROM pg_catalog.pg_tables WHERE tablename = 'kernelwatch_schema' "
                   "ORDER BY schemaname COLLATE \"C\""));
  while (KW_TRY(schemas->step())) {
    FleetHost host;
    host.schema = schemas->column_text(0);
    host.own = schemas->column_int(1) == 1;
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

}  // namespace kernelwatch::storage
