#include "notifiers/worker.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "notifiers/http_client.hpp"
#include "notifiers/notification.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"

namespace kernelwatch::notifiers {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);

std::string seconds_text(milliseconds value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", static_cast<double>(value.count()) / 1000.0);
  return buffer;
}

}  // namespace

Clock system_clock() {
  return [] {
    return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  };
}

// Shared with the coroutines, so destroying the DeliveryWorker while they unwind is safe.
struct DeliveryWorker::State {
  struct Lane {
    Destination destination;
    std::string origin;  // redacted URL for logs
    std::unique_ptr<HttpClient> client;
    asio::steady_timer idle_timer;  // cut short by wake()
    asio::steady_timer pace_timer;  // never cut short except by stop()
    bool woken = false;
    std::chrono::steady_clock::time_point last_send{};
    FormatOptions format;  // the worker's, with this destination's firing_ttl
    std::chrono::steady_clock::time_point next_resend{};  // Alertmanager only
    bool resend_failing = false;                          // log a failing streak once
    std::int64_t read_failures = 0;                       // consecutive failed outbox reads
    // The other peers of this destination's Alertmanager cluster; empty when it has none.
    std::vector<std::string> siblings;
  };

  State(asio::io_context& io_context, storage::Connection& s, Clock c, Logger l, WorkerOptions o)
      : io(io_context),
        store(&s),
        outbox(s),
        clock(std::move(c)),
        logger(std::move(l)),
        options(std::move(o)),
        rng(options.jitter_seed != 0 ? options.jitter_seed : std::random_device{}()) {}

  asio::io_context& io;
  storage::Connection* store;
  storage::Outbox outbox;
  Clock clock;
  Logger logger;
  WorkerOptions options;
  std::mt19937_64 rng;
  std::vector<std::unique_ptr<Lane>> lanes;
  std::atomic<bool> stopping{false};
  bool started = false;
  // io thread only: destination coroutines still running, the drain deadline after stop(), and
  // what to call once they have all ended.
  int running_lanes = 0;
  std::optional<asio::steady_timer> drain_timer;
  std::function<void()> on_drained;

  void lane_ended() {
    if (--running_lanes == 0 && stopping) drained();
  }
  void drained() {
    if (drain_timer) drain_timer->cancel();
    if (on_drained) std::exchange(on_drained, {})();
  }
  std::atomic<std::uint64_t> delivered{0}, retried{0}, dead{0}, resent{0}, resend_failed{0},
      covered{0};

  void log(LogLevel level, const std::string& message) const {
    if (logger) logger(level, message);
  }

  // Sleeps up to `delay`; returns early on wake() (when `wakeable`) and on stop().
  asio::awaitable<void> sleep(Lane& lane, milliseconds delay, bool wakeable) {
    if (delay <= milliseconds(0)) co_return;
    if (wakeable && lane.woken) {
      lane.woken = false;
      co_return;
    }
    auto& timer = wakeable ? lane.idle_timer : lane.pace_timer;
    timer.expires_after(delay);
    (void)co_await timer.async_wait(kUseTuple);
    if (wakeable) lane.woken = false;
  }

  milliseconds until(core::Timestamp when) const {
    const auto now = clock();
    if (when <= now) return milliseconds(0);
    return std::chrono::ceil<milliseconds>(when - now);
  }

  void report(const Lane& lane, const storage::OutboxRow& row, const Decision& decision) {
    const std::string what = "destination `" + lane.destination.name + "` (" + lane.origin +
                             "): notification " + std::to_string(row.id) + " [" +
                             row.idempotency_key + "] attempt " + std::to_string(row.attempts + 1);
    switch (decision.kind) {
      case Decision::Kind::Delivered:
        ++delivered;
        log(LogLevel::Debug, what + " delivered");
        break;
      case Decision::Kind::RetryAt:
        ++retried;
        log(LogLevel::Warning, what + " failed: " + decision.message + "; retrying in " +
                                   seconds_text(until(decision.at)));
        break;
      case Decision::Kind::Dead:
        ++dead;
        log(LogLevel::Error, what + " dead-lettered: " + decision.message);
        break;
    }
    if (options.on_event) {
      options.on_event(DeliveryEvent{lane.destination.name, row.id, row.idempotency_key,
                                     decision.kind, decision.message, row.attempts + 1,
                                     decision.at});
    }
  }

  // Delivers one row and decides what to record.
  asio::awaitable<Decision> attempt(Lane& lane, const storage::OutboxRow& row) {
    auto notification = parse_notification(row.payload);
    if (!notification) {
      co_return Decision{Decision::Kind::Dead, clock(),
                         "stored payload is not a notification: " + notification.error().message};
    }
    notification->idempotency_key = row.idempotency_key;  // header and payload always agree
    if (const auto gap = effective_min_interval(lane.destination); gap > milliseconds(0)) {
      const auto ready = lane.last_send + gap;
      const auto now = std::chrono::steady_clock::now();
      if (ready > now) {
        co_await sleep(lane, std::chrono::ceil<milliseconds>(ready - now), /*wakeable=*/false);
      }
    }
    if (stopping) {
      co_return Decision{Decision::Kind::RetryAt, row.next_attempt_at, "stopped", false};
    }
    auto request = build_request(lane.destination, *notification, lane.format, clock());
    auto response = co_await lane.client->post(std::move(request));
    // Cut short by stop() after the drain: whether it arrived is unknown, so it stays pending.
    if (!response && stopping) {
      co_return Decision{Decision::Kind::RetryAt, row.next_attempt_at, "stopped", false};
    }
    // Paced from the end of a request, so the receiver sees at least the gap between arrivals.
    lane.last_send = std::chrono::steady_clock::now();
    const auto now = clock();
    Classification classification;
    if (response) {
      classification = classify(integration_of(lane.destination), *response, now);
    } else {
      classification.verdict = Verdict::Transient;
      classification.reason = response.error().message;
    }
    co_return decide(lane.destination.backoff, classification, row.attempts + 1, row.created_at,
                     now, rng);
  }

  // Alertmanager lets an alert expire at its endsAt unless the client sends it again: every
  // open alert already announced firing is re-sent each resend_interval. Called only when the
  // destination has nothing pending, on this lane's coroutine, which sends its outbox rows one
  // at a time: the snapshot (one SELECT) and the send take one place in the queue. An alert's
  // state and its resolve row commit in one transaction, so an alert resolved after the
  // snapshot has its resolve queued behind this request, and one resolved before it is not in
  // it. Nothing is written to the outbox: a lost re-send is harmless, the next comes an
  // interval later.
  asio::awaitable<void> resend(Lane& lane) {
    lane.next_resend = std::chrono::steady_clock::now() + lane.destination.resend_interval;
    auto rows = storage::AlertStore(*store).announced_open();
    if (!rows) {
      log(LogLevel::Error,
          "destination `" + lane.destination.name +
              "`: reading the open alerts to re-send failed: " + rows.error().message);
      co_return;
    }
    Notification notification;
    notification.created_at = clock();
    notification.host = options.host;
    for (auto& row : *rows) {
      // An environment incident is announced once, not kept active.
      if (row.alert.kind == core::AlertKind::Environment) continue;
      notification.alerts.push_back({std::move(row.alert), core::Notice::Firing, nullptr});
    }
    if (notification.alerts.empty()) co_return;
    notification.idempotency_key =
        options.host + "/resend/" +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                           notification.created_at.time_since_epoch())
                           .count());
    auto request = build_request(lane.destination, notification, lane.format, clock());
    auto response = co_await lane.client->post(std::move(request));
    lane.last_send = std::chrono::steady_clock::now();
    if (stopping) co_return;  // cut short by stop(): not a failure of the destination
    std::string failure;
    if (!response) {
      failure = response.error().message;
    } else if (const auto c = classify(integration_of(lane.destination), *response, clock());
               c.verdict != Verdict::Delivered) {
      failure = c.reason;
    }
    const std::string what = "destination `" + lane.destination.name + "` (" + lane.origin +
                             "): re-send of " + std::to_string(notification.alerts.size()) +
                             " active alert(s)";
    if (failure.empty()) {
      ++resent;
      if (lane.resend_failing) log(LogLevel::Info, what + " delivered again");
      lane.resend_failing = false;
      co_return;
    }
    ++resend_failed;
    if (!lane.resend_failing) {
      log(LogLevel::Warning, what + " failed: " + failure + "; trying again every " +
                                 seconds_text(lane.destination.resend_interval));
    }
    lane.resend_failing = true;
  }

  void storage_state(const Lane& lane, const core::Error* error) const {
    if (options.on_storage) options.on_storage(lane.destination.name, error);
  }

  // A cluster peer's row that need not be sent to this peer: another peer of the cluster took
  // the notification, and either it is older than the firing TTL (4 re-send intervals: by then
  // an alert it fired or resolved has expired in this peer by itself, and the open alerts reach
  // this peer by the re-send once its queue is empty) or it is being given up at its maximum
  // age. Returns the note recorded with it; nullopt: send it (or dead-letter it) as usual.
  std::optional<std::string> covered_by_peer(const Lane& lane, const storage::OutboxRow& row,
                                             bool giving_up) {
    if (lane.siblings.empty()) return std::nullopt;
    if (!giving_up && clock() - row.created_at < lane.format.firing_ttl) return std::nullopt;
    auto by = outbox.delivered_to_any(row.idempotency_key, lane.siblings);
    if (!by) {
      log(LogLevel::Warning,
          "destination `" + lane.destination.name +
              "`: reading the other peers' outcomes failed: " + by.error().message);
      return std::nullopt;
    }
    if (!*by) return std::nullopt;
    return "not sent to this peer: peer `" + **by + "` of cluster `" + lane.destination.cluster +
           "` took it; this peer gets the open alerts by the re-send";
  }

  void report_covered(const Lane& lane, const storage::OutboxRow& row, const std::string& note) {
    ++covered;
    log(LogLevel::Debug, "destination `" + lane.destination.name + "`: notification " +
                             std::to_string(row.id) + " [" + row.idempotency_key + "] " + note);
    if (options.on_event) {
      options.on_event(DeliveryEvent{lane.destination.name, row.id, row.idempotency_key,
                                     Decision::Kind::Delivered, note, row.attempts, clock()});
    }
  }

  // Records the outcomes of a batch. A failed write (a full disk) is retried after the
  // destination's backoff, exactly as a failed request would be, and nothing else is sent
  // meanwhile: the outcomes are kept, so a delivered notification is not sent again only because
  // its mark could not be written. Gives up only on stop(); the rows then stay pending and are
  // sent again (same idempotency key) after the restart.
  asio::awaitable<void> record_outcomes(Lane& lane,
                                        const std::vector<storage::OutboxUpdate>& updates) {
    const std::string& name = lane.destination.name;
    for (std::int64_t failures = 1;; ++failures) {
      auto ok = outbox.record(updates);
      if (ok) {
        if (failures > 1) {
          log(LogLevel::Info, "destination `" + name + "`: recorded " +
                                  std::to_string(updates.size()) + " outcome(s) after " +
                                  std::to_string(failures - 1) + " failed write(s)");
          storage_state(lane, nullptr);
        }
        co_return;
      }
      const auto delay = backoff_delay(lane.destination.backoff, failures, rng);
      log(LogLevel::Error, "destination `" + name + "`: recording " +
                               std::to_string(updates.size()) + " outcome(s) failed (write " +
                               std::to_string(failures) + "; retrying in " + seconds_text(delay) +
                               ", sending nothing meanwhile): " + ok.error().message);
      storage_state(lane, &ok.error());
      if (stopping) co_return;
      co_await sleep(lane, delay, /*wakeable=*/false);
      if (stopping) {
        log(LogLevel::Warning, "destination `" + name + "`: stopped with " +
                                   std::to_string(updates.size()) +
                                   " outcome(s) unrecorded; they are sent again after the restart");
        co_return;
      }
    }
  }

  asio::awaitable<void> run_lane(Lane& lane) {
    const std::string& name = lane.destination.name;
    while (!stopping) {
      auto rows = outbox.claim_due(name, clock(), options.batch_size);
      if (!rows) {
        ++lane.read_failures;
        const auto delay = backoff_delay(lane.destination.backoff, lane.read_failures, rng);
        log(LogLevel::Error, "destination `" + name + "`: reading the outbox failed (retrying in " +
                                 seconds_text(delay) + "): " + rows.error().message);
        co_await sleep(lane, delay, /*wakeable=*/false);
        continue;
      }
      lane.read_failures = 0;
      if (rows->empty()) {
        auto next = outbox.next_due(name);
        const bool resends = integration_of(lane.destination).traits().resends;
        if (resends && next && !*next && !stopping &&
            std::chrono::steady_clock::now() >= lane.next_resend) {
          co_await resend(lane);
          continue;  // look at the outbox again: a resolve may have been queued meanwhile
        }
        milliseconds delay = options.poll_interval;
        if (next && *next) delay = std::min(delay, until(**next));
        if (resends) {
          const auto left = lane.next_resend - std::chrono::steady_clock::now();
          delay = std::min(delay, std::max(milliseconds(1), std::chrono::ceil<milliseconds>(left)));
        }
        if (next && !*next && options.on_idle) options.on_idle(name);
        co_await sleep(lane, delay, /*wakeable=*/true);
        continue;
      }
      std::vector<storage::OutboxUpdate> updates;
      std::optional<core::Timestamp> paused_until;
      std::size_t covered_rows = 0;
      for (const auto& row : *rows) {
        if (auto note = covered_by_peer(lane, row, /*giving_up=*/false)) {
          updates.push_back({row.id, storage::OutboxUpdate::Kind::Delivered, clock(), *note});
          report_covered(lane, row, *note);
          ++covered_rows;
          continue;
        }
        Decision decision = co_await attempt(lane, row);
        if (!decision.sent) break;  // stopped first: the row stays due as it was
        if (decision.kind == Decision::Kind::Dead && decision.gave_up) {
          if (auto note = covered_by_peer(lane, row, /*giving_up=*/true)) {
            updates.push_back({row.id, storage::OutboxUpdate::Kind::Delivered, decision.at,
                               *note + " (" + decision.message + ")"});
            report_covered(lane, row, updates.back().message);
            ++covered_rows;
            continue;
          }
        }
        storage::OutboxUpdate update{row.id, storage::OutboxUpdate::Kind::Delivered, decision.at,
                                     decision.message};
        if (decision.kind == Decision::Kind::RetryAt) {
          update.kind = storage::OutboxUpdate::Kind::RetryAt;
        } else if (decision.kind == Decision::Kind::Dead) {
          update.kind = storage::OutboxUpdate::Kind::Dead;
        }
        updates.push_back(std::move(update));
        report(lane, row, decision);
        // The destination is failing: the head row probes it after its backoff, the rest wait
        // (one attempt per backoff period, not one per queued row).
        if (decision.kind == Decision::Kind::RetryAt) {
          paused_until = decision.at;
          break;
        }
        if (stopping) break;  // a request that finished during the drain: record it, send no more
      }
      if (covered_rows > 0) {
        log(LogLevel::Info,
            "destination `" + name + "` (" + lane.origin + "): " + std::to_string(covered_rows) +
                " notification(s) not sent to this peer: another peer of cluster `" +
                lane.destination.cluster +
                "` took them; this peer gets the open alerts by the re-send");
      }
      if (!updates.empty()) co_await record_outcomes(lane, updates);
      if (paused_until && !stopping) {
        co_await sleep(lane, until(*paused_until), /*wakeable=*/false);
      }
    }
  }
};

DeliveryWorker::DeliveryWorker(std::shared_ptr<State> state) : state_(std::move(state)) {}

DeliveryWorker::~DeliveryWorker() {
  stop();
}

core::Result<std::unique_ptr<DeliveryWorker>> DeliveryWorker::create(
    asio::io_context& io, storage::Connection& store, std::vector<Destination> destinations,
    Clock clock, Logger logger, WorkerOptions options) {
  if (!clock) clock = system_clock();
  if (options.batch_size == 0) options.batch_size = 1;
  auto state =
      std::make_shared<State>(io, store, std::move(clock), std::move(logger), std::move(options));
  std::set<std::string> names;
  for (auto& destination : destinations) {
    if (!names.insert(destination.name).second) {
      return core::fail(core::ErrorCode::InvalidArgument,
                        "destination name `" + destination.name + "` is used twice");
    }
    auto client = KW_TRY(HttpClient::create(io.get_executor(), destination));
    std::string origin = redact(destination.url);
    FormatOptions format = state->options.format;
    if (integration_of(destination).traits().resends) {
      if (destination.resend_interval < std::chrono::seconds(1)) {
        return core::fail(
            core::ErrorCode::InvalidArgument,
            "destination `" + destination.name + "`: resend_interval must be at least 1s");
      }
      format.firing_ttl = std::chrono::ceil<std::chrono::seconds>(destination.resend_interval *
                                                                  kAlertmanagerTtlIntervals);
    }
    state->lanes.push_back(std::unique_ptr<State::Lane>(new State::Lane{std::move(destination),
                                                                        std::move(origin),
                                                                        std::move(client),
                                                                        asio::steady_timer(io),
                                                                        asio::steady_timer(io),
                                                                        false,
                                                                        {},
                                                                        std::move(format),
                                                                        {},
                                                                        false,
                                                                        0,
                                                                        {}}));
  }
  // Each peer of a cluster knows the others' names (their outcomes say whether it must send).
  for (auto& lane : state->lanes) {
    if (lane->destination.cluster.empty()) continue;
    for (const auto& other : state->lanes) {
      if (other != lane && other->destination.cluster == lane->destination.cluster) {
        lane->siblings.push_back(other->destination.name);
      }
    }
  }
  return std::unique_ptr<DeliveryWorker>(new DeliveryWorker(std::move(state)));
}

void DeliveryWorker::start() {
  asio::post(state_->io, [state = state_] {
    if (state->started || state->stopping) return;
    state->started = true;
    for (auto& lane : state->lanes) {
      ++state->running_lanes;
      asio::co_spawn(
          state->io,
          [state, lane = lane.get()]() -> asio::awaitable<void> {
            co_await state->run_lane(*lane);
            state->lane_ended();
          },
          asio::detached);
    }
  });
}

void DeliveryWorker::stop(std::chrono::milliseconds drain, std::function<void()> on_drained) {
  if (state_->stopping.exchange(true)) return;
  asio::post(state_->io, [state = state_, drain, on_drained = std::move(on_drained)]() mutable {
    state->on_drained = std::move(on_drained);
    const auto cut = [state] {
      for (auto& lane : state->lanes) lane->client->close();
    };
    for (auto& lane : state->lanes) {
      lane->idle_timer.cancel();
      lane->pace_timer.cancel();
    }
    if (state->running_lanes == 0) {
      cut();
      state->drained();
      return;
    }
    if (drain <= std::chrono::milliseconds(0)) {
      cut();
      return;
    }
    state->drain_timer.emplace(state->io, drain);
    state->drain_timer->async_wait([state, cut](const boost::system::error_code& ec) {
      if (!ec) cut();
    });
  });
}

void DeliveryWorker::wake() {
  asio::post(state_->io, [state = state_] {
    for (auto& lane : state->lanes) {
      lane->woken = true;
      lane->idle_timer.cancel();
    }
  });
}

DeliveryWorker::Stats DeliveryWorker::stats() const {
  return Stats{state_->delivered.load(), state_->retried.load(),       state_->dead.load(),
               state_->resent.load(),    state_->resend_failed.load(), state_->covered.load()};
}

}  // namespace kernelwatch::notifiers
