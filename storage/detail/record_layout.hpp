// Storage-private: how a record is kept in a runs row (schema version 8). Its documents
// (protocol, environment, workload, implementation, any other top-level member) are stored once
// in `documents` and referenced by id; the run document becomes a shared template (the document
// with its per-run leaves cut out) plus those leaves: five from typed columns (spec.status,
// spec.observedAt, the median, the externalId, metadata.name, the implementation's digest and
// version label), every other number and
// metadata.description in a short JSON array. join puts them back into the same JSON value,
// number kinds included, so an emitted record is byte for byte what it was. A Liger CSV row kept
// as its source is split the same way (its key's columns in the template, the rest per row):
// the one place storage names CSV columns, because stored rows of schema 8 are laid out so and
// read back so (the mapping of rows to records is runners/liger_csv.hpp's).
// Uses nlohmann/json and core; no SQLite.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace kernelwatch::storage::layout {

// The typed columns a run document's leaves come from.
struct RunColumns {
  std::string run_status;                 // spec.status
  std::int64_t observed_at_ns = 0;        // spec.observedAt, as core::format_timestamp writes it
  std::optional<std::int64_t> median_ns;  // spec.timing.latencyNs.median (an integer)
  std::string external_id;                // spec.sourceNative.externalId ("" when absent)
  std::optional<std::string> name;        // metadata.name: taken from the document by split_record
  // The run's implementation row: its digest (spec.implementationDigest where equal) and
  // version (the label core::implementation_version reads, where equal), so that a key's runs
  // of every release share one template.
  std::optional<std::string> implementation_digest;
  std::optional<std::string> implementation_version;
};

// A document cut into its template and per-run values (a JSON array's text, "" when none).
struct SplitDocument {
  nlohmann::json shape;
  std::string values;
};

// A record cut into its parts. Members absent from the record are nullopt.
struct SplitRecord {
  std::optional<SplitDocument> run;
  std::optional<nlohmann::json> protocol;
  std::optional<nlohmann::json> environment;
  std::optional<nlohmann::json> workload;
  std::optional<nlohmann::json> implementation;
  std::optional<nlohmann::json> extra;  // every other top-level member, as one object
};

// nullopt when the record does not fit these columns (not an object; a status, observedAt,
// median or externalId that differs from its column): such a row keeps its record whole.
// Fills columns.name from the run's metadata.name.
[[nodiscard]] std::optional<SplitRecord> split_record(const nlohmann::json& record,
                                                      RunColumns& columns);

// The run document back from its template, values and columns. ParseError when they do not fit
// together (a damaged row).
[[nodiscard]] core::Result<nlohmann::json> join_run(nlohmann::json shape, std::string_view values,
                                                    const RunColumns& columns);

// A Liger CSV row's raw source ({format, file, line, row}) split into the part its key shares
// (the file, the key's columns) and the part each row has (the line, the other columns).
[[nodiscard]] SplitDocument split_source(const nlohmann::json& source);
[[nodiscard]] core::Result<nlohmann::json> join_source(nlohmann::json shape,
                                                       std::string_view values);

}  // namespace kernelwatch::storage::layout
