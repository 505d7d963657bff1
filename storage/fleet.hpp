// A fleet's database (docs/FLEET.md): one PostgreSQL database that several hosts' daemons share,
// each in its own schema. What one daemon's dashboard and API show of every host in it, read
// with the schema-qualified names of the other hosts' tables on the reader's own connection
// (no connection per host), a few indexed queries per host. A SQLite file holds one host: no
// fleet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/record.hpp"
#include "core/time.hpp"
#include "storage/alerts.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::storage {

// The open alerts listed per host (the counts cover every one).
inline constexpr std::size_t kFleetOpenAlerts = 5;

struct FleetHost {
  std::string schema;  // the host's schema (storage.schema; "public" for a daemon without one)
  bool own = false;    // the schema this connection reads (the daemon's own)
  std::int64_t keys = 0;
  std::optional<core::Timestamp> newest_run;  // its newest stored run's observedAt
  std::int64_t firing = 0;
  std::int64_t acknowledged = 0;
  std::vector<AlertRow> open;  // firing or acknowledged, newest first, at most kFleetOpenAlerts
  // Why this host's schema could not be read ("" when it was): another kernelwatch version's
  // schema, a table the reader may not read. The other hosts are still listed.
  std::string unreadable;
};

// Problems first: unreadable, then by firing alerts, then acknowledged ones (most first), then
// the host whose newest run is oldest (a host that stopped running is a problem too; one with
// no run first), then by schema name.
[[nodiscard]] bool problems_first(const FleetHost& a, const FleetHost& b);

// Every schema of the connection's PostgreSQL database that holds kernelwatch's tables, in
// problems_first order; empty for a SQLite file.
[[nodiscard]] Result<std::vector<FleetHost>> fleet_hosts(Connection& connection);

// A key new to this host (storage.warm_start): its digest, and the instant its seeds must be
// older than (its first run here less detector.controls.cycle_gap).
struct SeedRequest {
  std::string key_digest;
  core::Timestamp before{};
};

// What the other hosts' schemas hold of the keys asked for.
struct FleetSeeds {
  struct Key {
    std::vector<core::Record> records;  // its seeds, oldest first
    std::vector<std::string> hosts;     // the schemas they came from, by name
  };
  std::map<std::string, Key> keys;  // by key digest: only keys with enough runs
  // "schema NAME: why" of each other schema that could not be read (another kernelwatch
  // version's, a role that may not read it); the others are read.
  std::vector<std::string> problems;
};

// For each key of `wanted`, the newest `per_key` passed runs from before its `before`, less the
// seeds those hosts took from others, over every other schema of this connection's PostgreSQL
// database that holds kernelwatch's tables (each opened read-only at location_of(schema), one
// connection at a time), newest across hosts first; a key the fleet holds fewer than `min_runs`
// such runs of is left out (too few to judge by: it starts cold). Empty for a SQLite file.
[[nodiscard]] Result<FleetSeeds> fleet_seeds(
    Connection& connection,
    const std::function<std::filesystem::path(const std::string& schema)>& location_of,
    std::span<const SeedRequest> wanted, std::size_t per_key, std::size_t min_runs);

// A held step of a key of this host (storage.fleet_controls): the other hosts' runs of its key
// from the newest `before` runs at or before `window_start` (cycle_gap before the step's onset)
// to the newest `in_window` runs in (window_start, window_end] (window_end: the run that
// confirmed it).
struct ControlRequest {
  std::string key_digest;
  core::Timestamp window_start{};
  core::Timestamp window_end{};
};

// What the other hosts' schemas hold around each step asked for.
struct FleetControls {
  // By request (its index in `wanted`): the runs read, each host's in turn.
  std::vector<std::vector<core::Record>> runs;
  std::vector<std::string> problems;  // as FleetSeeds::problems
};

// For each request, per other schema of this connection's PostgreSQL database that holds
// kernelwatch's tables (each opened read-only at location_of(schema), one at a time), the key's
// newest `in_window` passed runs in the window and its newest `before` passed runs at or before
// its start, less the runs that host took from others. Empty for a SQLite file.
[[nodiscard]] Result<FleetControls> fleet_controls(
    Connection& connection,
    const std::function<std::filesystem::path(const std::string& schema)>& location_of,
    std::span<const ControlRequest> wanted, std::size_t in_window, std::size_t before);

}  // namespace kernelwatch::storage
