// Notifier benchmark: queue N notifications in the outbox, then time the DeliveryWorker draining
// them to a local receiver (plain HTTP on 127.0.0.1, or HTTPS with a test CA), with peak memory.
// Usage: kw_bench_deliver [N=100000] [http|https] [DIR=/tmp/kwbench-notifiers]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <boost/asio/io_context.hpp>

#include "notifiers/notification.hpp"
#include "notifiers/worker.hpp"
#include "storage/outbox.hpp"
#include "tests/notifiers/support/samples.hpp"
#include "tests/notifiers/support/test_pki.hpp"
#include "tests/notifiers/support/test_receiver.hpp"

namespace {

using namespace kernelwatch;
using Clock = std::chrono::steady_clock;

long rss_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::string(field).size()));
  }
  return -1;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::stoi(argv[1]) : 100'000;
  const bool https = argc > 2 && std::string(argv[2]) == "https";
  const std::filesystem::path dir = argc > 3 ? argv[3] : "/tmp/kwbench-notifiers";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  auto store = storage::Connection::open(dir / "kw.db", storage::OpenMode::Create);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  storage::Outbox outbox(*store);
  const auto enqueue_start = Clock::now();
  {
    auto tx = store->begin();
    if (!tx) return 1;
    for (int i = 0; i < count; ++i) {
      auto n = notifiers::testing::sample_notification("bench-" + std::to_string(i), 2);
      if (!outbox.enqueue(
              *tx, storage::NewOutboxRow{
                       "hook", n.idempotency_key, notifiers::serialize(n), n.created_at, {}})) {
        return 1;
      }
    }
    if (!tx->commit()) return 1;
  }
  const double enqueue_s = seconds_since(enqueue_start);
  const long rss_before = rss_kib("VmRSS:");

  std::optional<notifiers::testing::ServerIdentity> identity;
  notifiers::Destination destination;
  destination.type = "webhook";
  destination.name = "hook";
  destination.secret = "bench-secret";
  destination.min_interval = std::chrono::milliseconds(0);
  if (https) {
    const auto pki = notifiers::testing::make_test_pki();
    notifiers::testing::write_text(dir / "ca.pem", pki.ca_pem);
    identity = notifiers::testing::ServerIdentity{pki.server.cert_pem, pki.server.key_pem};
    destination.ca_file = (dir / "ca.pem").string();
  }
  notifiers::testing::TestReceiver receiver(identity);
  receiver.set_recording(notifiers::testing::TestReceiver::Recording::CountsOnly);
  destination.url = receiver.url("/hook");

  boost::asio::io_context io;
  std::unique_ptr<notifiers::DeliveryWorker> worker;
  notifiers::WorkerOptions options;
  options.jitter_seed = 1;
  options.on_idle = [&](std::string_view) {
    worker->stop();
    io.stop();
  };
  auto created = notifiers::DeliveryWorker::create(io, *store, {destination},
                                                   notifiers::system_clock(), nullptr, options);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().message.c_str());
    return 1;
  }
  worker = std::move(*created);
  const auto drain_start = Clock::now();
  worker->start();
  io.run();
  const double drain_s = seconds_since(drain_start);

  auto counts = outbox.counts();
  const auto stats = worker->stats();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("transport %s, %d notifications (2 alerts each)\n", https ? "https" : "http", count);
  std::printf("enqueue (one transaction): %.2f s, %.0f rows/s\n", enqueue_s, count / enqueue_s);
  std::printf("drain: %.2f s, %.0f notifications/s, delivered %llu, retried %llu, dead %llu\n",
              drain_s, count / drain_s, static_cast<unsigned long long>(stats.delivered),
              static_cast<unsigned long long>(stats.retried),
              static_cast<unsigned long long>(stats.dead));
  std::printf("receiver answered %zu with 2xx; outbox delivered %lld pending %lld\n",
              receiver.answered_2xx(),
              counts && !counts->empty() ? static_cast<long long>(counts->at(0).delivered) : -1LL,
              counts && !counts->empty() ? static_cast<long long>(counts->at(0).pending) : -1LL);
  std::printf("RSS before drain %ld KiB, after %ld KiB, peak (VmHWM) %ld KiB, maxrss %ld KiB\n",
              rss_before, rss_kib("VmRSS:"), rss_kib("VmHWM:"), usage.ru_maxrss);
  std::printf("database %.1f MiB\n",
              static_cast<double>(std::filesystem::file_size(dir / "kw.db")) / (1024.0 * 1024.0));
  return stats.delivered == static_cast<std::uint64_t>(count) ? 0 : 1;
}
