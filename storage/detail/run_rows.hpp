// Storage-private: a runs row as schema version 8 keeps it (storage/detail/record_layout.hpp),
// how a record becomes one (its key, implementation and documents stored on the way), and how
// it is read back. RunStore uses these for one run at a time; the importer keeps what a first
// run of a shape prepared and fills in only what differs per run (storage/shaped_runs.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/key.hpp"
#include "core/record.hpp"
#include "storage/detail/database.hpp"
#include "storage/run_store.hpp"

namespace kernelwatch::storage {

// Every column of a runs row an insert writes. Documents are `documents` ids.
struct RunRow {
  std::optional<std::int64_t> id;  // the migration keeps ids; a new run gets the next one
  std::int64_t key_id = 0;
  std::int64_t observed_at_ns = 0;
  std::string outcome;                    // passed, failed, inconclusive: what detection reads
  std::optional<std::string> run_status;  // the record's public status
  std::optional<std::int64_t> median_ns;
  std::optional<std::int64_t> p20_ns;
  std::optional<std::int64_t> p80_ns;
  std::optional<std::int64_t> implementation_id;
  // nullopt: the record's implementationDigest is the implementation row's; "" it had none.
  std::optional<std::string> implementation_digest;
  std::string external_id;
  std::optional<std::string> name;           // metadata.name
  std::optional<std::string> status_reason;  // a run that did not pass: why
  std::optional<std::string> source;         // sourceNative.source
  std::optional<std::string> software;       // nullopt: the environment document's spec.software
  std::optional<std::int64_t> settled;
  std::optional<std::int64_t> run_template;
  std::optional<std::string> run_values;
  std::optional<std::int64_t> protocol_doc;
  std::optional<std::int64_t> environment_doc;
  std::optional<std::int64_t> workload_doc;
  std::optional<std::int64_t> implementation_doc;
  std::optional<std::int64_t> extra_doc;
  std::optional<std::int64_t> source_template;
  std::optional<std::string> source_values;
  std::optional<std::string> record;  // the whole record: only a row that could not be split

  bool operator==(const RunRow&) const = default;
};

// Ids of what one import (one transaction) stored or found already: documents by their text's
// digest, keys by their digest. Valid only inside the transaction that filled it: throw it away
// with a rollback.
struct WriteCache {
  std::unordered_map<std::string, std::int64_t> documents;
  std::unordered_map<std::string, std::int64_t> keys;
  struct Implementation {
    std::int64_t id = 0;
    std::string version;  // as its row has it
  };
  std::unordered_map<std::string, Implementation> implementations;  // by digest
  std::unordered_map<std::string, std::int64_t> aliases;
  // The documents stored last, as values: most runs of an import repeat their neighbours'
  // protocol, environment and template, found here by comparing values instead of writing them
  // out and hashing them.
  std::vector<std::pair<nlohmann::json, std::int64_t>> recent;
};

// The run's implementation row (the record's implementationDigest, else ours over provider and
// version), stored unless present.
[[nodiscard]] Result<WriteCache::Implementation> store_implementation(Database& db,
                                                                      const core::KeyPart& provider,
                                                                      const core::BenchmarkRun& run,
                                                                      WriteCache* cache);
[[nodiscard]] Result<WriteCache::Implementation> store_implementation(Database& db,
                                                                      const std::string& digest,
                                                                      const std::string& provider,
                                                                      const std::string& version,
                                                                      WriteCache* cache);

// The document with this text, stored unless present; its id.
[[nodiscard]] Result<std::int64_t> store_document_text(Database& db, std::string_view body,
                                                       WriteCache* cache);

// The document `value` (its text: value.dump()), stored unless present; its id.
[[nodiscard]] Result<std::int64_t> store_document(Database& db, const nlohmann::json& value,
                                                  WriteCache* cache);

// What insert_run stores for a record: its key (parts, aliases, key row; key_digest is
// key.digest()), its implementation, its documents, and the row. `cache` may be null.
[[nodiscard]] Result<RunRow> prepare_run(Database& db, const core::Record& record,
                                         const core::ComparabilityKey& key,
                                         const std::string& key_digest, std::string_view raw_source,
                                         WriteCache* cache);

// The row; a run already stored under its key and observedAt is a Duplicate.
[[nodiscard]] Result<InsertOutcome> insert_run_row(Database& db, const RunRow& row);

// Documents read back by id for one query, parsed once each (a bounded number kept).
class DocumentReader {
 public:
  explicit DocumentReader(Database& db) : db_(&db) {}
  // nullptr for a missing document (a damaged row).
  [[nodiscard]] Result<std::shared_ptr<const nlohmann::json>> get(std::int64_t id);

 private:
  Database* db_;
  std::unordered_map<std::int64_t, std::shared_ptr<const nlohmann::json>> parsed_;
};

// What a record is read back from, as a select list over `runs r`, and the record it makes
// (starting at column `first`). ParseError for a row that does not fit together.
// `i` is the run's implementations row (LEFT JOIN).
inline constexpr const char* kRecordColumns =
    "r.record, r.run_template, r.run_values, r.run_status, r.observed_at_ns, r.median_ns, "
    "r.external_id, r.name, r.protocol_doc, r.environment_doc, r.workload_doc, "
    "r.implementation_doc, r.extra_doc, i.digest, i.version";
inline constexpr int kRecordColumnCount = 15;
[[nodiscard]] Result<nlohmann::json> read_record(const Statement& row, int first,
                                                 DocumentReader& documents);

}  // namespace kernelwatch::storage
