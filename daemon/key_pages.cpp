#include "daemon/key_pages.hpp"

#include <utility>

namespace kernelwatch::daemon {
namespace {

// "ref?a=1&b=2": the query as the request sent it (a map: in name order).
std::string name_of(const std::string& ref, const std::map<std::string, std::string>& query) {
  std::string name = ref + "?";
  for (const auto& [key, value] : query) {
    name += key;
    name += '=';
    name += value;
    name += '&';
  }
  return name;
}

}  // namespace

std::uint64_t KeyPages::now() const {
  std::lock_guard lock(mutex_);
  return sequence_;
}

bool KeyPages::current_locked(std::int64_t key_id, std::uint64_t read_at) const {
  if (all_changed_at_ > read_at) return false;
  const auto it = changed_at_.find(key_id);
  return it == changed_at_.end() || it->second <= read_at;
}

bool KeyPages::current(std::int64_t key_id, std::uint64_t read_at) const {
  std::lock_guard lock(mutex_);
  return current_locked(key_id, read_at);
}

std::shared_ptr<const std::string> KeyPages::find(const std::string& ref,
                                                  const std::map<std::string, std::string>& query) {
  const std::string name = name_of(ref, query);
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->name != name) continue;
    if (!current_locked(it->key_id, it->read_at)) {
      bytes_ -= it->page->size();
      entries_.erase(it);
      return nullptr;
    }
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().page;
  }
  return nullptr;
}

void KeyPages::store(const std::string& ref, const std::map<std::string, std::string>& query,
                     std::int64_t key_id, std::uint64_t read_at,
                     std::shared_ptr<const std::string> page) {
  if (!page || page->size() > max_bytes_) return;
  std::string name = name_of(ref, query);
  std::lock_guard lock(mutex_);
  if (!current_locked(key_id, read_at)) return;  // the key changed while it was rendered
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->name == name) {
      bytes_ -= it->page->size();
      entries_.erase(it);
      break;
    }
  }
  bytes_ += page->size();
  entries_.push_front(Entry{std::move(name), key_id, read_at, std::move(page)});
  while (bytes_ > max_bytes_ && !entries_.empty()) {
    bytes_ -= entries_.back().page->size();
    entries_.pop_back();
  }
}

void KeyPages::changed(std::optional<std::int64_t> key_id) {
  std::lock_guard lock(mutex_);
  ++sequence_;
  if (!key_id) {
    all_changed_at_ = sequence_;
    changed_at_.clear();
    bytes_ = 0;
    entries_.clear();
    return;
  }
  changed_at_[*key_id] = sequence_;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->key_id == *key_id) {
      bytes_ -= it->page->size();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

KeyPages::Stats KeyPages::stats() const {
  std::lock_guard lock(mutex_);
  return {entries_.size(), bytes_};
}

}  // namespace kernelwatch::daemon
