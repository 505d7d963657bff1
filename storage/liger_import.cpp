#include "storage/detail/liger_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "core/json_limits.hpp"
#include "storage/detail/record_layout.hpp"

namespace kernelwatch::storage {
namespace {

using nlohmann::json;

// The most shapes kept per file: a key's shape is a few hundred bytes; past this the cache starts
// over (each key's next row derives its shape again).
constexpr std::size_t kMaxShapes = 16384;

// A y value as read_liger_csv reads it: a finite number, positive, 1 ns to 2^53 - 1 ns.
bool latency_ms(std::string_view text, double& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value) || !(value > 0)) {
    return false;
  }
  return value * 1e6 >= 0.5 && value * 1e6 <= static_cast<double>(core::kMaxLatencyNs);
}

bool ascii(std::string_view text) {
  unsigned char any = 0;
  for (char c : text) any |= static_cast<unsigned char>(c);
  return any < 0x80;
}

// A string as nlohmann's dump writes it (what a raw source's values hold).
void append_json_string(std::string& out, const std::string& text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += json(text).dump();
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

void append_integer(std::string& out, std::int64_t value) {
  std::array<char, 24> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
  out.append(digits.data(), end);
}

// A double as nlohmann's dump writes it (its own shortest round-trip form, "2.0" for an
// integer): the routine dump() itself calls, without a json value and a string per number. The
// first row of each key checks the result against dump()'s (LigerImport::slow).
void append_json_double(std::string& out, double value) {
  std::array<char, 64> text{};
  char* end = nlohmann::detail::to_chars(text.data(), text.data() + text.size(), value);
  out.append(text.data(), end);
}

bool strip_suffix(const std::string& text, const std::string& suffix, std::string& prefix) {
  if (!text.ends_with(suffix)) return false;
  prefix = text.substr(0, text.size() - suffix.size());
  return true;
}

}  // namespace

LigerImport::LigerImport(ImportSink& sink, LigerHeader header, std::string file_name)
    : sink_(&sink), header_(std::move(header)), file_name_(std::move(file_name)) {
  const auto& columns = header_.columns;
  metric_ = columns.at("metric_name");
  y_[0] = columns.at("y_value_20");
  y_[1] = columns.at("y_value_50");
  y_[2] = columns.at("y_value_80");
  timestamp_ = columns.at("timestamp");
  provider_ = columns.at("kernel_provider");
  version_ = columns.at("liger_version");
  std::map<std::string, std::size_t> own;  // by name, as a JSON object orders its members
  for (std::size_t i = 0; i < header_.names.size(); ++i) {
    if (layout::liger_key_column(header_.names[i])) {
      key_columns_.push_back(i);
    } else {
      own[header_.names[i]] = i;
    }
  }
  for (const auto& [name, column] : own) own_columns_.push_back(column);
}

void LigerImport::shape_key(const CsvRow& row, std::string& key) const {
  key.clear();
  for (std::size_t column : key_columns_) {  // each field with its length: no two keys alike
    key += std::to_string(row.fields[column].size());
    key += ':';
    key += row.fields[column];
  }
}

bool LigerImport::own_values(const CsvRow& row, Own& own) {
  for (int i = 0; i < 3; ++i) {
    if (!latency_ms(row.fields[y_[i]], own.ms[static_cast<std::size_t>(i)])) return false;
  }
  // The rows of one benchmark run share its time: read it once.
  const std::string& text = row.fields[timestamp_];
  if (text.empty() || text != last_time_text_) {
    const auto observed = core::parse_naive_timestamp(text);
    if (!observed) return false;
    last_time_text_ = text;
    last_time_ns_ = observed->time_since_epoch().count();
    last_id_time_ = core::format_id_timestamp(*observed);
  }
  own.observed_at_ns = last_time_ns_;
  return true;
}

core::Result<std::optional<std::int64_t>> LigerImport::implementation(const CsvRow& row) {
  const std::string& provider = row.fields[provider_];
  const std::string& version = row.fields[version_];
  std::string key = provider + '\n' + version;  // a provider is one word
  if (const auto it = implementations_.find(key); it != implementations_.end()) return it->second;
  const auto stored = KW_TRY(store_implementation(
      sink_->db(), liger_implementation_digest(provider, version), provider, version, nullptr));
  // A row of that digest made with another version label would give this run that label.
  std::optional<std::int64_t> id;
  if (stored.version == version) id = stored.id;
  if (implementations_.size() >= kMaxShapes) implementations_.clear();
  implementations_.emplace(std::move(key), id);
  return id;
}

void LigerImport::fill(const Shape& shape, const CsvRow& row, const Own& own,
                       std::int64_t implementation, RunRow& out) const {
  out = shape.row;  // assigned over the same shape's strings: no allocation after the first
  out.implementation_id = implementation;
  const auto ns = [&](std::size_t i) { return std::llround(own.ms[i] * 1e6); };
  out.observed_at_ns = own.observed_at_ns;
  out.p20_ns = ns(0);
  out.median_ns = ns(1);
  out.p80_ns = ns(2);
  const std::string& id_time = id_time_of(own.observed_at_ns);
  out.external_id.assign(shape.external_id_prefix).append(id_time);
  if (!out.name) out.name.emplace();
  out.name->assign(shape.name_prefix).append(id_time);
  // The run document's numbers in the order its template takes them: the p20 and p80
  // measurements (integer ns), then sourceNative.metrics ms_20, ms_50, ms_80 (as read).
  std::string& values = out.run_values ? *out.run_values : out.run_values.emplace();
  values.assign("[");
  append_integer(values, ns(0));
  values += ',';
  append_integer(values, ns(2));
  for (double ms : own.ms) {
    values += ',';
    append_json_double(values, ms);
  }
  values += ']';
  std::string& source = out.source_values ? *out.source_values : out.source_values.emplace();
  source.assign("[");
  append_integer(source, static_cast<std::int64_t>(row.line));
  for (std::size_t column : own_columns_) {
    source += ',';
    append_json_string(source, row.fields[column]);
  }
  source += ']';
}

const std::string& LigerImport::id_time_of(std::int64_t observed_at_ns) const {
  if (observed_at_ns != last_time_ns_) {
    last_time_ns_ = observed_at_ns;
    last_time_text_.clear();
    last_id_time_ =
        core::format_id_timestamp(core::Timestamp{std::chrono::nanoseconds{observed_at_ns}});
  }
  return last_id_time_;
}

core::Status LigerImport::slow(const CsvRow& row, const std::string& key) {
  const SourceItem item = liger_row_item(header_, row, file_name_);
  if (key.empty() || item.kind != ItemKind::Run || sink_->too_late(item.record.run.observed_at)) {
    return sink_->store(item);
  }
  sink_->read();
  std::optional<RunRow> prepared;
  KW_TRY(sink_->insert(item, &prepared));
  if (!prepared) return {};  // refused (and counted) by insert
  Shape shape;
  shape.row = std::move(*prepared);
  const std::string id_time = core::format_id_timestamp(item.record.run.observed_at);
  Own own;
  const auto implementation_id = KW_TRY(implementation(row));
  if (shape.row.name && strip_suffix(shape.row.external_id, id_time, shape.external_id_prefix) &&
      strip_suffix(*shape.row.name, id_time, shape.name_prefix) && own_values(row, own) &&
      implementation_id) {
    RunRow derived;
    fill(shape, row, own, *implementation_id, derived);
    shape.fast = derived == shape.row;
  }
  if (shapes_.size() >= kMaxShapes) shapes_.clear();
  shapes_.insert_or_assign(key, std::move(shape));
  return {};
}

core::Status LigerImport::row(const CsvRow& row) {
  // Only a row that is plainly valid takes the fast way; anything else is read_liger_csv's.
  if (row.fields.size() != header_.names.size() ||
      !std::all_of(row.fields.begin(), row.fields.end(), [](const std::string& field) {
        return ascii(field) || core::valid_utf8(field);
      })) {
    return slow(row, {});
  }
  const std::string& metric = row.fields[metric_];
  if (metric == "memory") {
    sink_->read();
    sink_->memory_row();
    return {};
  }
  if (metric != "speed") return slow(row, {});
  shape_key(row, key_);
  const auto shape = shapes_.find(key_);
  if (shape == shapes_.end()) return slow(row, key_);
  Own own;
  if (!shape->second.fast || !own_values(row, own) ||
      sink_->too_late(core::Timestamp{std::chrono::nanoseconds{own.observed_at_ns}})) {
    return slow(row, {});
  }
  // The Liger version is the one part of a run's record that is the row's own text: the first
  // row of each provider and version goes the slow way, whose record the schemas check (a label
  // of at most 200 characters); only a version so proven is cached by implementation().
  if (!implementations_.contains(row.fields[provider_] + '\n' + row.fields[version_])) {
    return slow(row, key_);
  }
  const auto implementation_id = KW_TRY(implementation(row));
  if (!implementation_id) return slow(row, {});
  fill(shape->second, row, own, *implementation_id, scratch_);
  sink_->read();
  const InsertOutcome outcome =
      KW_TRY_WITH(insert_run_row(sink_->db(), scratch_), sink_->where(row.line));
  sink_->counted(outcome);
  ++sink_->report().derived;
  return {};
}

}  // namespace kernelwatch::storage
