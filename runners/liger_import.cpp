#include "runners/liger_import.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_limits.hpp"
#include "runners/detail/liger_rows.hpp"
#include "storage/input.hpp"

namespace kernelwatch::runners {
namespace {

using nlohmann::json;

// The most implementation digests kept per file; past this the cache starts over.
constexpr std::size_t kMaxDigests = 16384;

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
// first row of each shape checks the result against dump()'s (storage's store_first).
void append_json_double(std::string& out, double value) {
  std::array<char, 64> text{};
  char* end = nlohmann::detail::to_chars(text.data(), text.data() + text.size(), value);
  out.append(text.data(), end);
}

// One file's data rows into an import, one row at a time.
class LigerImport {
 public:
  LigerImport(storage::ImportTarget& target, LigerHeader header, std::string file_name);

  [[nodiscard]] core::Status row(const CsvRow& row);

 private:
  [[nodiscard]] core::Status slow(const CsvRow& row);
  // What a valid speed row has of its own, into delta_ (its texts into this object's buffers);
  // false where the row is not plainly valid (it then goes the slow way).
  [[nodiscard]] bool own_values(const CsvRow& row);
  void shape_key(const CsvRow& row, std::string& key) const;

  storage::ImportTarget* target_;
  LigerHeader header_;
  std::string file_name_;
  std::size_t metric_;  // metric_name's column
  std::size_t y_[3];    // y_value_20, y_value_50, y_value_80
  std::size_t timestamp_;
  std::size_t provider_;
  std::size_t version_;
  std::vector<std::size_t> key_columns_;  // what a shape is made of
  // The columns a raw source keeps per row, in the order storage's template takes them (by name;
  // a name written twice: its last column).
  std::vector<std::size_t> own_columns_;
  storage::SourceItem memory_;  // a memory row, its line set per row
  // Implementation digests by provider and version.
  std::unordered_map<std::string, std::string> digests_;
  std::string key_;  // scratch
  std::string implementation_;
  std::string run_values_;
  std::string source_values_;
  storage::RunDelta delta_;
  // The last time read: its text in the CSV, its ns.
  std::string last_time_text_;
  std::int64_t last_time_ns_ = 0;
};

LigerImport::LigerImport(storage::ImportTarget& target, LigerHeader header, std::string file_name)
    : target_(&target), header_(std::move(header)), file_name_(std::move(file_name)) {
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
    if (storage::template_source_column(header_.names[i])) {
      key_columns_.push_back(i);
    } else {
      own[header_.names[i]] = i;
    }
  }
  for (const auto& [name, column] : own) own_columns_.push_back(column);
  memory_.kind = storage::ItemKind::Skipped;
  memory_.reason = "memory row (kernelwatch stores latency only)";
}

void LigerImport::shape_key(const CsvRow& row, std::string& key) const {
  key.clear();
  for (std::size_t column : key_columns_) {  // each field with its length: no two keys alike
    key += std::to_string(row.fields[column].size());
    key += ':';
    key += row.fields[column];
  }
}

bool LigerImport::own_values(const CsvRow& row) {
  std::array<double, 3> ms{};
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (!latency_ms(row.fields[y_[i]], ms[i])) return false;
  }
  // The rows of one benchmark run share its time: read it once.
  const std::string& text = row.fields[timestamp_];
  if (text.empty() || text != last_time_text_) {
    const auto observed = core::parse_naive_timestamp(text);
    if (!observed) return false;
    last_time_text_ = text;
    last_time_ns_ = observed->time_since_epoch().count();
  }
  storage::RunDelta& delta = delta_;
  delta.line = row.line;
  delta.observed_at_ns = last_time_ns_;
  for (std::size_t i = 0; i < ms.size(); ++i) delta.latency_ns[i] = std::llround(ms[i] * 1e6);
  const std::string& provider = row.fields[provider_];
  const std::string& version = row.fields[version_];
  implementation_.assign(provider).append(1, '\n').append(version);  // a provider is one word
  auto digest = digests_.find(implementation_);
  if (digest == digests_.end()) {
    if (digests_.size() >= kMaxDigests) digests_.clear();
    digest =
        digests_.emplace(implementation_, liger_implementation_digest(provider, version)).first;
  }
  delta.implementation_digest = digest->second;
  delta.provider = provider;
  delta.version = version;
  // The run document's numbers in the order its template takes them: the p20 and p80
  // measurements (integer ns), then sourceNative.metrics ms_20, ms_50, ms_80 (as read).
  run_values_.assign("[");
  append_integer(run_values_, delta.latency_ns[0]);
  run_values_ += ',';
  append_integer(run_values_, delta.latency_ns[2]);
  for (double value : ms) {
    run_values_ += ',';
    append_json_double(run_values_, value);
  }
  run_values_ += ']';
  source_values_.assign("[");
  append_integer(source_values_, static_cast<std::int64_t>(row.line));
  for (std::size_t column : own_columns_) {
    source_values_ += ',';
    append_json_string(source_values_, row.fields[column]);
  }
  source_values_ += ']';
  delta.run_values = run_values_;
  delta.source_values = source_values_;
  return true;
}

core::Status LigerImport::slow(const CsvRow& row) {
  return target_->store(liger_row_item(header_, row, file_name_));
}

core::Status LigerImport::row(const CsvRow& row) {
  // Only a row that is plainly valid takes the fast way; anything else is read_liger_csv's.
  if (row.fields.size() != header_.names.size() ||
      !std::all_of(row.fields.begin(), row.fields.end(), [](const std::string& field) {
        return ascii(field) || core::valid_utf8(field);
      })) {
    return slow(row);
  }
  const std::string& metric = row.fields[metric_];
  if (metric == "memory") {
    memory_.line = row.line;
    return target_->store(memory_);
  }
  if (metric != "speed" || !own_values(row)) return slow(row);
  shape_key(row, key_);
  switch (KW_TRY(target_->store_like(key_, delta_))) {
    case storage::LikeOutcome::Stored:
      return {};
    case storage::LikeOutcome::NotLike:
      return slow(row);
    case storage::LikeOutcome::NewShape:
      break;
  }
  return target_->store_first(liger_row_item(header_, row, file_name_), key_, &delta_);
}

}  // namespace

bool LigerCsvReader::reads_extension(std::string_view extension) const {
  return extension == ".csv";
}

core::Result<std::optional<std::string>> LigerCsvReader::read(const std::filesystem::path& path,
                                                              storage::ImportTarget& target) const {
  const auto input = std::make_shared<storage::InputFile>(KW_TRY(storage::InputFile::open(path)));
  CsvReader reader(storage::chunks_of(input));
  const auto problem = [&](const core::Error& error) -> core::Result<std::optional<std::string>> {
    if (input->failed()) return tl::unexpected(error);
    return std::optional<std::string>(error.message);
  };
  CsvRow row;
  auto first = reader.next(row);
  if (!first) return problem(first.error());
  if (!*first) return std::optional<std::string>("1: empty file, expected a header row");
  // A UTF-8 byte-order mark (Excel writes one) is not part of the first column's name.
  if (!row.fields.empty() && row.fields[0].starts_with("\xEF\xBB\xBF")) row.fields[0].erase(0, 3);
  auto header = read_liger_header(row);
  if (!header) return std::optional<std::string>(header.error().message);
  LigerImport rows(target, std::move(*header), path.filename().string());
  while (true) {
    auto more = reader.next(row);
    if (!more) return problem(more.error());
    if (!*more) return std::optional<std::string>();
    KW_TRY(rows.row(row));
  }
}

const storage::FileReader& liger_csv_reader() {
  static const LigerCsvReader reader;
  return reader;
}

}  // namespace kernelwatch::runners
