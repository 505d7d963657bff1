#include "daemon/api.hpp"

#include <charconv>

#include <nlohmann/json.hpp>

#include "core/json_fields.hpp"
#include "core/key.hpp"
#include "core/record_batch.hpp"
#include "daemon/clock.hpp"
#include "daemon/dashboard.hpp"
#include "daemon/judge_command.hpp"
#include "daemon/metrics.hpp"
#include "daemon/store_commands.hpp"
#include "notifiers/worker.hpp"
#include "storage/alerts.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::daemon {
namespace {

using nlohmann::json;

json timestamp_or_null(core::Timestamp t) {
  return t.time_since_epoch().count() == 0 ? json(nullptr) : json(core::format_timestamp(t));
}

HttpResponse internal(const core::Error& error) {
  // Database errors name the file, never a secret; still, keep the answer short.
  return HttpResponse::error(500, error.message);
}

json short_ids(const std::vector<core::AlertId>& ids) {
  json out = json::array();
  for (const auto& id : ids) out.push_back(id.short_form());
  return out;
}

json key_json(const core::KeyLabels& k) {
  return json{{"benchmark", k.benchmark},     {"provider", k.provider}, {"workload", k.workload},
              {"environment", k.environment}, {"protocol", k.protocol}, {"digest", k.digest}};
}

// The per-key part of the status (`[keys...],"protocolChanges":[...]`): at 218 keys, building
// and dumping it is most of a request.
std::string status_keys(const ApiContext& c) {
  if (c.status_cache != nullptr && c.status_cache->generation == c.engine->generation()) {
    return c.status_cache->keys;
  }
  json keys = json::array();
  for (const auto& s : c.engine->status()) {
    json k = key_json(s.key);
    if (s.last_run) {
      k["lastObservedAt"] = core::format_timestamp(s.last_run->observed_at);
      k["lastStatus"] = core::to_string(s.last_run->status);
      k["lastOutcome"] = core::to_string(core::outcome_of(s.last_run->status));
      k["lastMedianNs"] = s.last_run->median.count();
    }
    // How every view shows the key (detectors::standing_of): its state, the change and the band
    // the change is against; then the newest judgeable run's verdict.
    const auto& shown = s.standing;
    k["state"] = core::to_string(shown.state);
    k["change"] = shown.change ? json(*shown.change) : json(nullptr);
    k["band"] = shown.band ? json{{"lower", shown.band->lower.count()},
                                  {"upper", shown.band->upper.count()},
                                  {"center", shown.band->center.count()}}
                           : json(nullptr);
    k["verdict"] = detectors::to_string(s.last_verdict.kind);
    k["explanation"] = s.last_verdict.explanation;
    if (const auto& open = shown.alert) {
      k["openAlert"] = {
          {"id", open->id.short_form()},
          {"longId", open->id.long_form()},
          {"kind", core::to_string(open->kind)},
          {"direction", core::to_string(open->direction)},
          {"state", core::to_string(open->state)},
          {"relativeChange", open->relative_change},
          {"incident", open->incident.empty() ? json(nullptr) : json(open->incident.short_form())},
          {"origin", s.open_alert_from_history && s.open_alert && open->id == s.open_alert->id
                         ? "history"
                         : "daemon"}};
    } else {
      k["openAlert"] = nullptr;
    }
    keys.push_back(std::move(k));
  }
  // Keys whose protocol's settings changed: detection started over in a new key.
  json changes = json::array();
  for (const auto& change : c.engine->protocol_changes()) {
    json previous = json::array();
    for (std::size_t i = 0; i < change.previous.size(); ++i) {
      previous.push_back({{"digest", change.previous[i].digest},
                          {"lastObservedAt", core::format_timestamp(change.previous_last_run[i])}});
    }
    json item = key_json(change.current);
    item["previousKeys"] = std::move(previous);
    changes.push_back(std::move(item));
  }
  std::string text = keys.dump() + ",\"protocolChanges\":" + changes.dump();
  if (c.status_cache != nullptr) *c.status_cache = StatusCache{c.engine->generation(), text};
  return text;
}

HttpResponse status(const ApiContext& c) {
  json outbox = json::array();
  if (auto counts = storage::Outbox(*c.store).counts()) {
    for (const auto& d : *counts) {
      outbox.push_back({{"destination", d.destination},
                        {"pending", d.pending},
                        {"delivered", d.delivered},
                        {"dead", d.dead}});
    }
  }
  // The newest dead letters with their reasons (never a URL or a response body).
  json dead = json::array();
  if (auto letters = storage::Outbox(*c.store).dead_letters(10)) {
    for (const auto& d : *letters) {
      dead.push_back(
          {{"destination", d.destination},
           {"idempotencyKey", d.idempotency_key},
           {"attempts", d.attempts},
           {"reason", d.last_error},
           {"at", d.finished_at ? json(core::format_timestamp(*d.finished_at)) : json(nullptr)}});
    }
  }
  // Stored rows that could not be read (skipped everywhere, logged once): how many, and the
  // first reasons, so that an operator sees them without reading the log.
  const auto unreadable = storage::RunStore(*c.store).unreadable();
  json reasons = json::array();
  for (std::size_t i = 0; i < unreadable.size() && i < 10; ++i) reasons.push_back(unreadable[i]);
  const auto uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c.started).count();
  // Each config entry: its interval, last execution, next run and newest error.
  json entries = json::array();
  for (const auto& e : c.cycle->entries) {
    entries.push_back({{"name", e.name},
                       {"runner", e.runner},
                       {"intervalSeconds", e.interval.count() / 1000.0},
                       {"lastStart", timestamp_or_null(e.last_start)},
                       {"lastEnd", timestamp_or_null(e.last_end)},
                       {"lastRuns", e.last_runs},
                       {"lastFailedRuns", e.last_failed},
                       {"next", timestamp_or_null(e.next)},
                       {"lastError", e.last_error.empty() ? json(nullptr) : json(e.last_error)},
                       {"lastErrorAt", timestamp_or_null(e.last_error_at)}});
  }
  // Open alerts about a GPU or a host out of line with its siblings (they have no key).
  json out_of_line = json::array();
  for (const auto state : {core::AlertState::Firing, core::AlertState::Acknowledged}) {
    auto rows = storage::AlertStore(*c.store).list(state, 0);
    if (!rows) continue;
    for (const auto& row : *rows) {
      const auto& a = row.alert;
      if (a.placement.empty() || core::is_incident(a) || core::is_incident_member(a)) continue;
      out_of_line.push_back({{"id", a.id.short_form()},
                             {"longId", a.id.long_form()},
                             {"state", core::to_string(a.state)},
                             {"level", a.placement.unit().empty() ? "host" : "gpu"},
                             {"environment", a.key.environment},
                             {"host", a.placement.host},
                             {"gpu", a.placement.gpu},
                             {"gpuUuid", a.placement.gpu_uuid},
                             {"pciBusId", a.placement.pci_bus_id},
                             {"direction", core::to_string(a.direction)},
                             {"relativeChange", a.relative_change},
                             {"explanation", a.explanation}});
    }
  }
  const json head{
      {"version", KERNELWATCH_VERSION},
      {"startedAt", core::format_timestamp(c.started_wall)},
      {"uptimeSeconds", uptime},
      {"backend", c.backend},
      {"backendNote", c.backend_note},
      {"database", c.store->path().string()},
      {"cycle",
       {{"running", c.cycle->running},
        {"count", c.cycle->count},
        {"errors", c.cycle->errors},
        {"lastStart", timestamp_or_null(c.cycle->last_start)},
        {"lastEnd", timestamp_or_null(c.cycle->last_end)},
        {"lastDurationSeconds", c.cycle->last_duration_seconds},
        {"next", c.config->benchmarks.empty() ? json(nullptr) : timestamp_or_null(c.cycle->next)}}},
      {"entries", std::move(entries)},
      {"outbox", std::move(outbox)},
      {"deadLetters", std::move(dead)},
      {"outOfLine", std::move(out_of_line)},
      {"unreadableRuns", {{"count", unreadable.size()}, {"reasons", std::move(reasons)}}}};
  // The cached keys part goes in as text: {"...":...,"keys":[...],"protocolChanges":[...]}.
  std::string body = head.dump();
  body.pop_back();
  body += ",\"keys\":" + status_keys(c) + "}";
  return HttpResponse::text(200, std::move(body), "application/json");
}

std::optional<std::size_t> parse_limit(const HttpRequest& r, std::size_t fallback) {
  const auto it = r.query.find("limit");
  if (it == r.query.end()) return fallback;
  std::size_t value = 0;
  const auto& text = it->second;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value == 0 ||
      value > 10000)
    return std::nullopt;
  return value;
}

std::string query(const HttpRequest& r, const char* name) {
  const auto it = r.query.find(name);
  return it == r.query.end() ? std::string() : it->second;
}

HttpResponse runs(const ApiContext& c, const HttpRequest& r) {
  const auto limit = parse_limit(r, 100);
  if (!limit) return HttpResponse::error(400, "limit must be an integer from 1 to 10000");
  storage::RunFilter filter{query(r, "benchmark"), query(r, "provider"), query(r, "workload"),
                            query(r, "environment"), *limit};
  // Record by record into the body: no list of runs or of their JSON on the way.
  std::string body = "[";
  const auto listed =
      storage::RunStore(*c.store).for_each_run(filter, [&](const storage::StoredRun& run) {
        if (body.size() > 1) body += ',';
        body += core::to_json(run.record).dump(-1, ' ', false, json::error_handler_t::replace);
        return core::Status{};
      });
  if (!listed) return internal(listed.error());
  body += ']';
  return HttpResponse::text(200, std::move(body), "application/json");
}

HttpResponse keys(const ApiContext& c) {
  auto found = storage::RunStore(*c.store).keys();
  if (!found) return internal(found.error());
  json out = json::array();
  for (const auto& k : *found) out.push_back(to_json(k));
  return HttpResponse::json(200, out);
}

HttpResponse alerts(const ApiContext& c, const HttpRequest& r) {
  const std::string state_text = query(r, "state");
  std::optional<core::AlertState> state;
  if (!state_text.empty()) {
    auto parsed = core::parse_alert_state(state_text);
    if (!parsed) {
      return HttpResponse::error(400,
                                 "state must be firing, acknowledged, resolved or rebaselined");
    }
    state = *parsed;
  }
  const auto limit = parse_limit(r, 100);
  if (!limit) return HttpResponse::error(400, "limit must be an integer from 1 to 10000");
  auto found = storage::AlertStore(*c.store).list(state, *limit);
  if (!found) return internal(found.error());
  json out = json::array();
  for (const auto& a : *found) {
    json doc = api_alert_json(a.alert);
    doc["updatedAt"] = core::format_timestamp(a.updated_at);
    doc["notified"] = a.notified ? json(core::to_string(*a.notified)) : json(nullptr);
    doc["notifiedAt"] =
        a.notified_at ? json(core::format_timestamp(*a.notified_at)) : json(nullptr);
    doc["origin"] = storage::to_string(a.origin);
    out.push_back(std::move(doc));
  }
  return HttpResponse::json(200, out);
}

// Candidate runs judged against the live state of their keys: nothing stored, no alert, no state
// changed (`kernelwatch compare --against URL`).
HttpResponse post_judge(const ApiContext& c, const HttpRequest& r) {
  auto batch = core::parse_record_batch(r.body, wall_now());
  if (!batch) return HttpResponse::error(400, batch.error().message);
  return HttpResponse::json(200, judge_answer(c.engine->judge(*batch), *batch));
}

HttpResponse post_runs(const ApiContext& c, const HttpRequest& r) {
  // Every record is checked before the first is stored: a bad one stores nothing.
  auto batch = core::parse_record_batch(r.body, wall_now());
  if (!batch) return HttpResponse::error(400, batch.error().message);
  const std::vector<core::Run>& runs = *batch;
  json results = json::array();
  std::size_t stored = 0;
  std::size_t duplicates = 0;
  // One batch is one transaction: a failure (a full disk) stores none of it. It is logged and
  // counted, and /readyz says not ready until a write of runs succeeds again.
  auto batch_processed = c.engine->process_batch(runs, wall_now());
  if (!batch_processed) {
    // The message names the database file and SQLite's reason; never the request's token.
    const std::string& why = batch_processed.error().message;
    if (c.log) {
      c.log(LogLevel::Error, "POST /api/v1/runs from " + r.remote + ": storing " +
                                 std::to_string(runs.size()) +
                                 " run(s) failed, none stored: " + why);
    }
    if (c.published != nullptr) c.published->storage_failed("runs", why);
    // A database the daemon cannot reach now (a PostgreSQL server restarting) is 503, so that a
    // client posts the batch again later; any other failure (a full disk) is 500.
    if (batch_processed.error().code == core::ErrorCode::Unavailable) {
      return HttpResponse::error(503, why);
    }
    return internal(batch_processed.error());
  }
  if (c.published != nullptr) c.published->storage_recovered("runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const core::Record& record = runs[i].record();
    const Processed* processed = &(*batch_processed)[i];
    c.cycle->count_run(record.run.status, record.run.median.value_or(std::chrono::nanoseconds{0}),
                       core::placement_of(record.run.metadata));
    (processed->duplicate ? duplicates : stored) += 1;
    if (c.log) {
      for (const auto& note : processed->warm_notes) {
        c.log(LogLevel::Warning, "storage.warm_start: " + note);
      }
      if (processed->warm_start) {
        c.log(LogLevel::Info, describe_warm_start(processed->key_display, *processed->warm_start));
      }
    }
    results.push_back({{"externalId", record.run.source_native.external_id},
                       {"duplicate", processed->duplicate},
                       {"verdict", detectors::to_string(processed->verdict.kind)},
                       {"explanation", processed->verdict.explanation},
                       {"fired", short_ids(processed->fired)},
                       {"resolved", short_ids(processed->resolved)},
                       {"incident", nullptr}});
    if (processed->warm_start) {
      results.back()["warmStart"] = {{"runs", processed->warm_start->runs},
                                     {"hosts", processed->warm_start->hosts}};
    }
  }
  // One posted batch is one cycle: its held steps are decided together (the controls) and its
  // alerts go out as one notification per destination. During a scheduled cycle its end
  // decides them, so the controls see the whole cycle.
  bool decided = false;
  if (stored > 0 && c.flush && !c.cycle->running) {
    if (const auto closed = c.flush()) {
      decided = true;
      const auto run_of = [&](const core::Alert& alert) -> json* {
        for (std::size_t i = 0; i < runs.size(); ++i) {
          if (runs[i].record().run.source_native.external_id == alert.fired.external_id)
            return &results[i];
        }
        return nullptr;
      };
      for (const auto& alert : closed->fired) {
        if (json* result = run_of(alert)) {
          (*result)["fired"].push_back(alert.id.short_form());
        }
      }
      for (const auto& incident : closed->incidents) {
        for (const auto& member : incident.members) {
          if (json* result = run_of(member)) {
            (*result)["incident"] = incident.id.short_form();
          }
        }
      }
    }
  }
  return HttpResponse::json(200, json{{"stored", stored},
                                      {"duplicates", duplicates},
                                      {"decided", decided || stored == 0},
                                      {"runs", results}});
}

HttpResponse ack(const ApiContext& c, const HttpRequest& r) {
  bool rebaseline = false;
  if (!r.body.empty()) {
    const json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.is_object())
      return HttpResponse::error(400, "body must be a JSON object like {\"rebaseline\": false}");
    const core::JsonField fields(body);
    for (const std::string& name : fields.keys()) {
      if (name != "rebaseline") return HttpResponse::error(400, "unknown field \"" + name + "\"");
    }
    const auto value = fields["rebaseline"].boolean_or(false);
    if (!value) return HttpResponse::error(400, "rebaseline must be true or false");
    rebaseline = *value;
  }
  // The short id as the API lists it, or the long one (percent-encoded in the path).
  const core::AlertRef requested(r.params.at("id"));
  storage::AlertStore alerts(*c.store);
  core::AlertId id(requested.text());
  if (requested.is_short()) {
    auto found = alerts.find(requested);
    if (!found) return internal(found.error());
    if (*found) id = (*found)->alert.id;
  }
  const auto action =
      rebaseline ? core::OperatorAction::Rebaseline : core::OperatorAction::Acknowledge;
  if (auto ok = c.engine->acknowledge(id, action, wall_now()); !ok) {
    const auto code = ok.error().code;
    return HttpResponse::error(code == core::ErrorCode::NotFound   ? 404
                               : code == core::ErrorCode::Conflict ? 409
                                                                   : 500,
                               ok.error().message);
  }
  auto row = alerts.find(id);
  if (!row || !*row)
    return internal(row ? core::Error{core::ErrorCode::NotFound, id.long_form()} : row.error());
  return HttpResponse::json(200, json{{"id", id.short_form()},
                                      {"longId", id.long_form()},
                                      {"state", core::to_string((*row)->alert.state)}});
}

}  // namespace

json api_alert_json(const core::Alert& alert) {
  json doc = core::to_json(alert);
  doc["id"] = alert.id.short_form();
  doc["longId"] = alert.id.long_form();
  if (!alert.incident.empty()) doc["incident"] = alert.incident.short_form();
  json members = json::array();
  for (const auto& member : alert.members) members.push_back(api_alert_json(member));
  doc["members"] = std::move(members);
  return doc;
}

std::shared_ptr<const std::string> RenderedCache::fresh() const {
  std::lock_guard lock(mutex_);
  if (!body_ || body_epoch_ != epoch_ ||
      std::chrono::steady_clock::now() - rendered_at_ > max_age_) {
    return nullptr;
  }
  return body_;
}

void RenderedCache::store(std::shared_ptr<const std::string> body, std::uint64_t epoch) {
  std::lock_guard lock(mutex_);
  body_ = std::move(body);
  body_epoch_ = epoch;
  rendered_at_ = std::chrono::steady_clock::now();
}

std::uint64_t RenderedCache::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

void RenderedCache::invalidate() {
  std::lock_guard lock(mutex_);
  ++epoch_;
}

void Published::set_ready(bool ready) {
  std::lock_guard lock(mutex_);
  ready_ = ready;
}

bool Published::ready() const {
  std::lock_guard lock(mutex_);
  return ready_;
}

void Published::storage_failed(const std::string& source, const std::string& reason) {
  std::lock_guard lock(mutex_);
  failing_[source] = reason;
  ++failures_;
}

void Published::storage_recovered(const std::string& source) {
  std::lock_guard lock(mutex_);
  failing_.erase(source);
}

Published::StorageFailures Published::storage_failures() const {
  std::lock_guard lock(mutex_);
  return {failures_, !failing_.empty()};
}

std::optional<Published::StorageProblem> Published::storage_problem() const {
  std::lock_guard lock(mutex_);
  if (failing_.empty()) return std::nullopt;
  const auto& [source, reason] = *failing_.begin();
  return StorageProblem{source, reason, failures_};
}

void Published::invalidate() {
  metrics.invalidate();
  status.invalidate();
}

void CycleState::count_run(core::RunStatus status, std::chrono::nanoseconds median,
                           const core::Placement& placement) {
  count_run(status, median);
  if (placement.unit().empty()) return;
  PlacedRuns& gpu = gpus[core::UnitId::of(placement).str()];
  gpu.placement = placement;
  ++gpu.by_status[std::string(core::to_string(core::outcome_of(status)))];
}

void CycleState::count_run(core::RunStatus status, std::chrono::nanoseconds median) {
  ++runs_by_status[std::string(core::to_string(core::outcome_of(status)))];
  if (status == core::RunStatus::Passed && median.count() > 0) {
    run_seconds_sum += std::chrono::duration<double>(median).count();
    ++run_seconds_count;
  }
}

namespace {

HttpResponse readiness(const Published& p) {
  if (!p.ready()) return HttpResponse::error(503, "starting");
  // Messages of storage errors name the database file and SQLite's reason, never a secret.
  if (const auto problem = p.storage_problem()) {
    return HttpResponse::json(503, json{{"status", "not ready"},
                                        {"error", "storage writes are failing (" + problem->source +
                                                      "): " + problem->reason},
                                        {"storageWriteFailures", problem->failures}});
  }
  return HttpResponse::json(200, json{{"status", "ready"}, {"backend", p.backend()}});
}

// A pre-rendered answer while it is current (the I/O thread's quick path).
QuickHandler cached(const RenderedCache& cache, std::string content_type) {
  return [&cache, content_type](const HttpRequest&) -> std::optional<HttpResponse> {
    auto body = cache.fresh();
    if (!body) return std::nullopt;
    return HttpResponse::shared(200, std::move(body), content_type);
  };
}

// Renders on the engine's thread; the requests that queued behind the first render reuse it.
template <typename Render>
HttpResponse render_cached(RenderedCache& cache, std::string content_type, Render render) {
  if (auto body = cache.fresh()) return HttpResponse::shared(200, std::move(body), content_type);
  const std::uint64_t epoch = cache.epoch();
  HttpResponse response = render();
  if (response.status == 200) {
    cache.store(std::make_shared<const std::string>(response.body), epoch);
  }
  return response;
}

}  // namespace

std::vector<Route> make_routes(std::function<ApiContext()> context, Published& published,
                               DashboardPages pages) {
  const auto get = [context](auto f) {
    return [context, f](const HttpRequest& r) { return f(context(), r); };
  };
  // What a mutating request changed shows at once in /metrics and /api/v1/status.
  const auto changes = [context, &published](auto f) {
    return [context, f, &published](const HttpRequest& r) {
      HttpResponse response = f(context(), r);
      published.invalidate();
      return response;
    };
  };
  const std::string metrics_type(kMetricsContentType);
  const std::string status_type = "application/json";
  const auto healthy = [](const HttpRequest&) {
    return HttpResponse::json(200, json{{"status", "ok"}});
  };
  const auto ready = [&published](const HttpRequest&) { return readiness(published); };
  std::vector<Route> routes{
      {"GET", "/healthz", Access::Public, healthy,
       [healthy](const HttpRequest& r) -> std::optional<HttpResponse> { return healthy(r); }},
      {"GET", "/readyz", Access::Public, ready,
       [ready](const HttpRequest& r) -> std::optional<HttpResponse> { return ready(r); }},
      {"GET", "/metrics", Access::Public,
       get([&published, metrics_type](const ApiContext& c, const HttpRequest&) {
         return render_cached(published.metrics, metrics_type, [&] {
           auto body = render_metrics(c);
           if (!body) return HttpResponse::error(500, "metrics: " + body.error().message);
           return HttpResponse::text(200, std::move(*body), metrics_type);
         });
       }),
       cached(published.metrics, metrics_type)},
      {"GET", "/api/v1/status", Access::Public,
       get([&published, status_type](const ApiContext& c, const HttpRequest&) {
         return render_cached(published.status, status_type, [&] { return status(c); });
       }),
       cached(published.status, status_type)},
      {"GET", "/api/v1/keys", Access::Public,
       get([](const ApiContext& c, const HttpRequest&) { return keys(c); })},
      {"GET", "/api/v1/runs", Access::Public,
       get([](const ApiContext& c, const HttpRequest& r) { return runs(c, r); })},
      {"GET", "/api/v1/alerts", Access::Public,
       get([](const ApiContext& c, const HttpRequest& r) { return alerts(c, r); })},
      {"POST", "/api/v1/runs", Access::TokenRequired,
       changes([](const ApiContext& c, const HttpRequest& r) { return post_runs(c, r); })},
      // Mutates nothing: no invalidation of the pre-rendered answers.
      {"POST", "/api/v1/judge", Access::TokenRequired,
       get([](const ApiContext& c, const HttpRequest& r) { return post_judge(c, r); })},
      {"POST", "/api/v1/trigger", Access::TokenRequired,
       changes([](const ApiContext& c, const HttpRequest&) {
         if (c.config->benchmarks.empty())
           return HttpResponse::error(409, "no benchmarks configured");
         if (!c.trigger()) return HttpResponse::error(409, "a cycle is already running");
         return HttpResponse::json(202, json{{"status", "cycle started"}});
       })},
      {"POST", "/api/v1/alerts/{id}/ack", Access::TokenRequired,
       changes([](const ApiContext& c, const HttpRequest& r) { return ack(c, r); })},
  };
  // The dashboard's pages and assets (daemon/dashboard.cpp): public and read-only, like GET.
  for (auto& route : make_dashboard_routes(context, std::move(pages))) {
    routes.push_back(std::move(route));
  }
  return routes;
}

}  // namespace kernelwatch::daemon
