// Test-only delivery process for the crash test: opens a database and runs the DeliveryWorker
// against one destination until nothing is pending, then exits 0 (1 on error, 2 on bad usage).
// What `kernelwatch daemon` will do inside its own io_context, as a process that can be killed.
#include <iostream>
#include <string>

#include <boost/asio/io_context.hpp>

#include "notifiers/worker.hpp"
#include "storage/connection.hpp"

namespace {

using namespace kernelwatch;

int usage() {
  std::cerr << "usage: kw_outbox_worker --db FILE --type slack|webhook|alertmanager --name NAME "
               "--url URL [--secret S] [--ca-file PEM] [--base-ms N] [--cap-ms N] "
               "[--timeout-ms N] [--batch N] [--seed N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db_path;
  notifiers::Destination destination;
  destination.backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(100),
                         std::chrono::hours(1)};
  notifiers::WorkerOptions options;
  options.jitter_seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string value = argv[++i];
    if (arg == "--db") {
      db_path = value;
    } else if (arg == "--type") {
      auto type = notifiers::parse_destination_type(value);
      if (!type) return usage();
      destination.type = *type;
    } else if (arg == "--name") {
      destination.name = value;
    } else if (arg == "--url") {
      destination.url = value;
    } else if (arg == "--secret") {
      destination.secret = value;
    } else if (arg == "--ca-file") {
      destination.ca_file = value;
    } else if (arg == "--base-ms") {
      destination.backoff.base = std::chrono::milliseconds(std::stoll(value));
    } else if (arg == "--cap-ms") {
      destination.backoff.cap = std::chrono::milliseconds(std::stoll(value));
    } else if (arg == "--timeout-ms") {
      const std::chrono::milliseconds t(std::stoll(value));
      destination.timeouts = {t, t, t, t, t};
    } else if (arg == "--batch") {
      options.batch_size = std::stoul(value);
    } else if (arg == "--seed") {
      options.jitter_seed = std::stoull(value);
    } else {
      return usage();
    }
  }
  if (db_path.empty() || destination.name.empty() || destination.url.empty()) return usage();
  destination.min_interval = std::chrono::milliseconds(0);

  auto store = storage::Connection::open(db_path, storage::OpenMode::Existing);
  if (!store) {
    std::cerr << "kw_outbox_worker: " << store.error().message << "\n";
    return 1;
  }
  boost::asio::io_context io;
  std::unique_ptr<notifiers::DeliveryWorker> worker;
  options.on_idle = [&](std::string_view) {
    worker->stop();
    io.stop();
  };
  auto created = notifiers::DeliveryWorker::create(
      io, *store, {destination}, notifiers::system_clock(),
      [](notifiers::LogLevel level, std::string_view message) {
        if (level >= notifiers::LogLevel::Warning) std::cerr << message << "\n";
      },
      options);
  if (!created) {
    std::cerr << "kw_outbox_worker: " << created.error().message << "\n";
    return 1;
  }
  worker = std::move(*created);
  worker->start();
  io.run();
  const auto stats = worker->stats();
  std::cout << "delivered " << stats.delivered << " retried " << stats.retried << " dead "
            << stats.dead << "\n";
  return 0;
}
