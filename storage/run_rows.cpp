#include "storage/detail/run_rows.hpp"

#include <tuple>

#include "core/digest.hpp"
#include "storage/detail/record_layout.hpp"

namespace kernelwatch::storage {
namespace {

using core::ErrorCode;
using nlohmann::json;

// The most parsed documents a DocumentReader keeps: a history's distinct templates and documents
// are a few per key; past this it starts over rather than grow.
constexpr std::size_t kMaxParsedDocuments = 4096;
// The most ids a WriteCache keeps per kind before it starts over.
constexpr std::size_t kMaxCachedIds = 65536;

template <class Map>
void remember(Map& map, std::string key, std::int64_t id) {
  if (map.size() >= kMaxCachedIds) map.clear();
  map.emplace(std::move(key), id);
}

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
Status store_aliases(Database& db, const core::ComparabilityKey& key, const core::BenchmarkRun& run,
                     WriteCache* cache) {
  for (auto [alias, part, canonical] :
       {std::tuple{&run.workload_digest, "workload", &key.workload.digest},
        std::tuple{&run.environment_digest, "environment", &key.environment.digest},
        std::tuple{&run.protocol_digest, "protocol", &key.protocol.digest}}) {
    if (alias->empty() || *alias == *canonical) continue;
    if (cache != nullptr && cache->aliases.contains(*alias)) continue;
    auto stmt =
        KW_TRY(db.statement("INSERT INTO key_aliases (alias, part, canonical) VALUES (?1, ?2, ?3) "
                            "ON CONFLICT (alias) DO NOTHING"));
    stmt->bind(1, *alias).bind(2, std::string_view(part)).bind(3, *canonical);
    KW_TRY(stmt->run());
    if (cache != nullptr) remember(cache->aliases, *alias, 0);
  }
  return {};
}

// The key's row, inserted unless present; returns its id.
Result<std::int64_t> store_key_row(Database& db, const core::ComparabilityKey& key,
                                   const std::string& key_digest, const PartIds& parts) {
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
  auto select = KW_TRY(db.statement("SELECT id FROM keys WHERE digest = ?1"));
  select->bind(1, key_digest);
  if (!KW_TRY(select->step()))
    return core::fail(ErrorCode::Internal, db.path().string() + ": key row missing after insert");
  return select->column_int(0);
}

// Everything a key is made of: its parts, the source's digests as aliases, the key row.
Result<std::int64_t> store_key(Database& db, const core::ComparabilityKey& key,
                               const std::string& key_digest, const core::Record& record,
                               WriteCache* cache) {
  KW_TRY(store_aliases(db, key, record.run, cache));
  if (cache != nullptr) {
    if (const auto it = cache->keys.find(key_digest); it != cache->keys.end()) return it->second;
  }
  const PartIds parts = KW_TRY(store_parts(db, key, record));
  const std::int64_t id = KW_TRY(store_key_row(db, key, key_digest, parts));
  if (cache != nullptr) remember(cache->keys, key_digest, id);
  return id;
}

std::optional<std::int64_t> nanoseconds(std::optional<std::chrono::nanoseconds> value) {
  if (!value) return std::nullopt;
  return value->count();
}

std::optional<std::string> unless_empty(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return text;
}

// How many documents WriteCache::recent keeps: a run's template and members, and a few more.
constexpr std::size_t kRecentDocuments = 12;

}  // namespace

Result<WriteCache::Implementation> store_implementation(Database& db, const std::string& digest,
                                                        const std::string& provider,
                                                        const std::string& version,
                                                        WriteCache* cache) {
  if (cache != nullptr) {
    if (const auto it = cache->implementations.find(digest); it != cache->implementations.end())
      return it->second;
  }
  {
    auto stmt = KW_TRY(
        db.statement("INSERT INTO implementations (digest, provider, version) VALUES (?1, ?2, ?3) "
                     "ON CONFLICT (digest) DO NOTHING"));
    stmt->bind(1, digest).bind(2, provider).bind(3, version);
    KW_TRY(stmt->run());
  }
  auto select = KW_TRY(db.statement("SELECT id, version FROM implementations WHERE digest = ?1"));
  select->bind(1, digest);
  if (!KW_TRY(select->step())) {
    return core::fail(ErrorCode::Internal,
                      db.path().string() + ": implementation row missing after insert");
  }
  WriteCache::Implementation found{select->column_int(0), select->column_text(1)};
  if (cache != nullptr) {
    if (cache->implementations.size() >= kMaxCachedIds) cache->implementations.clear();
    cache->implementations.emplace(digest, found);
  }
  return found;
}

Result<WriteCache::Implementation> store_implementation(Database& db, const core::KeyPart& provider,
                                                        const core::BenchmarkRun& run,
                                                        WriteCache* cache) {
  const std::string version = core::implementation_version(run.metadata);
  std::string digest = run.implementation_digest;
  if (digest.empty()) {
    digest = core::digest_of(json{{"provider", provider.label}, {"version", version}});
  }
  return store_implementation(db, digest, provider.label, version, cache);
}

Result<std::int64_t> store_document_text(Database& db, std::string_view body, WriteCache* cache) {
  std::string digest = core::sha256_hex(body);
  if (cache != nullptr) {
    if (const auto it = cache->documents.find(digest); it != cache->documents.end())
      return it->second;
  }
  {
    auto insert = KW_TRY(db.statement(
        "INSERT INTO documents (digest, body) VALUES (?1, ?2) ON CONFLICT (digest) DO NOTHING"));
    insert->bind(1, digest).bind(2, body);
    KW_TRY(insert->run());
  }
  auto select = KW_TRY(db.statement("SELECT id FROM documents WHERE digest = ?1"));
  select->bind(1, digest);
  if (!KW_TRY(select->step())) {
    return core::fail(ErrorCode::Internal, db.path().string() + ": document missing after insert");
  }
  const std::int64_t id = select->column_int(0);
  if (cache != nullptr) remember(cache->documents, std::move(digest), id);
  return id;
}

Result<std::int64_t> store_document(Database& db, const json& value, WriteCache* cache) {
  if (cache != nullptr) {
    for (const auto& [document, id] : cache->recent) {
      if (document == value) return id;
    }
  }
  const std::int64_t id = KW_TRY(store_document_text(db, value.dump(), cache));
  if (cache != nullptr) {
    if (cache->recent.size() >= kRecentDocuments) cache->recent.erase(cache->recent.begin());
    cache->recent.emplace_back(value, id);
  }
  return id;
}

Result<RunRow> prepare_run(Database& db, const core::Record& record,
                           const core::ComparabilityKey& key, const std::string& key_digest,
                           std::string_view raw_source, WriteCache* cache) {
  const core::BenchmarkRun& run = record.run;
  RunRow row;
  row.key_id = KW_TRY(store_key(db, key, key_digest, record, cache));
  const auto implementation = KW_TRY(store_implementation(db, key.provider, run, cache));
  row.implementation_id = implementation.id;
  row.implementation_digest =
      run.implementation_digest.empty() ? std::optional<std::string>("") : std::nullopt;
  row.observed_at_ns = run.observed_at.time_since_epoch().count();
  row.outcome = core::to_string(run.outcome());
  row.run_status = std::string(core::to_string(run.status));
  row.median_ns = nanoseconds(run.median);
  row.p20_ns = nanoseconds(run.latency("p20"));
  row.p80_ns = nanoseconds(run.latency("p80"));
  row.external_id = run.source_native.external_id;
  if (run.status != core::RunStatus::Passed) row.status_reason = unless_empty(run.status_reason);
  row.source = unless_empty(run.source_native.source);

  const json stored = core::to_json(record);
  layout::RunColumns columns{
      *row.run_status,
      row.observed_at_ns,
      row.median_ns,
      row.external_id,
      std::nullopt,
      run.implementation_digest.empty() ? std::nullopt : std::optional(run.implementation_digest),
      implementation.version};
  auto split = layout::split_record(stored, columns);
  if (!split) {
    // to_json writes every column's leaf from the same fields: never expected; kept whole.
    row.record = stored.dump();
    row.software = stored["environment"]["spec"].value("software", json::object()).dump();
  } else {
    row.name = columns.name;
    if (split->run) {
      row.run_template = KW_TRY(store_document(db, split->run->shape, cache));
      row.run_values = unless_empty(split->run->values);
    }
    if (split->protocol) row.protocol_doc = KW_TRY(store_document(db, *split->protocol, cache));
    if (split->environment)
      row.environment_doc = KW_TRY(store_document(db, *split->environment, cache));
    if (split->workload) row.workload_doc = KW_TRY(store_document(db, *split->workload, cache));
    if (split->implementation)
      row.implementation_doc = KW_TRY(store_document(db, *split->implementation, cache));
    if (split->extra) row.extra_doc = KW_TRY(store_document(db, *split->extra, cache));
  }
  if (!raw_source.empty()) {
    const json source = json::parse(raw_source, nullptr, /*allow_exceptions=*/false);
    const layout::SplitDocument parts = source.is_discarded()
                                            ? layout::SplitDocument{json(raw_source), ""}
                                            : layout::split_source(source);
    row.source_template = KW_TRY(store_document(db, parts.shape, cache));
    row.source_values = unless_empty(parts.values);
  }
  return row;
}

Result<InsertOutcome> insert_run_row(Database& db, const RunRow& row) {
  // A new run's id is the engine's to choose (PostgreSQL refuses an explicit NULL id); the
  // migration that copies runs keeps theirs.
  static const std::string columns =
      "key_id, observed_at_ns, status, run_status, median_ns, p20_ns, p80_ns, implementation_id, "
      "implementation_digest, external_id, name, status_reason, source, software, settled, "
      "run_template, run_values, protocol_doc, environment_doc, workload_doc, implementation_doc, "
      "extra_doc, source_template, source_values, record";
  static const std::string values =
      "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
      "?22, ?23, ?24, ?25, ?26";
  static const std::string with_id = "INSERT INTO runs (id, " + columns + ") VALUES (?1, " +
                                     values + ") ON CONFLICT (key_id, observed_at_ns) DO NOTHING";
  static const std::string new_run = "INSERT INTO runs (" + columns + ") VALUES (" + values +
                                     ") ON CONFLICT (key_id, observed_at_ns) DO NOTHING";
  auto stmt = KW_TRY(db.statement(row.id ? with_id : new_run));
  // `row` outlives this use of the statement: its text is bound without a copy.
  const auto text = [&](int index, const std::optional<std::string>& value) {
    if (value) {
      stmt->bind_unowned(index, *value);
    } else {
      stmt->bind_null(index);
    }
  };
  if (row.id) stmt->bind(1, *row.id);
  stmt->bind(2, row.key_id).bind(3, row.observed_at_ns).bind_unowned(4, row.outcome);
  text(5, row.run_status);
  stmt->bind(6, row.median_ns).bind(7, row.p20_ns).bind(8, row.p80_ns);
  stmt->bind(9, row.implementation_id);
  text(10, row.implementation_digest);
  stmt->bind_unowned(11, row.external_id);
  text(12, row.name);
  text(13, row.status_reason);
  text(14, row.source);
  text(15, row.software);
  stmt->bind(16, row.settled).bind(17, row.run_template);
  text(18, row.run_values);
  stmt->bind(19, row.protocol_doc)
      .bind(20, row.environment_doc)
      .bind(21, row.workload_doc)
      .bind(22, row.implementation_doc)
      .bind(23, row.extra_doc)
      .bind(24, row.source_template);
  text(25, row.source_values);
  text(26, row.record);
  KW_TRY(stmt->run());
  return db.changes() > 0 ? InsertOutcome::Inserted : InsertOutcome::Duplicate;
}

Result<std::shared_ptr<const json>> DocumentReader::get(std::int64_t id) {
  if (const auto it = parsed_.find(id); it != parsed_.end()) return it->second;
  auto stmt = KW_TRY(db_->statement("SELECT body FROM documents WHERE id = ?1"));
  stmt->bind(1, id);
  std::shared_ptr<const json> document;
  if (KW_TRY(stmt->step())) {
    json parsed = json::parse(stmt->column_text(0), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) document = std::make_shared<const json>(std::move(parsed));
  }
  if (parsed_.size() >= kMaxParsedDocuments) parsed_.clear();
  parsed_.emplace(id, document);
  return document;
}

Result<json> read_record(const Statement& row, int first, DocumentReader& documents) {
  const auto optional_int = [&](int column) {
    return row.column_is_null(first + column)
               ? std::optional<std::int64_t>()
               : std::optional<std::int64_t>(row.column_int(first + column));
  };
  if (!row.column_is_null(first)) {
    json whole = json::parse(row.column_text(first), nullptr, /*allow_exceptions=*/false);
    if (whole.is_discarded()) return core::fail(ErrorCode::ParseError, "stored record is not JSON");
    return whole;
  }
  const auto document = [&](int column) -> Result<std::shared_ptr<const json>> {
    const auto id = optional_int(column);
    if (!id) return std::shared_ptr<const json>();
    auto found = KW_TRY(documents.get(*id));
    if (!found) {
      return core::fail(ErrorCode::ParseError,
                        "stored document " + std::to_string(*id) + " is missing or not JSON");
    }
    return found;
  };
  json record = json::object();
  if (const auto extra = KW_TRY(document(12)); extra != nullptr) {
    if (!extra->is_object())
      return core::fail(ErrorCode::ParseError, "stored record members are not an object");
    record = *extra;
  }
  if (const auto shape = KW_TRY(document(1)); shape != nullptr) {
    layout::RunColumns columns;
    columns.run_status = row.column_text(first + 3);
    columns.observed_at_ns = row.column_int(first + 4);
    columns.median_ns = optional_int(5);
    columns.external_id = row.column_text(first + 6);
    if (!row.column_is_null(first + 7)) columns.name = row.column_text(first + 7);
    if (!row.column_is_null(first + 13))
      columns.implementation_digest = row.column_text(first + 13);
    if (!row.column_is_null(first + 14))
      columns.implementation_version = row.column_text(first + 14);
    record["run"] = KW_TRY(layout::join_run(*shape, row.column_text(first + 2), columns));
  }
  for (auto [column, member] : {std::pair{8, "protocol"}, std::pair{9, "environment"},
                                std::pair{10, "workload"}, std::pair{11, "implementation"}}) {
    if (const auto found = KW_TRY(document(column)); found != nullptr) record[member] = *found;
  }
  return record;
}

}  // namespace kernelwatch::storage
