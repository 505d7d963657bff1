// The dashboard's pages thread (detail/key_pages_service.hpp).
#include "daemon/detail/key_pages_service.hpp"

#include <string>
#include <utility>

namespace kernelwatch::daemon::detail {

void KeyPagesService::open(const std::filesystem::path& location, Log& log) {
  if (auto pages = storage::Connection::open(location, storage::OpenMode::ReadOnly)) {
    store_.emplace(std::move(*pages));
  } else {
    log.warning("the dashboard's key pages render on the engine's thread: " +
                pages.error().message);
  }
}

void KeyPagesService::set_options(EngineOptions options) {
  std::lock_guard lock(options_mutex_);
  options_ = std::move(options);
}

DashboardPages KeyPagesService::pages(storage::Connection& engine_store) {
  DashboardPages pages;
  pages.key_pages = &key_pages_;
  pages.engine_options = [this] {
    std::lock_guard lock(options_mutex_);
    return options_;
  };
  if (store_) {
    pages.context = &io_;
    pages.store = &*store_;
  } else {
    pages.store = &engine_store;  // on the engine's thread, as every other handler
  }
  return pages;
}

void KeyPagesService::run() {
  if (store_) thread_ = std::thread([this] { io_.run(); });
}

void KeyPagesService::stop() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kernelwatch::daemon::detail
