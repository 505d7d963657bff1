#include "core/json_fields.hpp"

#include <cmath>
#include <limits>

namespace kernelwatch::core {
namespace {

using nlohmann::json;

const JsonErrors& default_errors() {
  static const JsonErrors errors;
  return errors;
}

const json& null_value() {
  static const json null;
  return null;
}

std::string type_name(const json& value) {
  if (value.is_number()) return "number";
  return value.type_name();
}

}  // namespace

JsonField::JsonField(const json& document, std::string path)
    : JsonField(&document, std::move(path), &default_errors()) {}

JsonField::JsonField(const json& document, std::string path, const JsonErrors& errors)
    : JsonField(&document, std::move(path), &errors) {}

JsonField::JsonField(const json* value, std::string path, const JsonErrors* errors)
    : value_(value), path_(std::move(path)), errors_(errors) {}

bool JsonField::present() const {
  return value_ != nullptr && !(errors_->null_is_absent && value_->is_null());
}

const json& JsonField::value() const {
  return value_ != nullptr ? *value_ : null_value();
}

std::vector<std::string> JsonField::keys() const {
  std::vector<std::string> out;
  if (value_ == nullptr || !value_->is_object()) return out;
  for (const auto& [key, unused] : value_->items()) out.push_back(key);
  return out;
}

JsonField JsonField::operator[](std::string_view key) const {
  std::string path = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  const json* member = nullptr;
  if (value_ != nullptr && value_->is_object()) {
    if (const auto it = value_->find(key); it != value_->end()) member = &*it;
  }
  return JsonField(member, std::move(path), errors_);
}

JsonField JsonField::operator[](std::size_t index) const {
  std::string path = path_ + "[" + std::to_string(index) + "]";
  const json* element = nullptr;
  if (value_ != nullptr && value_->is_array() && index < value_->size()) {
    element = &(*value_)[index];
  }
  return JsonField(element, std::move(path), errors_);
}

Result<std::string> JsonField::string(std::string_view what) const {
  if (!present()) return missing();
  if (!value_->is_string()) return wrong_type(what);
  return value_->get<std::string>();
}

Result<std::int64_t> JsonField::integer(std::string_view what) const {
  if (!present()) return missing();
  if (value_->is_number_unsigned()) {
    const auto value = value_->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return wrong_type(what);
    }
    return static_cast<std::int64_t>(value);
  }
  if (value_->is_number_integer()) return value_->get<std::int64_t>();
  if (value_->is_number_float() && errors_->whole_floats) {
    // Exactly the integers a double holds within 64 bits: [-2^63, 2^63).
    constexpr double kLimit = 9223372036854775808.0;
    const double value = value_->get<double>();
    if (std::isfinite(value) && std::floor(value) == value && value >= -kLimit && value < kLimit) {
      return static_cast<std::int64_t>(value);
    }
  }
  return wrong_type(what);
}

Result<double> JsonField::number(std::string_view what) const {
  if (!present()) return missing();
  if (!value_->is_number()) return wrong_type(what);
  const double value = value_->get<double>();
  if (!std::isfinite(value)) return error("not finite");
  return value;
}

Result<bool> JsonField::boolean(std::string_view what) const {
  if (!present()) return missing();
  if (!value_->is_boolean()) return wrong_type(what);
  return value_->get<bool>();
}

Result<Timestamp> JsonField::timestamp() const {
  return parsed(parse_timestamp);
}

Result<JsonField> JsonField::object(std::string_view what) const {
  if (!present()) return missing();
  if (!value_->is_object()) return wrong_type(what);
  return *this;
}

Result<std::vector<JsonField>> JsonField::array(std::string_view what) const {
  if (!present()) return missing();
  if (!value_->is_array()) return wrong_type(what);
  std::vector<JsonField> elements;
  elements.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) elements.push_back((*this)[i]);
  return elements;
}

Result<std::string> JsonField::string_or(std::string fallback, std::string_view what) const {
  if (!present()) return fallback;
  return string(what);
}

Result<std::int64_t> JsonField::integer_or(std::int64_t fallback) const {
  if (!present()) return fallback;
  return integer();
}

Result<double> JsonField::number_or(double fallback) const {
  if (!present()) return fallback;
  return number();
}

Result<bool> JsonField::boolean_or(bool fallback) const {
  if (!present()) return fallback;
  return boolean();
}

tl::unexpected<Error> JsonField::error(std::string_view what) const {
  return error(errors_->code, what);
}

tl::unexpected<Error> JsonField::error(ErrorCode code, std::string_view what) const {
  std::string message;
  if (!errors_->source.empty()) message = errors_->source + ": ";
  if (!path_.empty()) message += path_ + ": ";
  message += what;
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

tl::unexpected<Error> JsonField::error(const Error& cause) const {
  return error(cause.code, cause.message);
}

tl::unexpected<Error> JsonField::missing() const {
  return error("missing");
}

tl::unexpected<Error> JsonField::wrong_type(std::string_view what) const {
  std::string message = "expected " + std::string(what);
  if (errors_->name_found) message += ", got " + type_name(value());
  return error(message);
}

std::string string_at(const nlohmann::json& document, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &document;
  for (const char* name : path) {
    if (!node->is_object()) return {};
    const auto it = node->find(name);
    if (it == node->end()) return {};
    node = &*it;
  }
  return node->is_string() ? node->get<std::string>() : std::string();
}

}  // namespace kernelwatch::core
