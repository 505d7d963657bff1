// The storage settings: where the runs live (a SQLite file, or a PostgreSQL database and this
// host's schema in it) and whether a key new to this host starts from the fleet's runs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "config/config.hpp"
#include "tests/config/config_test_support.hpp"

namespace kernelwatch::config {
namespace {

using json = nlohmann::json;
using namespace kernelwatch::config::test;

// A host's own schema in a PostgreSQL database a fleet shares (docs/FLEET.md): written into the
// URL as libpq's search_path, kept apart in the effective config so that it reloads as written.
TEST(ParseConfig, AStorageSchemaIsTheSearchPathOfThePostgresqlUrl) {
  const auto url = parse(R"({"storage": {"postgresql": "postgresql://kw@db.example/kw?passfile=/p",
                                         "schema": "gpu_host_07"}})");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->storage.location(),
            "postgresql://kw@db.example/kw?passfile=/p&options=-csearch_path%3Dgpu_host_07");
  EXPECT_EQ(redacted_json(*url)["storage"],
            json({{"postgresql", "postgresql://kw@db.example/kw?passfile=/p"},
                  {"schema", "gpu_host_07"}}));
  const auto again = parse(redacted_json(*url).dump());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->storage.location(), url->storage.location());
  const auto service = parse(R"({"storage": {"postgresql": "kwfleet", "schema": "_b2"}})");
  ASSERT_TRUE(service) << service.error().message;
  EXPECT_EQ(service->storage.location(),
            "postgresql:///?service=kwfleet&options=-csearch_path%3D_b2");
  const auto ends_in_query = parse(R"({"storage": {"postgresql": "postgresql://db.example/kw?",
                                                   "schema": "gpu_a"}})");
  ASSERT_TRUE(ends_in_query) << ends_in_query.error().message;
  EXPECT_EQ(ends_in_query->storage.location(),
            "postgresql://db.example/kw?options=-csearch_path%3Dgpu_a");
  const auto bare = parse(R"({"storage": {"postgresql": "postgresql://db.example/kw"}})");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->storage.location(), "postgresql://db.example/kw");
  EXPECT_EQ(bare->storage.schema, "");

  EXPECT_NE(error_of(R"({"storage": {"schema": "gpu_a"}})").find("storage.schema"),
            std::string::npos);
  for (const std::string& name : std::vector<std::string>{
           "", "Gpu", "1gpu", "pg_gpu", "gpu-07", "gpu 07", "gpu%3Dx", std::string(64, 'a')}) {
    const std::string text =
        R"({"storage": {"postgresql": "postgresql://db/kw", "schema": ")" + name + R"("}})";
    EXPECT_NE(error_of(text).find("storage.schema: must be a PostgreSQL schema name"),
              std::string::npos)
        << name << ": " << error_of(text);
  }
  EXPECT_TRUE(parse(R"({"storage": {"postgresql": "postgresql://db/kw", "schema": ")" +
                    std::string(63, 'a') + R"("}})"));
  EXPECT_NE(error_of(R"({"storage": {"postgresql": "postgresql://db/kw?options=-cx%3Dy",
                                     "schema": "gpu_a"}})")
                .find("not both"),
            std::string::npos);
}

// storage.warm_start and storage.fleet_controls read the other hosts' schemas of the shared
// database: each needs both a PostgreSQL database and this host's own schema, each is its own
// setting (a host can judge its steps against the fleet without starting warm), and the other
// hosts' URLs differ from this host's in the schema alone.
TEST(ParseConfig, WarmStartAndFleetControlsNeedAPostgresqlDatabaseAndThisHostsSchema) {
  using Setting = bool StorageConfig::*;
  for (const auto& [name, setting, other] :
       {std::tuple<std::string, Setting, Setting>{"warm_start", &StorageConfig::warm_start,
                                                  &StorageConfig::fleet_controls},
        {"fleet_controls", &StorageConfig::fleet_controls, &StorageConfig::warm_start}}) {
    SCOPED_TRACE(name);
    const json fleet = {{"postgresql", "postgresql://db.example/kw?sslmode=verify-full"},
                        {"schema", "gpu_d"}};
    json on = fleet;
    on[name] = true;
    const auto parsed = parse(json{{"storage", on}}.dump());
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_TRUE(parsed->storage.*setting);
    EXPECT_FALSE(parsed->storage.*other);
    EXPECT_EQ(parsed->storage.location_of("gpu_a"),
              "postgresql://db.example/kw?sslmode=verify-full&options=-csearch_path%3Dgpu_a");
    EXPECT_EQ(redacted_json(*parsed)["storage"][name], true);
    const auto again = parse(redacted_json(*parsed).dump());
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(again->storage.*setting);
    const auto off = parse(json{{"storage", fleet}}.dump());
    ASSERT_TRUE(off);
    EXPECT_FALSE(off->storage.*setting);
    EXPECT_FALSE(redacted_json(*off)["storage"].contains(name));
    for (const json& storage : {json{{name, true}}, json{{"path", "/tmp/kw.db"}, {name, true}},
                                json{{"postgresql", "kwfleet"}, {name, true}}}) {
      const std::string text = json{{"storage", storage}}.dump();
      EXPECT_NE(error_of(text).find("storage." + name + ": reads the other hosts' schemas"),
                std::string::npos)
          << text << ": " << error_of(text);
    }
    json wrong = fleet;
    wrong[name] = 1;
    EXPECT_NE(error_of(json{{"storage", wrong}}.dump())
                  .find("storage." + name + ": expected true or false"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace kernelwatch::config
