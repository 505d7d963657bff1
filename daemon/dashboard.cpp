#include "daemon/dashboard.hpp"

#include <algorithm>
#include <memory>

#include "daemon/backtest_command.hpp"
#include "daemon/engine.hpp"
#include "storage/alerts.hpp"
#include "storage/fleet.hpp"
#include "storage/outbox.hpp"
#include "storage/run_store.hpp"
#include "web/export.hpp"
#include "web/html.hpp"
#include "web/pages.hpp"

#ifndef KERNELWATCH_VERSION
#define KERNELWATCH_VERSION "0.0.0-dev"
#endif

namespace kernelwatch::daemon {
namespace {

// Pages load only what the daemon serves: no inline script or style, nothing from elsewhere.
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

HttpResponse with_page_headers(HttpResponse response) {
  response.headers.emplace_back("Content-Security-Policy", kPolicy);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

HttpResponse html(unsigned status, std::string body) {
  return with_page_headers(HttpResponse::text(status, std::move(body), "text/html; charset=utf-8"));
}

// A kept page, sent from the cache without a copy.
HttpResponse html(std::shared_ptr<const std::string> body) {
  return with_page_headers(HttpResponse::shared(200, std::move(body), "text/html; charset=utf-8"));
}

HttpResponse page(web::Page p) {
  return html(p.status, std::move(p.html));
}

HttpResponse failure(const core::Error& error) {
  return page({500, "<!doctype html><title>error</title><h1>Internal error</h1><p>" +
                        web::escape(error.message) + "</p>"});
}

// The overview's rows, rebuilt only when the engine changed (its generation); the last page
// rendered, answered again while its rows, query and daemon status are the same.
struct RowCache {
  std::uint64_t generation = ~std::uint64_t{0};
  std::vector<web::KeyRow> rows;
  std::vector<web::PlacedRow> placed;  // hosts and GPUs, with their open alerts
  std::string page_signature;
  std::string page;
};

// The pages thread's newest key replays (a key of 10,000 runs takes most of a second to replay
// on a loaded 2-core host), each kept while its key has not changed since it was read.
struct ReplayCache {
  struct Replayed {
    std::uint64_t read_at = 0;
    std::string ref;
    std::shared_ptr<const web::KeyReplay> replay;
  };
  std::vector<Replayed> replays;  // newest last, at most kReplays
  static constexpr std::size_t kReplays = 8;
};

core::Result<const std::vector<web::KeyRow>*> key_rows(const ApiContext& c, RowCache& cache) {
  if (cache.generation == c.engine->generation()) return &cache.rows;
  // The engine's state is the one replay's: each key shown through its standing, as the API
  // and `kernelwatch status` show it.
  std::vector<web::KeyRow> rows;
  for (const auto& s : c.engine->status()) {
    rows.push_back(web::key_row(s.key_id, s.key, s.last_run, s.standing));
  }
  KW_TRY(web::add_sparklines(storage::RunStore(*c.store), rows));
  cache.placed = web::placed_rows(c.engine->placed_counts(), KW_TRY(web::stored_alerts(*c.store)));
  cache.rows = std::move(rows);
  cache.generation = c.engine->generation();
  return &cache.rows;
}

web::DaemonStatus daemon_status(const ApiContext& c) {
  web::DaemonStatus s;
  s.version = KERNELWATCH_VERSION;
  s.backend = c.backend;
  s.cycle_running = c.cycle->running;
  s.cycles = c.cycle->count;
  s.cycle_errors = c.cycle->errors;
  if (c.cycle->last_end.time_since_epoch().count() != 0) s.last_cycle_end = c.cycle->last_end;
  if (!c.config->benchmarks.empty() && c.cycle->next.time_since_epoch().count() != 0)
    s.next_cycle = c.cycle->next;
  for (const auto& e : c.cycle->entries) {
    web::EntryStatus entry{e.name, e.runner, std::nullopt, std::nullopt, e.last_error};
    if (e.last_end.time_since_epoch().count() != 0) entry.last_run = e.last_end;
    if (e.next.time_since_epoch().count() != 0) entry.next_run = e.next;
    s.entries.push_back(std::move(entry));
  }
  storage::Outbox outbox(*c.store);
  if (auto counts = outbox.counts()) {
    s.outbox = std::move(*counts);
    for (const auto& d : s.outbox) s.dead_letters += d.dead;
  }
  return s;
}

HttpResponse overview(const ApiContext& c, const HttpRequest& r, RowCache& cache) {
  const auto query = web::parse_overview_query(r.query);
  if (!query) return page(web::bad_request_page(query.error().message, web::LinkMode::Served));
  const auto rows = key_rows(c, cache);
  if (!rows) return failure(rows.error());
  const auto status = daemon_status(c);
  // What the page shows besides the rows: the query and the status.
  std::string signature =
      std::to_string(cache.generation) + "|" + query->environment + "|" + query->benchmark + "|" +
      query->provider + "|" + (query->state ? std::string(core::to_string(*query->state)) : "") +
      "|" + std::to_string(query->page) + "|" + std::to_string(status.cycles) + "|" +
      std::to_string(status.cycle_errors) + "|" + (status.cycle_running ? "r" : "") + "|" +
      std::to_string(c.cycle->last_end.time_since_epoch().count()) + "|" +
      std::to_string(c.cycle->next.time_since_epoch().count()) + "|" + c.backend;
  for (const auto& e : c.cycle->entries) {
    signature += "|" + e.name + ":" + std::to_string(e.last_end.time_since_epoch().count()) + ":" +
                 std::to_string(e.next.time_since_epoch().count()) + ":" + e.last_error;
  }
  for (const auto& d : status.outbox) {
    signature += "|" + d.destination + ":" + std::to_string(d.pending) + ":" +
                 std::to_string(d.delivered) + ":" + std::to_string(d.dead);
  }
  if (signature != cache.page_signature) {
    cache.page = web::render_overview(**rows, *query, &status, web::LinkMode::Served, cache.placed);
    cache.page_signature = std::move(signature);
  }
  return html(200, cache.page);
}

// The key's replay, from the cache while its key has not changed (pages thread).
core::Result<std::shared_ptr<const web::KeyReplay>> cached_replay(const DashboardPages& p,
                                                                  const std::string& ref,
                                                                  ReplayCache& cache) {
  auto& replays = cache.replays;
  for (auto it = replays.begin(); it != replays.end(); ++it) {
    if (it->ref != ref) continue;
    if (p.key_pages->current(it->replay->key_id, it->read_at)) {
      auto hit = *it;
      replays.erase(it);
      replays.push_back(hit);
      return hit.replay;
    }
    replays.erase(it);
    break;
  }
  const std::uint64_t read_at = p.key_pages->now();
  // The key's runs through the one replay, its alerts as the daemon stored them (every alert
  // its replay raised is stored).
  const auto alerts = KW_TRY(web::stored_alerts(*p.store));
  auto replay = KW_TRY(web::replay_key(*p.store, ref, replay_options(p.engine_options()), alerts));
  if (!replay) return std::shared_ptr<const web::KeyReplay>();
  auto shared = std::make_shared<const web::KeyReplay>(std::move(*replay));
  if (replays.size() >= ReplayCache::kReplays) replays.erase(replays.begin());
  replays.push_back({read_at, ref, shared});
  return shared;
}

// Pages thread: rendered once per key change and query, then answered from the KeyPages (by the
// HTTP thread while current; here when requests queued behind the first render).
HttpResponse key_page(const DashboardPages& p, const HttpRequest& r, ReplayCache& cache) {
  const auto query = web::parse_key_query(r.query);
  if (!query) return page(web::bad_request_page(query.error().message, web::LinkMode::Served));
  const std::string& ref = r.params.at("ref");
  if (auto hit = p.key_pages->find(ref, r.query)) return html(std::move(hit));
  // What the page shows is read after this point: a change announced later makes it stale.
  const std::uint64_t read_at = p.key_pages->now();
  const auto replay = cached_replay(p, ref, cache);
  if (!replay) return failure(replay.error());
  if (!*replay) {
    return page(
        web::not_found_page("No key with the reference \"" + ref + "\".", web::LinkMode::Served));
  }
  std::vector<storage::AlertRow> stored;
  if (auto all = storage::AlertStore(*p.store).list(std::nullopt, 0)) {
    const core::KeyLabels& key = (*replay)->key;
    for (auto& row : *all) {
      // A stored member has no key digest: its id begins with its key's.
      const bool member = std::any_of(
          row.alert.members.begin(), row.alert.members.end(), [&](const core::Alert& m) {
            return m.key.identity() == key.identity() ||
                   (!key.digest.empty() && m.id.long_form().starts_with(key.digest + "@"));
          });
      if ((row.key_id && *row.key_id == (*replay)->key_id) || member) {
        stored.push_back(std::move(row));
      }
    }
  }
  auto body = std::make_shared<const std::string>(
      web::render_key(**replay, stored, *query, web::LinkMode::Served));
  p.key_pages->store(ref, r.query, (*replay)->key_id, read_at, body);
  return html(std::move(body));
}

// A page rendered earlier for the same key and query, while current (HTTP thread).
QuickHandler cached_key_page(KeyPages& pages) {
  return [&pages](const HttpRequest& r) -> std::optional<HttpResponse> {
    const auto it = r.params.find("ref");
    if (it == r.params.end()) return std::nullopt;
    auto hit = pages.find(it->second, r.query);
    if (!hit) return std::nullopt;
    return html(std::move(hit));
  };
}

HttpResponse alert_page(const DashboardPages& p, const HttpRequest& r) {
  if (!r.query.empty()) {
    return page(
        web::bad_request_page("an alert page takes no query parameters", web::LinkMode::Served));
  }
  const std::string& id = r.params.at("id");
  const auto alerts = web::stored_alerts(*p.store);
  if (!alerts) return failure(alerts.error());
  const auto view = web::find_alert(*p.store, id, replay_options(p.engine_options()), *alerts);
  if (!view) return failure(view.error());
  if (!*view) {
    return page(web::not_found_page("No alert with the id \"" + id + "\".", web::LinkMode::Served));
  }
  return html(200, web::render_alert(**view, web::LinkMode::Served));
}

// The fleet (storage/fleet.hpp) from the pages' own connection: every host's schema of a shared
// PostgreSQL database, problems first. Pages thread.
core::Result<std::vector<storage::FleetHost>> fleet_of(const DashboardPages& p) {
  return storage::fleet_hosts(*p.store);
}

bool on_postgresql(const DashboardPages& p) {
  return p.store->is_postgresql();
}

HttpResponse fleet_page(const DashboardPages& p, const HttpRequest& r) {
  if (!r.query.empty()) {
    return page(
        web::bad_request_page("the fleet page takes no query parameters", web::LinkMode::Served));
  }
  const auto hosts = fleet_of(p);
  if (!hosts) return failure(hosts.error());
  return html(200, web::render_fleet(*hosts, p.store->path().string(), on_postgresql(p)));
}

HttpResponse fleet_json(const DashboardPages& p) {
  const auto hosts = fleet_of(p);
  if (!hosts) return HttpResponse::error(500, hosts.error().message);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& host : *hosts) {
    nlohmann::json open = nlohmann::json::array();
    for (const auto& row : host.open) open.push_back(api_alert_json(row.alert));
    rows.push_back(
        {{"schema", host.schema},
         {"self", host.own},
         {"keys", host.keys},
         {"newestRun", host.newest_run ? nlohmann::json(core::format_timestamp(*host.newest_run))
                                       : nlohmann::json(nullptr)},
         {"firing", host.firing},
         {"acknowledged", host.acknowledged},
         {"openAlerts", std::move(open)},
         {"error",
          host.unreadable.empty() ? nlohmann::json(nullptr) : nlohmann::json(host.unreadable)}});
  }
  return HttpResponse::json(200, {{"database", p.store->path().string()},
                                  {"postgresql", on_postgresql(p)},
                                  {"hosts", std::move(rows)}});
}

HttpResponse asset(std::string_view body, const char* type) {
  auto response = HttpResponse::text(200, std::string(body), type);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Cache-Control", "max-age=300");
  return response;
}

}  // namespace

std::vector<Route> make_dashboard_routes(std::function<ApiContext()> context,
                                         DashboardPages pages) {
  auto cache = std::make_shared<RowCache>();
  auto replays = std::make_shared<ReplayCache>();
  return {
      {"GET", "/", Access::Public,
       [context, cache](const HttpRequest& r) { return overview(context(), r, *cache); }},
      {"GET", "/keys/{ref}", Access::Public,
       [pages, replays](const HttpRequest& r) { return key_page(pages, r, *replays); },
       cached_key_page(*pages.key_pages), pages.context},
      {"GET",
       "/alerts/{id}",
       Access::Public,
       [pages](const HttpRequest& r) { return alert_page(pages, r); },
       {},
       pages.context},
      {"GET",
       "/fleet",
       Access::Public,
       [pages](const HttpRequest& r) { return fleet_page(pages, r); },
       {},
       pages.context},
      {"GET",
       "/api/v1/fleet",
       Access::Public,
       [pages](const HttpRequest&) { return fleet_json(pages); },
       {},
       pages.context},
      {"GET", "/assets/kw.css", Access::Public,
       [](const HttpRequest&) { return asset(web::stylesheet(), "text/css; charset=utf-8"); }},
      {"GET", "/assets/kw.js", Access::Public,
       [](const HttpRequest&) { return asset(web::script(), "text/javascript; charset=utf-8"); }},
  };
}

int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  auto store = storage::Connection::open(options.db, storage::OpenMode::ReadOnly);
  if (!store) {
    err << "kernelwatch report: " << store.error().message << '\n';
    return 1;
  }
  const auto parameters = detector_parameters(options.config);
  if (!parameters) {
    err << "kernelwatch report: --config: " << parameters.error().message << '\n';
    return 1;
  }
  EngineOptions engine;
  engine.parameters = *parameters;
  const auto written = web::export_site(*store, replay_options(engine), options.out);
  if (!written) {
    err << "kernelwatch report: " << written.error().message << '\n';
    return 1;
  }
  out << "wrote " << written->files << " files (" << written->keys << " keys, " << written->alerts
      << " alerts) to " << options.out.string() << "; open "
      << (options.out / "index.html").string() << '\n';
  return 0;
}

}  // namespace kernelwatch::daemon
