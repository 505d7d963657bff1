// The storage settings: where the runs live (a SQLite file, or a PostgreSQL database and this
// host's schema in it) and whether a key new to this host starts from the fleet's runs.
#include <gtest/gtest.h>

#include <string>

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

// storage.warm_start reads the other hosts' schemas of the shared database: it needs both a
// PostgreSQL database and this host's own schema, and the other hosts' URLs differ from this
// host's in the schema alone.
TEST(ParseConfig, WarmStartNeedsAPostgresqlDatabaseAndThisHostsSchema) {
  const auto warm =
      parse(R"({"storage": {"postgresql": "postgresql://db.example/kw?sslmode=verify-full",
                                          "schema": "gpu_d", "warm_start": true}})");
  ASSERT_TRUE(warm) << warm.error().message;
  EXPECT_TRUE(warm->storage.warm_start);
  EXPECT_EQ(warm->storage.location_of("gpu_a"),
            "postgresql://db.example/kw?sslmode=verify-full&options=-csearch_path%3Dgpu_a");
  EXPECT_EQ(redacted_json(*warm)["storage"]["warm_start"], true);
  const auto again = parse(redacted_json(*warm).dump());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->storage.warm_start);
  const auto off = parse(R"({"storage": {"postgresql": "kwfleet", "schema": "gpu_d"}})");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->storage.warm_start);
  EXPECT_FALSE(redacted_json(*off)["storage"].contains("warm_start"));
  for (const char* text : {R"({"storage": {"warm_start": true}})",
                           R"({"storage": {"path": "/tmp/kw.db", "warm_start": true}})",
                           R"({"storage": {"postgresql": "kwfleet", "warm_start": true}})"}) {
    EXPECT_NE(error_of(text).find("storage.warm_start: reads the other hosts' schemas"),
              std::string::npos)
        << text << ": " << error_of(text);
  }
  EXPECT_NE(error_of(R"({"storage": {"postgresql": "kwfleet", "schema": "a", "warm_start": 1}})")
                .find("storage.warm_start: expected true or false"),
            std::string::npos);
}

// storage.fleet_controls reads the other hosts' schemas too, so it has the same needs, and it is
// its own setting: a host can judge its steps against the fleet without starting warm.
TEST(ParseConfig, FleetControlsNeedAPostgresqlDatabaseAndThisHostsSchema) {
  const auto on = parse(R"({"storage": {"postgresql": "kwfleet", "schema": "gpu_d",
                                        "fleet_controls": true}})");
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->storage.fleet_controls);
  EXPECT_FALSE(on->storage.warm_start);
  EXPECT_EQ(redacted_json(*on)["storage"]["fleet_controls"], true);
  const auto again = parse(redacted_json(*on).dump());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->storage.fleet_controls);
  const auto off = parse(R"({"storage": {"postgresql": "kwfleet", "schema": "gpu_d"}})");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->storage.fleet_controls);
  EXPECT_FALSE(redacted_json(*off)["storage"].contains("fleet_controls"));
  for (const char* text : {R"({"storage": {"fleet_controls": true}})",
                           R"({"storage": {"postgresql": "kwfleet", "fleet_controls": true}})"}) {
    EXPECT_NE(error_of(text).find("storage.fleet_controls: reads the other hosts' schemas"),
              std::string::npos)
        << text << ": " << error_of(text);
  }
}

}  // namespace
}  // namespace kernelwatch::config
