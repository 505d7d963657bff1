#include "runners/liger_scripts.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>

#include "core/digest.hpp"
#include "core/key.hpp"
#include "core/record.hpp"
#include "runners/child_process.hpp"
#include "runners/detail/scratch_dir.hpp"
#include "runners/run_status.hpp"

namespace kernelwatch::runners {
namespace {

using core::ErrorCode;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t kMaxCopiedEntries = 10'000;

core::Result<std::string> read_file(const fs::path& path, std::size_t limit) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec)
    return core::fail(ErrorCode::IoError, "cannot read " + path.string() + ": " + ec.message());
  if (size > limit) {
    return core::fail(ErrorCode::InvalidArgument,
                      path.filename().string() + " is " + std::to_string(size) +
                          " bytes, over the limit of " + std::to_string(limit));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in && !in.eof()) return core::fail(ErrorCode::IoError, "cannot read " + path.string());
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

// The checkout laid out again in `scratch`: its benchmark/ folder copied (file contents, links
// followed, without data/ and __pycache__/), every other top-level entry a link to the checkout's.
core::Status lay_out(const fs::path& checkout, const fs::path& scratch, std::size_t max_bytes) {
  std::error_code ec;
  const fs::path source = checkout / "benchmark";
  if (!fs::is_directory(source, ec)) {
    return core::fail(ErrorCode::NotFound, "no benchmark/ folder in the checkout " +
                                               checkout.string() +
                                               " (is it a Liger-Kernel checkout?)");
  }
  for (fs::directory_iterator it(checkout, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == "benchmark") continue;
    fs::create_symlink(it->path(), scratch / it->path().filename(), ec);
    if (ec) break;
  }
  if (ec) return core::fail(ErrorCode::IoError, "cannot lay out the checkout: " + ec.message());
  const fs::path target = scratch / "benchmark";
  fs::create_directory(target, ec);
  std::size_t bytes = 0;
  std::size_t entries = 0;
  for (fs::recursive_directory_iterator it(source, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(source);
    const std::string name = it->path().filename().string();
    if ((it.depth() == 0 && name == "data") || name == "__pycache__") {
      it.disable_recursion_pending();
      continue;
    }
    if (++entries > kMaxCopiedEntries) {
      return core::fail(ErrorCode::InvalidArgument, "the checkout's benchmark/ folder has over " +
                                                        std::to_string(kMaxCopiedEntries) +
                                                        " entries");
    }
    std::error_code kind_ec;
    if (it->is_directory(kind_ec) && !it->is_symlink(kind_ec)) {
      fs::create_directory(target / relative, ec);
    } else if (it->is_regular_file(kind_ec)) {  // a link to a file: its content
      bytes += static_cast<std::size_t>(it->file_size(kind_ec));
      if (bytes > max_bytes) {
        return core::fail(ErrorCode::InvalidArgument, "the checkout's benchmark/ folder is over " +
                                                          std::to_string(max_bytes) + " bytes");
      }
      fs::copy_file(it->path(), target / relative, ec);
    }
  }
  if (ec) return core::fail(ErrorCode::IoError, "cannot copy benchmark/: " + ec.message());
  fs::create_directory(target / "data", ec);
  if (ec) return core::fail(ErrorCode::IoError, "cannot create benchmark/data: " + ec.message());
  return {};
}

// Why a script's run failed as a whole; "" when its rows are to be read.
std::string script_failure(const core::Result<ChildResult>& child, const LigerScriptsEntry& entry) {
  return child_failure(child, "python interpreter", entry.python.string(), entry.timeout);
}

// The rows the script wrote: every CSV file in the scratch data folder (all_benchmark_data.csv,
// or all_benchmark_data_<target>.csv under LIGER_BENCH_TARGET), speed rows only, each key once.
struct WrittenRows {
  std::vector<LigerSpeedRow> rows;
  std::size_t memory_rows = 0;
};
core::Result<WrittenRows> written_rows(const fs::path& data, std::size_t limit) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(data, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".csv" && it->is_regular_file()) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return core::fail(ErrorCode::NotFound,
                      "it exited 0 but wrote no rows (no benchmark/data/all_benchmark_data.csv)");
  }
  WrittenRows out;
  std::set<std::string> seen;
  for (const auto& file : files) {
    const std::string text = KW_TRY(read_file(file, limit));
    auto items = read_liger_rows(text);
    if (!items) {
      return core::fail(ErrorCode::ParseError,
                        "the CSV it wrote (" + file.filename().string() +
                            ") is not Liger's: " + readable_line(items.error().message, 300));
    }
    for (auto& item : *items) {
      if (item.kind == storage::ItemKind::Skipped) {
        ++out.memory_rows;
        continue;
      }
      if (item.kind == storage::ItemKind::Invalid) {
        return core::fail(ErrorCode::ParseError, file.filename().string() + " line " +
                                                     std::to_string(item.line) + ": " +
                                                     readable_line(item.reason, 300));
      }
      const std::string identity = item.row.kernel + "\n" + item.row.pass + "\n" +
                                   item.row.provider + "\n" + item.row.workload.label() + "\n" +
                                   core::environment_label(item.row.hardware);
      if (seen.insert(identity).second) out.rows.push_back(std::move(item.row));
    }
  }
  if (out.rows.empty()) {
    return core::fail(ErrorCode::NotFound, "it wrote no speed row (" +
                                               std::to_string(out.memory_rows) + " memory row(s))");
  }
  return out;
}

// What every run of one script shares.
struct ScriptFacts {
  const LigerScriptsEntry* entry = nullptr;
  const HostIdentity* host = nullptr;
  std::string script;
  core::Timestamp observed{};
  std::vector<kernels::GpuSample> samples;
};

// The record of one row, parsed once: the importer's documents of it dated now, then this
// runner's labels, the daemon's view of the host and the verdict.
core::Result<core::Record> row_run(const ScriptFacts& facts, LigerSpeedRow row,
                                            RunVerdict verdict, const std::string& reason) {
  const bool timed = verdict == RunVerdict::Passed || verdict == RunVerdict::Inconclusive;
  if (!timed) row.ms = {1, 1, 1};
  row.observed = facts.observed;
  json doc = KW_TRY(liger_speed_documents(row));
  json& spec = doc["run"]["spec"];
  spec["sourceNative"]["source"] = std::string(kLigerScriptsSource);
  json& labels = doc["run"]["metadata"]["labels"];
  labels["runner"] = std::string(kLigerScriptsRunner);
  labels["entry"] = facts.entry->name;
  labels["script"] = readable_line(facts.script, 200);
  if (!facts.host->gpu_name.empty()) {
    labels["gpu_checked"] = "nvml";
  } else {
    labels["gpu_checked"] = "no: the daemon found no GPU through NVML";
  }
  json& environment = doc["environment"]["spec"];
  if (!facts.host->driver.empty()) environment["software"] = {{"driver", facts.host->driver}};
  json variables = json::object();
  for (const auto& [name, value] : facts.entry->env) {
    if (changes_timing(name)) variables[name] = readable_line(value, 500);
  }
  if (!variables.empty()) environment["settings"] = {{"environmentVariables", variables}};
  spec["environmentDigest"] = core::document_digest(doc["environment"]);
  if (!facts.samples.empty()) spec["sourceNative"]["metrics"]["gpu_samples"] = facts.samples.size();
  if (!timed) {
    spec.erase("timing");
    spec.erase("measurements");
    spec["sourceNative"].erase("metrics");
  }
  set_status(doc, verdict, reason);
  // Its times are the record's (p20, median, p80): no harness summary stands behind them.
  return core::parse_record(doc);
}

// The key a script's failure goes to when it never wrote a row: <kernel>/full (the kernel from
// the file name, benchmark_rms_norm.py -> rms_norm), provider liger-scripts, workload "script",
// on the probed GPU.
LigerSpeedRow fallback_row(const ScriptFacts& facts) {
  LigerSpeedRow row;
  std::string stem = fs::path(facts.script).stem().string();
  if (stem.starts_with("benchmark_")) stem.erase(0, std::string_view("benchmark_").size());
  row.kernel = core::slug(stem).empty() ? std::string("script") : core::slug(stem);
  std::replace(row.kernel.begin(), row.kernel.end(), '-', '_');
  row.pass = "full";
  row.provider = std::string(kLigerScriptsRunner);
  row.version = "unknown";
  row.workload = core::Workload::from_label("script").value_or(core::Workload{});
  row.hardware = facts.host->hardware;
  return row;
}

void add_failed(const ScriptFacts& facts, const std::vector<LigerSpeedRow>& keys,
                RunVerdict verdict, const std::string& reason, LigerScriptsOutcome& out) {
  for (const auto& key : keys) {
    auto run = row_run(facts, key, verdict, reason);
    if (!run) continue;
    out.runs.push_back(std::move(*run));
  }
}

// A script run in a scratch copy of the checkout, its rows read into `written`: "" or why it
// has no rows (`child` holds how it ended where it ran; `cancelled` when the daemon stopped it).
std::string run_script(const LigerScriptsEntry& entry, const CommandContext& context,
                       const std::string& script, ScriptFacts& facts,
                       std::optional<core::Result<ChildResult>>& child, WrittenRows& written,
                       bool& cancelled) {
  std::string failure;
  auto scratch = detail::ScratchDir::create(context.scratch, entry.name, "a scratch directory");
  if (!scratch) failure = scratch.error().message;
  std::error_code ec;
  if (failure.empty() && !fs::is_regular_file(entry.checkout / script, ec)) {
    failure = "script not found: " + (entry.checkout / script).string();
  }
  if (failure.empty()) {
    if (auto laid = lay_out(entry.checkout, scratch->path(), entry.max_copy_bytes); !laid) {
      failure = laid.error().message;
    }
  }
  if (failure.empty()) {
    ChildRequest request;
    request.argv = {entry.python.string(), (scratch->path() / script).string()};
    request.argv.insert(request.argv.end(), entry.args.begin(), entry.args.end());
    request.timeout = entry.timeout;
    request.kill_grace = entry.kill_grace;
    request.environment_base = EnvironmentBase::Minimal;
    // Nothing is written into the checkout, __pycache__ included.
    request.environment = {{"PYTHONDONTWRITEBYTECODE", "1"}};
    for (const auto& variable : entry.env) request.environment.push_back(variable);
    request.working_directory = scratch->path() / "benchmark";
    request.cancel_fd = context.cancel_fd;
    int pid = 0;
    request.on_spawn = [&](int spawned) {
      pid = spawned;
      if (context.sampler) facts.samples.push_back(context.sampler(pid));
    };
    if (context.sampler) {
      request.tick = context.sample_every;
      request.on_tick = [&] { facts.samples.push_back(context.sampler(pid)); };
    }
    child = run_child(request, {});
    if (*child && (*child)->end == ChildEnd::Cancelled) {
      cancelled = true;
      return failure;
    }
    failure = script_failure(*child, entry);
    if (failure.empty()) {
      auto rows = written_rows(scratch->path() / "benchmark/data", entry.max_data_bytes);
      if (rows) {
        written = std::move(*rows);
      } else {
        failure = rows.error().message;
      }
    }
  }
  return failure;
}

// The runs of the rows a script wrote, each judged by its quantiles' order and its GPU claim
// against the probe; returns the keys they are in, for the script's next failure.
std::vector<LigerSpeedRow> add_written(const ScriptFacts& facts, WrittenRows& written,
                                       LigerScriptsOutcome& out) {
  const std::string& script = facts.script;
  const std::string inconclusive = inconclusive_during(facts.samples);
  std::vector<LigerSpeedRow> keys;
  for (auto& row : written.rows) {
    RunVerdict verdict = inconclusive.empty() ? RunVerdict::Passed : RunVerdict::Inconclusive;
    std::string reason = inconclusive;
    if (!(row.ms[0] <= row.ms[1] && row.ms[1] <= row.ms[2])) {
      verdict = RunVerdict::Failed;
      char buffer[200];
      std::snprintf(buffer, sizeof buffer,
                    "quantiles out of order: y_value_20=%g y_value_50=%g y_value_80=%g ms "
                    "(p20 <= median <= p80 expected)",
                    row.ms[0], row.ms[1], row.ms[2]);
      reason = buffer;
    }
    // The row's GPU claim against the daemon's probe, when it found a GPU.
    if (!facts.host->gpu_name.empty() && row.hardware.product != facts.host->hardware.product) {
      verdict = RunVerdict::Failed;
      const std::string claimed =
          row.hardware.product +
          (row.hardware.form_factor.empty() ? "" : " " + row.hardware.form_factor);
      reason = "the script says it ran on \"" + readable_line(claimed, 100) +
               "\", the daemon probed \"" + facts.host->gpu_name + "\"";
      row.hardware = facts.host->hardware;
    }
    auto run = row_run(facts, row, verdict, reason.empty() ? reason : script + ": " + reason);
    if (!run) {
      run = row_run(facts, row, RunVerdict::Failed,
                    script + ": result not recordable: " + run.error().message);
    }
    if (!run) continue;
    if (verdict == RunVerdict::Failed && out.error.empty()) {
      out.error = readable_line(script + ": " + reason, kMaxReasonBytes);
    }
    out.runs.push_back(std::move(*run));
    row.ms = {1, 1, 1};
    keys.push_back(std::move(row));
  }
  return keys;
}

}  // namespace

core::Result<std::vector<std::string>> list_liger_scripts(const fs::path& checkout) {
  const fs::path folder = checkout / kLigerScriptsFolder;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return core::fail(ErrorCode::NotFound,
                      "no " + std::string(kLigerScriptsFolder) + " folder in " + checkout.string());
  }
  std::vector<std::string> out;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("benchmark_") || !name.ends_with(".py") || !it->is_regular_file()) {
      continue;
    }
    auto text = read_file(it->path(), 4 * 1024 * 1024);
    if (!text) continue;
    if (text->find("__name__ == \"__main__\"") == std::string::npos &&
        text->find("__name__ == '__main__'") == std::string::npos) {
      continue;
    }
    out.push_back(std::string(kLigerScriptsFolder) + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

LigerScriptsOutcome run_liger_scripts(const LigerScriptsEntry& entry, const CommandContext& context,
                                      LigerScriptKeys& known) {
  KW_ASSERT(context.probe && context.now, "a probe and a clock");
  LigerScriptsOutcome out;
  const HostIdentity host = context.probe();
  std::vector<std::string> scripts = entry.scripts;
  if (entry.all()) {
    auto listed = list_liger_scripts(entry.checkout);
    if (!listed || listed->empty()) {
      out.error =
          listed ? "no benchmark script in " + entry.checkout.string() : listed.error().message;
      // Every script that ran before fails with it.
      for (const auto& [script, keys] : known) {
        ScriptFacts facts{&entry, &host, script, context.now(), {}};
        add_failed(facts, keys, RunVerdict::Failed, out.error, out);
      }
      return out;
    }
    scripts = std::move(*listed);
  }
  for (const auto& script : scripts) {
    ScriptFacts facts{&entry, &host, script, {}, {}};
    std::optional<core::Result<ChildResult>> child;
    WrittenRows written;
    bool cancelled = false;
    std::string failure = run_script(entry, context, script, facts, child, written, cancelled);
    if (cancelled) {
      out.cancelled = true;
      return out;
    }
    facts.observed = context.now();
    if (!failure.empty()) {
      failure = readable_line(script + ": " + failure, kMaxReasonBytes);
      if (out.error.empty()) out.error = failure;
      const RunVerdict verdict = child && *child && (**child).end == ChildEnd::TimedOut
                                     ? RunVerdict::TimedOut
                                     : RunVerdict::Failed;
      auto keys = known[script];
      if (keys.empty()) keys.push_back(fallback_row(facts));
      add_failed(facts, keys, verdict, failure, out);
      continue;
    }
    known[script] = add_written(facts, written, out);
  }
  return out;
}

}  // namespace kernelwatch::runners
