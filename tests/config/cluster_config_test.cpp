// The `urls` of an Alertmanager notifier (the peers of a cluster): one destination per peer,
// named <name>/<n>, and the clear errors for an empty list, url with urls, duplicates and bad
// URLs, none of which may show a URL.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::config {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Distinctive host names: no message or redacted output may contain them.
const std::vector<std::string> kPeers = {"https://am-1.secretzork.example:9093",
                                         "https://am-2.secretzork.example:9093",
                                         "https://am-3.secretzork.example:9093"};

Result<Config> parse(const json& notifiers, const Environment& env = Environment::from_map({}),
                     const fs::path& base = "/etc/kernelwatch") {
  return parse_config(json{{"notifiers", notifiers}}.dump(), "kernelwatch.json", env, base);
}

std::string error_of(const json& notifiers, const Environment& env = Environment::from_map({})) {
  const auto config = parse(notifiers, env);
  if (config) return "(no error)";
  EXPECT_EQ(config.error().message.find("secretzork"), std::string::npos)
      << "shows a URL: " << config.error().message;
  return config.error().message;
}

json cluster(json urls) {
  return json::array({{{"type", "alertmanager"}, {"name", "am"}, {"urls", std::move(urls)}}});
}

TEST(ClusterConfig, EachPeerIsADestinationOfItsOwnWithTheEntrysSettings) {
  json entry = cluster(kPeers);
  entry[0]["resend_interval"] = "30s";
  entry[0]["backoff"] = {{"base", "1s"}, {"cap", "1m"}, {"max_age", "2h"}};
  entry.push_back({{"type", "webhook"}, {"name", "hook"}, {"url", "http://127.0.0.1:8080/h"}});
  const auto config = parse(entry);
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->notifiers.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& n = config->notifiers[i];
    EXPECT_EQ(n.destination.name, "am/" + std::to_string(i + 1));
    EXPECT_EQ(n.destination.cluster, "am");
    EXPECT_EQ(n.configured_name(), "am");
    EXPECT_EQ(n.destination.type, "alertmanager");
    EXPECT_EQ(n.destination.url, kPeers[i]);
    EXPECT_EQ(n.destination.resend_interval, std::chrono::seconds(30));
    EXPECT_EQ(n.destination.backoff.max_age, std::chrono::hours(2));
    EXPECT_EQ(n.entry, 0u);
    EXPECT_EQ(n.peer, i + 1);
  }
  EXPECT_EQ(config->notifiers[3].destination.name, "hook");
  EXPECT_EQ(config->notifiers[3].destination.cluster, "");
  EXPECT_EQ(config->notifiers[3].entry, 1u);
  EXPECT_EQ(config->notifiers[3].peer, 0u);

  // The logged form mirrors the file: one entry, its URLs redacted, as many as there are.
  const json redacted = redacted_json(*config);
  ASSERT_EQ(redacted["notifiers"].size(), 2u) << redacted.dump();
  EXPECT_EQ(redacted["notifiers"][0]["name"], "am");
  EXPECT_EQ(redacted["notifiers"][0]["urls"],
            json::array({"<redacted>", "<redacted>", "<redacted>"}));
  EXPECT_FALSE(redacted["notifiers"][0].contains("url"));
  EXPECT_EQ(redacted.dump().find("secretzork"), std::string::npos) << redacted.dump();
}

TEST(ClusterConfig, OneUrlStaysOneDestinationUnderItsOwnName) {
  const auto config = parse(
      json::array({{{"type", "alertmanager"}, {"name", "am"}, {"url", "http://127.0.0.1:9093"}}}));
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->notifiers.size(), 1u);
  EXPECT_EQ(config->notifiers[0].destination.name, "am");
  EXPECT_EQ(config->notifiers[0].destination.cluster, "");
}

TEST(ClusterConfig, PeersFromAFileOrAVariable) {
  testing::TempDir dir;
  testing::write_file(dir / "peers", kPeers[0] + "\n" + kPeers[1] + "\n\n" + kPeers[2] + "\n");
  fs::permissions(dir / "peers", fs::perms::owner_read | fs::perms::owner_write);
  const auto from_file =
      parse(json::array({{{"type", "alertmanager"}, {"name", "am"}, {"urls_file", "peers"}}}),
            Environment::from_map({}), dir.path());
  ASSERT_TRUE(from_file) << from_file.error().message;
  ASSERT_EQ(from_file->notifiers.size(), 3u);
  EXPECT_EQ(from_file->notifiers[2].destination.url, kPeers[2]);
  EXPECT_EQ(from_file->notifiers[2].destination.name, "am/3");
  const json redacted = redacted_json(*from_file)["notifiers"][0];
  EXPECT_EQ(redacted["urls_file"], (dir / "peers").string());
  EXPECT_EQ(redacted["urls"].size(), 3u);

  const auto env = Environment::from_map({{"AM_PEERS", kPeers[0] + ", " + kPeers[1]}});
  const auto from_env =
      parse(json::array({{{"type", "alertmanager"}, {"urls_env", "AM_PEERS"}}}), env);
  ASSERT_TRUE(from_env) << from_env.error().message;
  ASSERT_EQ(from_env->notifiers.size(), 2u);
  EXPECT_EQ(from_env->notifiers[0].destination.name, "alertmanager-0/1");
  EXPECT_EQ(from_env->notifiers[1].destination.url, kPeers[1]);
  EXPECT_EQ(redacted_json(*from_env)["notifiers"][0]["urls_env"], "AM_PEERS");
}

TEST(ClusterConfig, BadPeerListsAreClearErrorsThatShowNoUrl) {
  EXPECT_EQ(error_of(cluster(json::array())),
            "kernelwatch.json: notifiers[0].urls: lists no URL: a cluster needs at least one peer");
  json both = cluster(kPeers);
  both[0]["url"] = kPeers[0];
  EXPECT_EQ(error_of(both),
            "kernelwatch.json: notifiers[0]: both url and urls are set: url for one "
            "Alertmanager, urls for the peers of a cluster");
  json two_lists = cluster(kPeers);
  two_lists[0]["urls_env"] = "AM_PEERS";
  EXPECT_EQ(error_of(two_lists),
            "kernelwatch.json: notifiers[0]: at most one of urls, urls_file, urls_env");
  EXPECT_EQ(error_of(cluster({kPeers[0], kPeers[1], kPeers[0]})),
            "kernelwatch.json: notifiers[0].urls[2]: names the same Alertmanager as "
            "notifiers[0].urls[0] (URLs not shown)");
  // A base URL and its alerts endpoint are one Alertmanager; so are two spellings of the host.
  EXPECT_EQ(error_of(cluster({kPeers[0] + "/api/v2/alerts/", kPeers[1],
                              "HTTPS://AM-1.secretzork.example:9093/"})),
            "kernelwatch.json: notifiers[0].urls[2]: names the same Alertmanager as "
            "notifiers[0].urls[0] (URLs not shown)");
  EXPECT_EQ(error_of(cluster({kPeers[0], "am-2.secretzork.example:9093"})),
            "kernelwatch.json: notifiers[0].urls[1]: the value is not an http:// or https:// URL");
  EXPECT_EQ(error_of(cluster({kPeers[0], "http://am-2.secretzork.example:9093"})),
            "kernelwatch.json: notifiers[0].urls[1]: the value is plain http:// to a host other "
            "than loopback; use https:// or set allow_insecure_http: true");
  EXPECT_EQ(error_of(cluster({kPeers[0], ""})), "kernelwatch.json: notifiers[0].urls[1]: is empty");
  EXPECT_EQ(error_of(cluster({kPeers[0], 9093})),
            "kernelwatch.json: notifiers[0].urls[1]: expected a URL, got number");
  EXPECT_EQ(error_of(cluster(kPeers[0])),
            "kernelwatch.json: notifiers[0].urls: expected a list of URLs, got string");
  EXPECT_EQ(
      error_of(json::array({{{"type", "webhook"}, {"urls", kPeers}}})),
      "kernelwatch.json: notifiers[0].urls: only alertmanager notifiers take several URLs (the "
      "peers of a cluster); use url, url_file or url_env");

  const auto env = Environment::from_map({{"AM_PEERS", kPeers[0] + " " + kPeers[0] + "/"},
                                          {"AM_BAD", kPeers[0] + ",ftp://x"},
                                          {"AM_NONE", " , "}});
  const auto var = [&](const std::string& name) {
    return error_of(json::array({{{"type", "alertmanager"}, {"urls_env", name}}}), env);
  };
  EXPECT_EQ(var("AM_PEERS"),
            "kernelwatch.json: notifiers[0].urls_env: URLs 1 and 2 name the same Alertmanager "
            "(URLs not shown)");
  EXPECT_EQ(var("AM_BAD"),
            "kernelwatch.json: notifiers[0].urls_env: URL 2 in the value of AM_BAD is not an "
            "http:// or https:// URL");
  EXPECT_EQ(var("AM_NONE"),
            "kernelwatch.json: notifiers[0].urls_env: lists no URL: a cluster needs at least one "
            "peer");
  EXPECT_NE(var("AM_UNSET").find("AM_UNSET"), std::string::npos);
}

TEST(ClusterConfig, AClusterNameIsUniqueAmongTheEntries) {
  json entries = cluster(kPeers);
  entries.push_back({{"type", "alertmanager"}, {"name", "am"}, {"url", "http://127.0.0.1:9093"}});
  EXPECT_EQ(error_of(entries),
            "kernelwatch.json: notifiers[1].name: \"am\" is already the name of notifiers[0]");
  // A configured name cannot take a peer's name: '/' is not allowed in names.
  json slash = cluster(kPeers);
  slash.push_back({{"type", "alertmanager"}, {"name", "am/1"}, {"url", "http://127.0.0.1:9093"}});
  EXPECT_NE(error_of(slash).find("notifiers[1].name: \"am/1\" is not 1 to 64 of"),
            std::string::npos)
      << error_of(slash);
}

TEST(ClusterConfig, AConfigFileReadableByOthersWarnsOncePerInlineList) {
  testing::TempDir dir;
  testing::write_file(dir / "kernelwatch.json", json{{"notifiers", cluster(kPeers)}}.dump());
  fs::permissions(dir / "kernelwatch.json",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  const auto config = load_config(dir / "kernelwatch.json", Environment::from_map({}));
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_NE(config->warnings[0].find("notifiers[0].urls are written in"), std::string::npos)
      << config->warnings[0];
  EXPECT_NE(config->warnings[0].find("prefer urls_file or urls_env"), std::string::npos);
}

}  // namespace
}  // namespace kernelwatch::config
