#include "web/model.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

#include "core/digest.hpp"

namespace kernelwatch::web {
namespace {

using core::ErrorCode;

bool is_hex64(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool same_key(const core::KeyLabels& a, const core::KeyLabels& b) {
  return a.identity() == b.identity();
}

// An alert as stored (a key's, or an incident's member) carries no key digest in its document:
// its id begins with its key's digest.
bool of_key(const core::Alert& alert, const core::KeyLabels& key) {
  if (!alert.key.digest.empty() || key.digest.empty()) return same_key(alert.key, key);
  return alert.id.long_form().starts_with(key.digest + "@");
}

}  // namespace

std::string alert_page_id(const core::Alert& alert) {
  return alert.id.long_form();
}

std::string key_ref(const core::KeyLabels& key) {
  constexpr std::string_view kPrefix = "sha256:";
  return key.digest.rfind(kPrefix, 0) == 0 ? key.digest.substr(kPrefix.size()) : key.digest;
}

std::vector<core::Alert> alerts_of_key(const std::vector<core::Alert>& alerts,
                                       const core::KeyLabels& key) {
  std::vector<core::Alert> out;
  for (const auto& alert : alerts) {
    if (!core::is_incident(alert)) {
      if (of_key(alert, key)) out.push_back(alert);
      continue;
    }
    for (const auto& member : alert.members) {
      if (of_key(member, key)) out.push_back(member);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const core::Alert& a, const core::Alert& b) {
    return a.fired.observed_at < b.fired.observed_at;
  });
  return out;
}

core::Result<KeyReplay> replay_key_id(storage::Connection& store, std::int64_t key_id,
                                      const ReplayOptions& options,
                                      const std::vector<core::Alert>& alerts) {
  ReplayOptions one = options;
  one.only_key = key_id;
  one.trace = true;
  auto replayed = KW_TRY(replay::replay(store, one));
  const auto labels = replayed.labels.find(key_id);
  if (labels == replayed.labels.end()) {
    return core::fail(ErrorCode::NotFound, "no key " + std::to_string(key_id));
  }
  KeyReplay out;
  out.key_id = key_id;
  out.key = labels->second;
  out.alerts = alerts_of_key(alerts, out.key);
  out.runs.reserve(replayed.trace.size());
  for (auto& traced : replayed.trace) {
    ReplayedRun run;
    run.run = std::move(traced.run);
    run.verdict = std::move(traced.verdict);
    run.role = traced.role;
    run.changes = std::move(traced.changes);
    run.rebaseline = traced.rebaseline;
    out.runs.push_back(std::move(run));
  }
  // A confirmed step or drift starts a new segment at its onset.
  std::map<std::string, std::size_t> by_external_id;
  for (std::size_t i = 0; i < out.runs.size(); ++i) by_external_id[out.runs[i].run.external_id] = i;
  for (const auto& alert : out.alerts) {
    if (alert.kind != core::AlertKind::Step && alert.kind != core::AlertKind::Drift &&
        !core::is_incident_member(alert)) {
      continue;
    }
    if (const auto it = by_external_id.find(alert.onset.external_id); it != by_external_id.end())
      out.runs[it->second].segment_start = true;
  }
  return out;
}

core::Result<std::optional<KeyReplay>> replay_key(storage::Connection& store, std::string_view ref,
                                                  const ReplayOptions& options,
                                                  const std::vector<core::Alert>& alerts) {
  if (!is_hex64(ref)) return std::optional<KeyReplay>();
  const auto id = KW_TRY(storage::RunStore(store).find_key("sha256:" + std::string(ref)));
  if (!id) return std::optional<KeyReplay>();
  return std::optional<KeyReplay>(KW_TRY(replay_key_id(store, *id, options, alerts)));
}

KeyRow key_row(std::int64_t key_id, const core::KeyLabels& key,
               const std::optional<detectors::Watch::LastRun>& last_run,
               const detectors::Standing& standing) {
  KeyRow row;
  row.key_id = key_id;
  row.key = key;
  row.last_run = last_run;
  row.standing = standing;
  if (const auto& open = standing.alert) {
    // A member is acknowledged through its incident: its page is the incident's.
    row.alert_id = alert_page_id(*open);
    if (core::is_incident_member(*open)) row.alert_id = open->incident.long_form();
    row.alert_direction = open->direction;
  }
  return row;
}

core::Status add_sparklines(const storage::RunStore& runs, std::vector<KeyRow>& rows,
                            std::size_t points) {
  const auto recent = KW_TRY(runs.recent_medians(points));
  for (auto& row : rows) {
    const auto it = recent.find(row.key_id);
    if (it == recent.end()) continue;
    row.run_count = it->second.runs;
    row.spark = it->second.medians_ns;
  }
  return {};
}

core::Result<SiteModel> site_from_replay(storage::Connection& store, const ReplayOptions& options) {
  auto replayed = KW_TRY(replay::replay(store, options));
  SiteModel site;
  for (const auto* view : replayed.watch.keys()) {
    const auto& key = view->monitor->key();
    const auto standing = detectors::standing_of(
        view->last_run ? std::optional<core::RunStatus>(view->last_run->status) : std::nullopt,
        view->last_verdict, view->monitor->open_alert(), view->monitor->open_failed_alert());
    site.rows.push_back(
        key_row(replayed.key_ids.at(key.identity()), key, view->last_run, standing));
  }
  KW_TRY(add_sparklines(storage::RunStore(store), site.rows));
  site.alerts = std::move(replayed.alerts);
  site.placed = placed_rows(replayed.placed, site.alerts);
  return site;
}

std::vector<PlacedRow> placed_rows(const replay::PlacedCounts& counts,
                                   const std::vector<core::Alert>& alerts) {
  std::vector<PlacedRow> out;
  for (const auto& [unit, count] : counts.all()) {
    PlacedRow row;
    row.placement = count.placement;
    row.runs = count.runs;
    row.last_run = count.last_observed;
    out.push_back(std::move(row));
  }
  for (const auto& alert : alerts) {
    const auto& p = alert.placement;
    // A GPU or host out of line with its siblings, or a host with its fleet (an incident about
    // the host, storage.fleet_controls).
    if (p.empty() || !core::is_open(alert.state) || core::is_incident_member(alert)) continue;
    for (auto& row : out) {
      if (row.placement.host != p.host) continue;
      if (p.unit().empty()) {  // the whole host
        row.host_alert_id = alert_page_id(alert);
        row.host_alert_state = alert.state;
      } else if (row.placement.unit() == p.unit()) {
        row.alert_id = alert_page_id(alert);
        row.alert_state = alert.state;
        row.alert_text = alert.explanation;
      }
    }
  }
  // By host, then GPU index as a number ("10" after "9"), then UUID.
  const auto order = [](const PlacedRow& r) {
    const auto& gpu = r.placement.gpu;
    const bool digits =
        !gpu.empty() && gpu.size() < 10 &&
        std::all_of(gpu.begin(), gpu.end(), [](char c) { return c >= '0' && c <= '9'; });
    return std::make_tuple(r.placement.host, digits ? std::stol(gpu) : -1, gpu,
                           r.placement.gpu_uuid);
  };
  std::sort(out.begin(), out.end(),
            [&](const PlacedRow& a, const PlacedRow& b) { return order(a) < order(b); });
  return out;
}

core::Result<std::vector<core::Alert>> stored_alerts(storage::Connection& store) {
  std::vector<core::Alert> out;
  for (auto& row : KW_TRY(storage::AlertStore(store).list(std::nullopt, 0))) {
    out.push_back(std::move(row.alert));
  }
  return out;
}

core::Result<std::optional<AlertView>> find_alert(storage::Connection& store, std::string_view id,
                                                  const ReplayOptions& options,
                                                  const std::vector<core::Alert>& alerts) {
  // The API's id (the short one) or the long one the pages link with.
  const core::AlertRef ref(id);
  const auto matches = [&](const core::Alert& a) { return ref.names(a.id); };
  const auto it = std::find_if(alerts.begin(), alerts.end(), matches);
  if (it == alerts.end()) return std::optional<AlertView>();
  AlertView view;
  view.alert = *it;
  view.row = KW_TRY(storage::AlertStore(store).find(it->id));
  if (view.row) view.notifications = KW_TRY(storage::Outbox(store).for_alert(it->id, 200));
  if (!core::is_incident(view.alert)) {
    // A stored alert's document has no key digest: its row names the key.
    std::optional<std::int64_t> key_id;
    if (view.row && view.row->key_id) {
      key_id = view.row->key_id;
    } else {
      key_id = KW_TRY(storage::RunStore(store).find_key(view.alert.key.digest));
    }
    if (key_id) view.replay = KW_TRY(replay_key_id(store, *key_id, options, alerts));
  }
  return std::optional<AlertView>(std::move(view));
}

}  // namespace kernelwatch::web
