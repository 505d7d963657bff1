#include "daemon/store_commands.hpp"

#include <ostream>

#include "core/time.hpp"
#include "daemon/format.hpp"
#include "runners/liger_import.hpp"
#include "storage/importer.hpp"

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

std::string optional_duration(std::optional<std::chrono::nanoseconds> value) {
  return value ? format_duration(*value) : "-";
}

// A database file this command creates is removed again unless the command keeps it: a refused
// import (or one that throws) leaves nothing behind. Declared before the store, so the store is
// closed before the files go.
class CreatedDatabase {
 public:
  explicit CreatedDatabase(std::filesystem::path path) {
    std::error_code ec;
    // A PostgreSQL database is the server's: nothing to remove here.
    if (storage::Connection::names_postgresql(path.native())) return;
    if (!std::filesystem::exists(path, ec) && !ec) path_ = std::move(path);
  }
  CreatedDatabase(const CreatedDatabase&) = delete;
  CreatedDatabase& operator=(const CreatedDatabase&) = delete;
  ~CreatedDatabase() {
    if (path_.empty()) return;
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(path_.string() + suffix, ignored);
    }
  }
  void keep() { path_.clear(); }

 private:
  std::filesystem::path path_;
};

}  // namespace

nlohmann::json to_json(const storage::KeySummary& k) {
  return json{{"benchmark", k.key.benchmark.label},
              {"provider", k.key.provider.label},
              {"workload", k.key.workload.label},
              {"environment", k.key.environment.label},
              {"protocol", k.key.protocol.label},
              {"digest", k.key.digest()},
              {"runs", k.run_count},
              {"firstObservedAt", core::format_timestamp(k.first_observed)},
              {"lastObservedAt", core::format_timestamp(k.last_observed)}};
}

int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  CreatedDatabase created(options.db);
  auto store = storage::Connection::open(options.db, storage::OpenMode::Create);
  if (!store) {
    err << "kernelwatch import: " << store.error().message << '\n';
    return 1;
  }
  // kernelindex JSON is storage's own; a Liger CSV is read by runners/.
  auto report = storage::import_files(
      *store, options.inputs,
      options.skip_invalid ? storage::InvalidPolicy::Skip : storage::InvalidPolicy::Abort,
      &runners::liger_csv_reader());
  if (!report) {
    err << "kernelwatch import: " << report.error().message << '\n';
    // --skip-invalid helps with bad input only; a failing database or disk is not skipped.
    const auto code = report.error().code;
    const bool bad_input = code == core::ErrorCode::ParseError;
    err << "kernelwatch import: nothing was imported"
        << (bad_input && !options.skip_invalid ? " (use --skip-invalid to import the rest)" : "")
        << '\n';
    return 1;
  }
  created.keep();
  for (const auto& line : report->invalid) err << "skipped " << line << '\n';
  out << "imported " << options.inputs.size() << (options.inputs.size() == 1 ? " file" : " files")
      << " into " << options.db.string() << ": read " << report->read << ", new "
      << report->inserted << ", duplicate " << report->duplicates << ", skipped " << report->skipped
      << " (" << report->memory_rows << " memory rows, " << report->invalid.size() << " invalid)\n";
  return 0;
}

int run_keys(const std::filesystem::path& db, OutputFormat format, std::ostream& out,
             std::ostream& err) {
  auto store = storage::Connection::open(db, storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch keys: " << store.error().message << '\n';
    return 1;
  }
  auto keys = storage::RunStore(*store).keys();
  if (!keys) {
    err << "kernelwatch keys: " << keys.error().message << '\n';
    return 1;
  }
  if (format == OutputFormat::Json) {
    json array = json::array();
    for (const auto& k : *keys) array.push_back(to_json(k));
    out << array.dump(2) << '\n';
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& k : *keys) {
    rows.push_back({k.key.benchmark.label, k.key.provider.label, k.key.workload.label,
                    k.key.environment.label, k.key.protocol.label, std::to_string(k.run_count),
                    core::format_timestamp(k.first_observed),
                    core::format_timestamp(k.last_observed)});
  }
  print_table(
      out,
      {"BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "PROTOCOL", "RUNS", "FIRST", "LAST"},
      rows);
  out << keys->size() << (keys->size() == 1 ? " key\n" : " keys\n");
  return 0;
}

int run_history(const HistoryOptions& options, std::ostream& out, std::ostream& err) {
  auto store = storage::Connection::open(options.db, storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch history: " << store.error().message << '\n';
    return 1;
  }
  const storage::RunStore runs(*store);
  const auto report_unreadable = [&] {
    for (const auto& why : runs.unreadable()) {
      err << "kernelwatch history: skipped an unreadable stored run: " << why << '\n';
    }
  };
  if (options.format == OutputFormat::Json) {
    // Record by record from the query, as a JSON array indented as json::dump(2) writes one
    // (each record's own lines one level in): a history of any size in the memory of one run.
    std::size_t written = 0;
    std::string text;
    out << '[';
    const auto streamed = runs.for_each_run(options.filter, [&](const storage::StoredRun& run) {
      text = core::to_json(run.record).dump(2);
      out << (written++ == 0 ? "\n  " : ",\n  ");
      // A JSON text has a newline only between its tokens, never inside a string.
      for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        if (end == std::string::npos) {
          out.write(text.data() + start, static_cast<std::streamsize>(text.size() - start));
          break;
        }
        out.write(text.data() + start, static_cast<std::streamsize>(end + 1 - start));
        out << "  ";
        start = end + 1;
      }
      return core::Status{};
    });
    out << (written == 0 ? "]\n" : "\n]\n");
    report_unreadable();
    if (!streamed) {
      err << "kernelwatch history: " << streamed.error().message << '\n';
      return 1;
    }
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  const auto listed = runs.for_each_run(options.filter, [&](const storage::StoredRun& run) {
    const auto& r = run.record.run;
    rows.push_back({core::format_timestamp(r.observed_at), run.key.benchmark.label,
                    run.key.provider.label, run.key.workload.label, run.key.environment.label,
                    std::string(core::to_string(r.status)), optional_duration(r.latency("p20")),
                    optional_duration(r.median), optional_duration(r.latency("p80")),
                    run.implementation_version.empty() ? "-" : run.implementation_version});
    return core::Status{};
  });
  if (!listed) {
    err << "kernelwatch history: " << listed.error().message << '\n';
    return 1;
  }
  report_unreadable();
  print_table(out,
              {"OBSERVED_AT", "BENCHMARK", "PROVIDER", "WORKLOAD", "ENVIRONMENT", "STATUS", "P20",
               "MEDIAN", "P80", "VERSION"},
              rows);
  out << rows.size() << (rows.size() == 1 ? " run\n" : " runs\n");
  return 0;
}

}  // namespace kernelwatch::daemon
