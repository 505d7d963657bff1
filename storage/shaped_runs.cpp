// The runs of one shape after its first: stored from the first's row and what each has of its
// own (storage/detail/import_sink.hpp).
#include <chrono>

#include "storage/detail/import_sink.hpp"

namespace kernelwatch::storage {
namespace {

// The most shapes kept per file: a shape is a few hundred bytes; past this the cache starts over
// (each shape's next run derives its row again).
constexpr std::size_t kMaxShapes = 16384;

bool strip_suffix(const std::string& text, const std::string& suffix, std::string& prefix) {
  if (!text.ends_with(suffix)) return false;
  prefix = text.substr(0, text.size() - suffix.size());
  return true;
}

}  // namespace

core::Result<std::optional<std::int64_t>> ImportSink::implementation(const RunDelta& delta) {
  digest_.assign(delta.implementation_digest);
  if (const auto it = implementations_.find(digest_); it != implementations_.end()) {
    return it->second;
  }
  const std::string version(delta.version);
  const auto stored =
      KW_TRY(store_implementation(*db_, digest_, std::string(delta.provider), version, nullptr));
  // A row of that digest made with another version label would give this run that label.
  std::optional<std::int64_t> id;
  if (stored.version == version) id = stored.id;
  if (implementations_.size() >= kMaxShapes) implementations_.clear();
  implementations_.emplace(digest_, id);
  return id;
}

void ImportSink::fill(const Shape& shape, const RunDelta& delta, std::int64_t implementation,
                      RunRow& out) const {
  out = shape.row;  // assigned over the same shape's strings: no allocation after the first
  out.implementation_id = implementation;
  out.observed_at_ns = delta.observed_at_ns;
  out.p20_ns = delta.latency_ns[0];
  out.median_ns = delta.latency_ns[1];
  out.p80_ns = delta.latency_ns[2];
  const std::string& id_time = id_time_of(delta.observed_at_ns);
  out.external_id.assign(shape.external_id_prefix).append(id_time);
  if (!out.name) out.name.emplace();
  out.name->assign(shape.name_prefix).append(id_time);
  (out.run_values ? *out.run_values : out.run_values.emplace()).assign(delta.run_values);
  (out.source_values ? *out.source_values : out.source_values.emplace())
      .assign(delta.source_values);
}

const std::string& ImportSink::id_time_of(std::int64_t observed_at_ns) const {
  if (observed_at_ns != last_time_ns_) {
    last_time_ns_ = observed_at_ns;
    last_id_time_ =
        core::format_id_timestamp(core::Timestamp{std::chrono::nanoseconds{observed_at_ns}});
  }
  return last_id_time_;
}

core::Status ImportSink::store_first(const SourceItem& item, const std::string& shape_key,
                                     const RunDelta* delta) {
  if (item.kind != ItemKind::Run || too_late(item.record.run.observed_at)) return store(item);
  read();
  std::optional<RunRow> prepared;
  KW_TRY(insert(item, &prepared));
  if (!prepared) return {};  // refused (and counted) by insert
  Shape shape;
  shape.row = std::move(*prepared);
  if (delta != nullptr) {
    const std::string id_time = core::format_id_timestamp(item.record.run.observed_at);
    const auto implementation_id = KW_TRY(implementation(*delta));
    if (shape.row.name && strip_suffix(shape.row.external_id, id_time, shape.external_id_prefix) &&
        strip_suffix(*shape.row.name, id_time, shape.name_prefix) && implementation_id) {
      RunRow derived;
      fill(shape, *delta, *implementation_id, derived);
      shape.fast = derived == shape.row;
    }
  }
  if (shapes_.size() >= kMaxShapes) shapes_.clear();
  shapes_.insert_or_assign(shape_key, std::move(shape));
  return {};
}

core::Result<LikeOutcome> ImportSink::store_like(const std::string& shape_key,
                                                 const RunDelta& delta) {
  const auto shape = shapes_.find(shape_key);
  if (shape == shapes_.end()) return LikeOutcome::NewShape;
  if (!shape->second.fast ||
      too_late(core::Timestamp{std::chrono::nanoseconds{delta.observed_at_ns}})) {
    return LikeOutcome::NotLike;
  }
  // The version is the one part of a run's record that is its own text: the first run of each
  // implementation goes the slow way, whose record the schemas check (a label of at most 200
  // characters); only a version so proven is cached by implementation().
  digest_.assign(delta.implementation_digest);
  if (!implementations_.contains(digest_)) return LikeOutcome::NewShape;
  const auto implementation_id = KW_TRY(implementation(delta));
  if (!implementation_id) return LikeOutcome::NotLike;
  fill(shape->second, delta, *implementation_id, scratch_);
  read();
  const InsertOutcome outcome = KW_TRY_WITH(insert_run_row(*db_, scratch_), where(delta.line));
  counted(outcome);
  ++report_->derived;
  return LikeOutcome::Stored;
}

}  // namespace kernelwatch::storage
