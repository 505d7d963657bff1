// The daemon's notifications (detail/delivery.hpp): the delivery worker, the cycle's close,
// reminders and the outbox prune.
#include "daemon/detail/delivery.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/clock.hpp"
#include "storage/outbox.hpp"

namespace kernelwatch::daemon::detail {

using namespace std::chrono_literals;

core::Status Delivery::start() {
  const config::Config& config = parts_.config;
  Log& log = parts_.log;
  std::vector<std::string> names;
  for (const auto& n : config.notifiers) names.push_back(n.destination.name);
  if (auto abandoned = storage::Outbox(parts_.store).abandon_destinations_except(names, wall_now());
      !abandoned) {
    log.error("outbox: " + abandoned.error().message);
  } else if (*abandoned > 0) {
    log.warning(std::to_string(*abandoned) +
                " queued notification(s) of removed destinations became dead letters");
  }
  if (config.notifiers.empty()) return {};
  std::vector<notifiers::Destination> destinations;
  for (const auto& n : config.notifiers) destinations.push_back(n.destination);
  notifiers::WorkerOptions options;
  options.format.public_url = config.http.public_url;
  options.host = parts_.engine.options().host;
  Published& published = parts_.published;
  // Deliveries change the outbox counts /metrics and /api/v1/status show.
  options.on_event = [&published](const notifiers::DeliveryEvent&) { published.invalidate(); };
  options.on_storage = [&published](std::string_view destination, const core::Error* error) {
    const std::string source = "outbox of `" + std::string(destination) + "`";
    if (error != nullptr) {
      published.storage_failed(source, error->message);
    } else {
      published.storage_recovered(source);
    }
  };
  worker_ = KW_TRY(notifiers::DeliveryWorker::create(
      parts_.io, parts_.store, std::move(destinations), notifiers::system_clock(),
      [&log](notifiers::LogLevel level, std::string_view message) {
        log.write(level == notifiers::LogLevel::Error     ? LogLevel::Error
                  : level == notifiers::LogLevel::Warning ? LogLevel::Warning
                                                          : LogLevel::Info,
                  message);
      },
      options));
  worker_->start();
  return {};
}

// The old worker starts nothing new; a request it has in flight finishes (its outcome recorded)
// or is cut after kDeliveryDrain, and only then does the new worker read the outbox, so no row
// goes out from both.
void Delivery::replace() {
  if (worker_) {
    ++retiring_;
    worker_->stop(kDeliveryDrain, [this] {
      --retiring_;
      if (!stopping_) replace();
    });
    worker_.reset();
    return;
  }
  if (retiring_ > 0 || stopping_) return;  // started once the retiring one has ended
  if (auto ok = start(); !ok) parts_.log.error("SIGHUP: notifiers: " + ok.error().message);
}

void Delivery::stop() {
  stopping_ = true;
  reminder_timer_.cancel();
  if (worker_) {
    drained_ = false;
    worker_->stop(kDeliveryDrain, [this] { drained_ = true; });
  }
}

void Delivery::remind() {
  // Delivered notifications are kept a week for the record, then pruned (hourly).
  if (std::chrono::steady_clock::now() >= next_prune_) {
    next_prune_ = std::chrono::steady_clock::now() + 1h;
    if (auto pruned = storage::Outbox(parts_.store).prune_delivered(wall_now() - 24h * 7);
        !pruned) {
      parts_.log.error("pruning delivered notifications: " + pruned.error().message);
    }
  }
  // During a cycle its end sends what is due, with the cycle's alerts.
  if (!parts_.cycle.running) (void)flush();
  arm_reminders();
}

// The next reminder falls due repeat_interval after the oldest firing alert's last
// notification; the timer wakes then (at least once a minute, for the prune and for a wall
// clock that jumped), and every flush re-arms it.
void Delivery::arm_reminders() {
  if (stopping_) return;
  std::chrono::milliseconds delay = 1min;
  if (auto next = parts_.engine.next_reminder(); !next) {
    parts_.log.error("alert reminders: " + next.error().message);
  } else if (*next) {
    const auto until = std::chrono::ceil<std::chrono::milliseconds>(**next - wall_now());
    delay = std::clamp<std::chrono::milliseconds>(until, 1s, delay);
  }
  reminder_timer_.expires_after(delay);
  reminder_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) remind();
  });
}

std::optional<CycleClose> Delivery::flush() {
  Engine& engine = parts_.engine;
  Log& log = parts_.log;
  // The held steps of the cycle (or posted batch) that ended are decided first.
  std::optional<CycleClose> decided;
  if (auto closed = engine.close_cycle(wall_now()); !closed) {
    log.error("deciding the cycle's alerts failed (they are decided again at the next start): " +
              closed.error().message);
  } else {
    decided = *closed;
    for (const auto& alert : closed->fired) {
      log.info("alert " + std::string(core::to_string(alert.kind)) + " " +
               std::string(core::to_string(alert.direction)) + " on " + alert.key.display() + ": " +
               alert.explanation);
    }
    for (const auto& incident : closed->incidents) {
      log.info(std::string(incident.placement.empty() ? "environment" : "host") + " incident " +
               incident.id.long_form() + ": " + incident.explanation);
    }
  }
  for (const auto& note : engine.take_fleet_notes()) log.warning("storage.fleet_controls: " + note);
  auto written = engine.flush_notifications(wall_now());
  parts_.published.invalidate();
  if (!written) {
    log.error("queueing notifications failed (they stay owed and go out with the next cycle): " +
              written.error().message);
    return decided;
  }
  if (*written > 0 && worker_) worker_->wake();
  if (*written > 0) arm_reminders();  // the alerts just notified set the next reminder
  return decided;
}

}  // namespace kernelwatch::daemon::detail
