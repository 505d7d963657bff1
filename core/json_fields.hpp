// Typed reads of the fields of a JSON document, each error naming the field's path
// ("run.spec.timing.latencyNs.median: expected a number"): the one way kernelwatch reads JSON it
// did not just build (kernelindex records, stored alerts, queued notifications, the config file).
// Plain C++ and nlohmann/json; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/time.hpp"

namespace kernelwatch::core {

// How a document's errors are worded. Records, alerts and notifications, written by programs,
// keep the defaults ("run.spec.status: missing"). The config file, written by hand, names the
// file, calls a wrong value invalid input, says what it found and takes null for a value
// ("kernelwatch.json: backend: expected a string, got null").
struct JsonErrors {
  std::string source;                      // put before every message ("<source>: ..."); "" none
  ErrorCode code = ErrorCode::ParseError;  // of a missing or mistyped field
  bool name_found = false;                 // a wrong type also says which it is: ", got number"
  bool null_is_absent = true;              // false: null is a value (of the wrong type)
  bool whole_floats = true;  // an integer may be written with a zero fraction (577632.0)
};

// One field of a document: its value, or its absence, and its path. A member of an absent field
// or of a field that is not an object is absent (its path still named), so a path can be walked
// before it is checked. Refers to the document and to the JsonErrors: both outlive the field.
class JsonField {
 public:
  // The document itself, named `path` in messages ("run"; "" for a whole file).
  explicit JsonField(const nlohmann::json& document, std::string path = {});
  JsonField(const nlohmann::json& document, std::string path, const JsonErrors& errors);

  [[nodiscard]] const std::string& path() const { return path_; }
  // There (and not null, unless the JsonErrors take null for a value).
  [[nodiscard]] bool present() const;
  // The value; null when the field is absent.
  [[nodiscard]] const nlohmann::json& value() const;
  // The member names of an object, in the document's order; none for anything else.
  [[nodiscard]] std::vector<std::string> keys() const;

  [[nodiscard]] JsonField operator[](std::string_view key) const;  // "run" -> "run.spec"
  [[nodiscard]] JsonField operator[](std::size_t index) const;     // "list" -> "list[2]"

  // Required reads: an absent field is "<path>: missing", a value of another type
  // "<path>: expected <what>". `what` names the expected value where the type alone says too
  // little ("a duration string like \"15m\"").
  [[nodiscard]] Result<std::string> string(std::string_view what = "a string") const;
  // A whole number within 64 bits, read exactly; a number written with a fraction is one when the
  // fraction is zero (577632.0) and the JsonErrors take whole floats.
  [[nodiscard]] Result<std::int64_t> integer(std::string_view what = "an integer") const;
  [[nodiscard]] Result<double> number(std::string_view what = "a number") const;  // finite
  [[nodiscard]] Result<bool> boolean(std::string_view what = "true or false") const;
  [[nodiscard]] Result<Timestamp> timestamp() const;  // RFC 3339 text
  // The field itself, checked to be an object or an array; an array as its elements.
  [[nodiscard]] Result<JsonField> object(std::string_view what = "an object") const;
  [[nodiscard]] Result<std::vector<JsonField>> array(std::string_view what = "an array") const;
  // A string that `parse` turns into a T (parse_run_status, parse_alert_kind, ...), its error
  // with the path in front.
  template <class T>
  [[nodiscard]] Result<T> parsed(Result<T> (*parse)(std::string_view)) const {
    const std::string text = KW_TRY(string());
    return wrap(parse(text));
  }
  // A result computed from the field's value (a workload label, a secret file), its error with
  // the field's place in front as error(cause) words it.
  template <class T>
  [[nodiscard]] Result<T> wrap(Result<T> result) const {
    if (!result) return error(result.error());
    return result;
  }

  // Optional reads: `fallback` when the field is absent.
  [[nodiscard]] Result<std::string> string_or(std::string fallback,
                                              std::string_view what = "a string") const;
  [[nodiscard]] Result<std::int64_t> integer_or(std::int64_t fallback) const;
  [[nodiscard]] Result<double> number_or(double fallback) const;
  [[nodiscard]] Result<bool> boolean_or(bool fallback) const;

  // An error about this field, worded as the JsonErrors say: "<source>: <path>: <what>".
  [[nodiscard]] tl::unexpected<Error> error(std::string_view what) const;
  [[nodiscard]] tl::unexpected<Error> error(ErrorCode code, std::string_view what) const;
  // An error found in the field's value (a timestamp, a secret file): its code kept, the
  // field's place put in front.
  [[nodiscard]] tl::unexpected<Error> error(const Error& cause) const;

 private:
  JsonField(const nlohmann::json* value, std::string path, const JsonErrors* errors);

  [[nodiscard]] tl::unexpected<Error> missing() const;
  [[nodiscard]] tl::unexpected<Error> wrong_type(std::string_view what) const;

  const nlohmann::json* value_;  // nullptr: absent
  std::string path_;
  const JsonErrors* errors_;
};

// The string at `path` of a document kernelwatch only looks into (never an error): "" when a
// member is missing, a step is not an object or the value is not a string.
[[nodiscard]] std::string string_at(const nlohmann::json& document,
                                    std::initializer_list<const char*> path);

}  // namespace kernelwatch::core
