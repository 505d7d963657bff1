#include "core/record_batch.hpp"

#include "core/json_limits.hpp"
#include "core/key.hpp"

namespace kernelwatch::core {

Result<std::vector<Run>> parse_record_batch(std::string_view body, Timestamp now) {
  using nlohmann::json;
  auto parsed = parse_json_text(body);
  if (!parsed) {
    return fail(ErrorCode::ParseError, "body is not JSON (byte " +
                                           std::to_string(parsed.error().byte + 1) +
                                           "): " + parsed.error().message);
  }
  const json& body_json = *parsed;
  if (!body_json.is_object() && !body_json.is_array()) {
    return fail(ErrorCode::ParseError, "body must be a kernelindex record or an array of them");
  }
  const json items = body_json.is_array() ? body_json : json::array({body_json});
  if (items.empty()) return fail(ErrorCode::ParseError, "empty array: no records");
  if (items.size() > kMaxBatchRecords) {
    return fail(ErrorCode::ParseError, std::to_string(items.size()) + " records: at most " +
                                           std::to_string(kMaxBatchRecords) + " per request");
  }
  std::vector<Run> runs;
  runs.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = "record " + std::to_string(i) + ": ";
    auto record = parse_checked_record(items[i]);
    if (!record) return fail(ErrorCode::ParseError, where + record.error().message);
    auto run = Run::of(std::move(*record));
    if (!run) return fail(ErrorCode::ParseError, where + run.error().message);
    const Timestamp observed = run->record().run.observed_at;
    // A run dated in the future would be its key's newest until that date: every run posted
    // before then would be stored and never judged. Beyond a small clock skew it is refused.
    if (observed > now + kFutureTolerance) {
      return fail(ErrorCode::ParseError,
                  where + "run.spec.observedAt " + format_timestamp(observed) + " is more than " +
                      std::to_string(kFutureTolerance.count()) +
                      " minutes after the receiver's clock (" + format_timestamp(now) + ")");
    }
    runs.push_back(std::move(*run));
  }
  return runs;
}

}  // namespace kernelwatch::core
