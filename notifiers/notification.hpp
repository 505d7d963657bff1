// What one notification says, independent of where it goes: the alerts a flush found due (fired,
// reminded or resolved), grouped, with an idempotency key. Each alert is the one core::Alert, in
// its one JSON form, with the notice and the run it is about. Stored as JSON in the outbox row.
// Plain C++ with nlohmann/json; no Asio, no storage.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/alert.hpp"
#include "core/error.hpp"
#include "core/time.hpp"

namespace kernelwatch::notifiers {

using core::AlertKind;
using core::Direction;
using core::Notice;

// One alert as a notification announces it.
struct NotifiedAlert {
  core::Alert alert;
  Notice notice = Notice::Firing;
  nlohmann::json run_record;  // the kernelindex record of run(), or null when not attached

  // The run this notice is about: the one that resolved it for a resolve, else the one that
  // fired it.
  [[nodiscard]] const core::AlertRun& run() const {
    return notice == Notice::Resolved && alert.closed_by ? *alert.closed_by : alert.fired;
  }
};

struct Notification {
  std::string idempotency_key;  // stable for the same notices: receivers drop repeats
  core::Timestamp created_at{};
  std::string host;  // the kernelwatch instance (Alertmanager `instance` label)
  std::vector<NotifiedAlert> alerts;
};

// {"idempotencyKey","createdAt","host","alerts":[{"notice":"firing"|"resolved",
//  "alert":<core::to_json(alert)>,"run":<record, when attached>}]}
[[nodiscard]] nlohmann::json to_json(const Notification& notification);
// Its inverse. Also reads the outbox rows kernelwatch 0.1 queued (flat alert items), so a
// notification queued before an upgrade is still delivered.
[[nodiscard]] core::Result<Notification> notification_from_json(const nlohmann::json& doc);
// The outbox payload form and back.
[[nodiscard]] std::string serialize(const Notification& notification);
[[nodiscard]] core::Result<Notification> parse_notification(std::string_view text);

}  // namespace kernelwatch::notifiers
