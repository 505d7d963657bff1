// Engine::flush_notifications(): what to notify is read from the alert rows at flush time (their
// state against what was last notified, detectors::notice_due), so nothing a replay does can
// invent a notification, and a reminder is due from the stored time of the last one.
#include "core/digest.hpp"
#include "daemon/engine.hpp"
#include "notifiers/notification.hpp"
#include "storage/outbox.hpp"

namespace kernelwatch::daemon {

core::Result<std::size_t> Engine::flush_notifications(core::Timestamp now) {
  // The cycle's held steps are decided (the controls) before anything is sent.
  KW_TRY(close_cycle(now));
  storage::AlertStore alerts(*store_);
  const auto& policy = options_.policy;
  const core::Timestamp reminder_cutoff =
      policy.repeat_interval.count() > 0 ? now - policy.repeat_interval : core::Timestamp::min();
  const auto candidates = KW_TRY(alerts.notification_candidates(reminder_cutoff));

  notifiers::Notification notification;
  // The idempotency key covers each notice and the notification before it: a flush retried
  // after a failed transaction sends the same key, a reminder a new one.
  nlohmann::json identity = nlohmann::json::array();
  for (const auto& row : candidates) {
    const auto notice = detectors::notice_due(row.alert.kind, row.alert.state, row.notified,
                                              row.notified_at, now, policy);
    if (!notice) continue;
    identity.push_back({row.alert.id.long_form(), core::to_string(*notice),
                        row.notified_at ? row.notified_at->time_since_epoch().count() : 0});
    notification.alerts.push_back({row.alert, *notice, nullptr});
  }
  if (notification.alerts.empty()) return std::size_t{0};
  notification.idempotency_key = options_.host + "/" + core::digest_of(identity).substr(7, 32);
  notification.created_at = now;
  notification.host = options_.host;

  auto tx = KW_TRY(store_->begin());
  std::size_t written = 0;
  const std::string payload = notifiers::serialize(notification);
  storage::Outbox outbox(*store_);
  for (const auto& destination : options_.destinations) {
    const auto outcome = KW_TRY(outbox.enqueue(
        tx, {destination, notification.idempotency_key, payload, now, std::nullopt}));
    written += outcome == storage::EnqueueOutcome::Inserted ? 1 : 0;
  }
  // With no destination configured the notices are still settled: nothing is owed later.
  for (const auto& item : notification.alerts) {
    KW_TRY(alerts.mark_notified(tx, item.alert.id, item.notice, now));
  }
  KW_TRY(tx.commit());
  return written;
}

core::Result<std::optional<core::Timestamp>> Engine::next_reminder() const {
  const auto oldest = KW_TRY(storage::AlertStore(*store_).oldest_firing_notification());
  return detectors::reminder_due(core::AlertState::Firing, oldest, options_.policy);
}

}  // namespace kernelwatch::daemon
