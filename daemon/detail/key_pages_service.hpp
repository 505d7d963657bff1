// The dashboard's key and alert pages as a part of the daemon (detail/daemon.hpp): replayed and
// rendered on a thread of their own from a read-only connection of their own (WAL: readers never
// block the engine's writes), with a copy of the engine's detector settings, and kept in
// KeyPages until the engine says their key changed. Private to daemon/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "daemon/dashboard.hpp"
#include "daemon/engine.hpp"
#include "daemon/key_pages.hpp"
#include "daemon/log.hpp"
#include "storage/connection.hpp"

namespace kernelwatch::daemon::detail {

// The rendered key pages kept (a page with every run of an 8,000-run key charted is 3.8 MB).
inline constexpr std::size_t kKeyPagesMaxBytes = 64 * 1024 * 1024;

class KeyPagesService {
 public:
  KeyPagesService() = default;
  KeyPagesService(const KeyPagesService&) = delete;
  KeyPagesService& operator=(const KeyPagesService&) = delete;

  // Opens the pages' own read-only connection to the database at `location`; without one (the
  // reason logged) the pages are made on the engine's thread from its connection.
  void open(const std::filesystem::path& location, Log& log);
  // The detector settings the pages replay with: the engine's, copied for the pages thread.
  void set_options(EngineOptions options);
  // The engine committed a change of this key (nullopt: of every key).
  void changed(std::optional<std::int64_t> key_id) { key_pages_.changed(key_id); }
  // Where the dashboard's routes make the pages: here, or on the engine's thread from
  // `engine_store` when open() found no connection.
  [[nodiscard]] DashboardPages pages(storage::Connection& engine_store);
  // Starts the pages thread (when open() found a connection).
  void run();
  // Ends it: answers nobody waits for any more are dropped.
  void stop();

 private:
  // Declared before io_, which may still hold handlers that point at them when it is destroyed.
  KeyPages key_pages_{kKeyPagesMaxBytes};
  std::optional<storage::Connection> store_;
  mutable std::mutex options_mutex_;
  EngineOptions options_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      boost::asio::make_work_guard(io_)};
  std::thread thread_;
};

}  // namespace kernelwatch::daemon::detail
