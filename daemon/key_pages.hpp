// The dashboard's rendered key pages, kept until their key changes: a key page of 8,000 runs with
// every run charted is 3.8 MB of HTML and a quarter of a second to render, so it is rendered once
// (on the pages thread, never the engine's) and answered again from the HTTP thread until the
// engine says that key got a run or one of its alerts changed. Thread-safe; composition code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kernelwatch::daemon {

class KeyPages {
 public:
  // At most `max_bytes` of pages are kept (the least recently used go first).
  explicit KeyPages(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Where the state of the store is, for the pages rendered from it: read it before reading the
  // store, and store() the page with it.
  [[nodiscard]] std::uint64_t now() const;
  // The page of `ref` (a key's digest) for `query` (the request's query, as sent), while no
  // change of its key was announced after it was read from the store.
  [[nodiscard]] std::shared_ptr<const std::string> find(
      const std::string& ref, const std::map<std::string, std::string>& query);
  void store(const std::string& ref, const std::map<std::string, std::string>& query,
             std::int64_t key_id, std::uint64_t read_at, std::shared_ptr<const std::string> page);
  // The engine committed a change of this key (a run, an alert row); nullopt: of any key (a
  // replay, new detector settings).
  void changed(std::optional<std::int64_t> key_id);
  // Whether what was read from the store at `read_at` is still current for the key.
  [[nodiscard]] bool current(std::int64_t key_id, std::uint64_t read_at) const;

  struct Stats {
    std::size_t pages = 0;
    std::size_t bytes = 0;
  };
  [[nodiscard]] Stats stats() const;

 private:
  struct Entry {
    std::string name;  // ref and query
    std::int64_t key_id = 0;
    std::uint64_t read_at = 0;
    std::shared_ptr<const std::string> page;
  };
  [[nodiscard]] bool current_locked(std::int64_t key_id, std::uint64_t read_at) const;

  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::uint64_t sequence_ = 0;                        // counts announced changes
  std::uint64_t all_changed_at_ = 0;                  // the last change of every key
  std::map<std::int64_t, std::uint64_t> changed_at_;  // key row -> its last change
  std::list<Entry> entries_;                          // most recently used first
  std::size_t bytes_ = 0;
};

}  // namespace kernelwatch::daemon
