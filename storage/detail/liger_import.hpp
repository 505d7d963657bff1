// Storage-private: a Liger CSV file's data rows into the runs table, one row at a time. The first
// row of each key (its key's columns as written: kernel, provider, pass, x, config, GPU), and the
// first of each provider and Liger version (the one text of a row's own in its record, so the
// schemas check it), goes the way of any record (record, key, documents, template: prepare_run);
// what it derived is kept, and every later row of that key fills in only what it has of its own
// (time, latencies, Liger version, line, the other columns) without building JSON. The first row
// also checks that the two ways give the same row: where they would not, that key keeps the slow
// way. Invalid rows always take the slow way, so their reasons are read_liger_csv()'s.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "storage/detail/import_sink.hpp"
#include "storage/detail/liger_rows.hpp"

namespace kernelwatch::storage {

class LigerImport {
 public:
  LigerImport(ImportSink& sink, LigerHeader header, std::string file_name);

  [[nodiscard]] core::Status row(const CsvRow& row);

 private:
  struct Shape {
    bool fast = false;
    RunRow row;                      // the first row's, ids and all
    std::string external_id_prefix;  // before the row's time
    std::string name_prefix;
  };
  // What a valid speed row has of its own.
  struct Own {
    std::array<double, 3> ms{};  // p20, median, p80
    std::int64_t observed_at_ns = 0;
  };

  [[nodiscard]] core::Status slow(const CsvRow& row, const std::string& key);
  [[nodiscard]] bool own_values(const CsvRow& row, Own& own);
  // "2025-07-17-18-18-16" of a time (the last one kept: a benchmark run's rows share it).
  [[nodiscard]] const std::string& id_time_of(std::int64_t observed_at_ns) const;
  // The implementation row of the row's provider and version (stored unless present); nullopt
  // when a row of that digest says another version (the row then goes the slow way).
  [[nodiscard]] core::Result<std::optional<std::int64_t>> implementation(const CsvRow& row);
  void fill(const Shape& shape, const CsvRow& row, const Own& own, std::int64_t implementation,
            RunRow& out) const;
  void shape_key(const CsvRow& row, std::string& key) const;

  ImportSink* sink_;
  LigerHeader header_;
  std::string file_name_;
  std::size_t metric_;  // metric_name's column
  std::size_t y_[3];    // y_value_20, y_value_50, y_value_80
  std::size_t timestamp_;
  std::size_t provider_;
  std::size_t version_;
  std::unordered_map<std::string, std::optional<std::int64_t>> implementations_;
  std::vector<std::size_t> key_columns_;  // what a shape is made of
  // The columns a raw source keeps per row, in the order its template takes them (by name; a
  // name written twice: its last column).
  std::vector<std::size_t> own_columns_;
  std::unordered_map<std::string, Shape> shapes_;
  std::string key_;  // scratch
  RunRow scratch_;
  // The last time read and written: its text in the CSV, its ns, its externalId form.
  mutable std::string last_time_text_;
  mutable std::int64_t last_time_ns_ = 0;
  mutable std::string last_id_time_ = core::format_id_timestamp(core::Timestamp{});
};

}  // namespace kernelwatch::storage
