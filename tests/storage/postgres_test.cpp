// What only the PostgreSQL backend has: its translation of the statements, its connection
// strings and secrets, several writers at once, a server killed mid-transaction, and the same
// answers as SQLite for the same history. On a real server (tests/support/postgres_server.hpp).
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/digest.hpp"
#include "runners/liger_import.hpp"
#include "storage/detail/database.hpp"
#include "storage/detail/postgres.hpp"
#include "storage/fleet.hpp"
#include "storage/importer.hpp"
#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/neighbours.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using testing::fixture_record;
using testing::kTvdFixture;

core::Record later(const core::Record& base, int minutes) {
  core::Record r = base;
  r.run.observed_at += std::chrono::minutes{minutes};
  r.run.source_native.external_id =
      "tvd/backward/torch/nvidia-h100-80gb-hbm3/tokens16384-vocab65536-fp32/" +
      core::format_id_timestamp(r.run.observed_at);
  return r;
}

TEST(PostgresqlSpelling, ParametersAndSqliteFunctionsAreTranslatedAndQuotedTextIsNot) {
  EXPECT_EQ(translate_to_postgresql("SELECT a FROM t WHERE b = ?1 AND c = ?12").text,
            "SELECT a FROM t WHERE b = $1 AND c = $12");
  EXPECT_EQ(translate_to_postgresql("SELECT json_extract(body, '$.a.b') FROM d WHERE "
                                    "json_valid(body) AND x IN (SELECT value FROM json_each(?1))")
                .text,
            "SELECT kw_json_extract(body, '$.a.b') FROM d WHERE kw_json_valid(body) AND x IN "
            "(SELECT value FROM kw_json_each($1))");
  EXPECT_EQ(translate_to_postgresql("SELECT * FROM outbox INDEXED BY outbox_due WHERE "
                                    "instr(payload, ?1) > 0")
                .text,
            "SELECT * FROM outbox WHERE strpos(payload, $1) > 0");
  // The parameters the text names, a gap among them left unnamed ($2 here is declared text).
  EXPECT_EQ(translate_to_postgresql("SELECT ?3 WHERE a = ?1 AND b = '?2'").parameters,
            (std::vector<bool>{true, false, true}));
  // Inside quotes nothing changes; a name that only ends like a function is not one.
  EXPECT_EQ(translate_to_postgresql("SELECT '?1 json_each(' , my_json_each(?2)").text,
            "SELECT '?1 json_each(' , my_json_each($2)");
}

TEST(PostgresqlConnection, APasswordInTheConnectionStringIsRefusedWithoutShowingIt) {
  auto opened = Connection::open("postgresql://kw:s3cr3t-pw@127.0.0.1:1/kw", OpenMode::Create);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, core::ErrorCode::InvalidArgument);
  EXPECT_EQ(opened.error().message.find("s3cr3t-pw"), std::string::npos) << opened.error().message;
  EXPECT_NE(opened.error().message.find("passfile"), std::string::npos) << opened.error().message;
  auto keywords =
      Connection::open_postgresql("host=127.0.0.1 password=s3cr3t-pw", OpenMode::Create);
  ASSERT_FALSE(keywords);
  EXPECT_EQ(keywords.error().message.find("s3cr3t-pw"), std::string::npos);
}

TEST(PostgresqlConnection, NoServerIsUnavailableAndNamesTheServerNotThePassfile) {
  // A port nothing listens on: refused at once.
  auto opened = Connection::open("postgresql://kw@127.0.0.1:9/kw", OpenMode::Create);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, core::ErrorCode::Unavailable);
  EXPECT_NE(opened.error().message.find("postgresql://127.0.0.1:9/kw"), std::string::npos)
      << opened.error().message;
}

TEST(PostgresqlConnection, TheSchemaIsCreatedOnceAndAReaderOfAnEmptyDatabaseIsToldWhy) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  auto reader = Connection::open(url, OpenMode::ReadOnly);
  ASSERT_FALSE(reader);
  EXPECT_EQ(reader.error().code, core::ErrorCode::NotFound);
  EXPECT_NE(reader.error().message.find("no kernelwatch schema"), std::string::npos);
  EXPECT_EQ(reader.error().message.find(server.password()), std::string::npos);
  // Two writers opening at once create it once (the advisory lock); then a reader opens.
  auto first =
      std::async(std::launch::async, [&] { return Connection::open(url, OpenMode::Create); });
  auto second = Connection::open(url, OpenMode::Create);
  auto first_opened = first.get();
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_TRUE(first_opened) << first_opened.error().message;
  auto again = Connection::open(url, OpenMode::ReadOnly);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*RunStore(*again).run_count(), 0);
  // A reader cannot write.
  auto tx = again->begin();
  ASSERT_TRUE(tx);
  auto written = RunStore(*again).insert_run(*tx, fixture_record(kTvdFixture), "");
  EXPECT_FALSE(written);
}

TEST(PostgresqlConnection, TwoWritersStoreRunsOfOneNewKeyAtOnceAndTheKeyIsStoredOnce) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  auto a = Connection::open(url, OpenMode::Create);
  auto b = Connection::open(url, OpenMode::Create);
  ASSERT_TRUE(a && b);
  const core::Record base = fixture_record(kTvdFixture);
  auto tx_a = a->begin();
  ASSERT_TRUE(tx_a);
  auto in_a = RunStore(*a).insert_run(*tx_a, later(base, 1), "");
  ASSERT_TRUE(in_a) << in_a.error().message;
  // b's insert of the same new key waits on a's uncommitted key row, then finds it.
  auto in_b = std::async(std::launch::async, [&]() -> Result<Insertion> {
    auto tx_b = KW_TRY(b->begin());
    auto inserted = KW_TRY(RunStore(*b).insert_run(tx_b, later(base, 2), ""));
    KW_TRY(tx_b.commit());
    return inserted;
  });
  ASSERT_TRUE(tx_a->commit());
  auto b_done = in_b.get();
  ASSERT_TRUE(b_done) << b_done.error().message;
  EXPECT_EQ(b_done->key_id, in_a->key_id);
  EXPECT_EQ(*RunStore(*a).run_count(), 2);
  auto keys = RunStore(*b).keys();
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ(keys->front().run_count, 2);
}

TEST(PostgresqlConnection, AServerKilledMidBatchLosesOnlyTheUncommittedBatchAndIsReconnected) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  auto connection = Connection::open(url, OpenMode::Create);
  ASSERT_TRUE(connection) << connection.error().message;
  RunStore runs(*connection);
  const core::Record base = fixture_record(kTvdFixture);
  {
    auto tx = connection->begin();
    ASSERT_TRUE(tx);
    for (int m = 0; m < 3; ++m) ASSERT_TRUE(runs.insert_run(*tx, later(base, m), ""));
    ASSERT_TRUE(tx->commit());  // acknowledged
  }
  {
    auto tx = connection->begin();
    ASSERT_TRUE(tx);
    for (int m = 3; m < 6; ++m) ASSERT_TRUE(runs.insert_run(*tx, later(base, m), ""));
    server.stop(/*immediate=*/true);  // a crash: no checkpoint, the session cut off
    auto committed = tx->commit();
    ASSERT_FALSE(committed);
    EXPECT_EQ(committed.error().code, core::ErrorCode::Unavailable) << committed.error().message;
    EXPECT_EQ(committed.error().message.find(server.password()), std::string::npos);
  }
  // Down: a statement says so; up again: the same connection reconnects by itself.
  auto while_down = runs.run_count();
  ASSERT_FALSE(while_down);
  EXPECT_EQ(while_down.error().code, core::ErrorCode::Unavailable);
  server.start_again();
  auto count = runs.run_count();
  ASSERT_TRUE(count) << count.error().message;
  EXPECT_EQ(*count, 3);
  // The lost batch, posted again, is stored; the acknowledged one again is a duplicate.
  auto tx = connection->begin();
  ASSERT_TRUE(tx) << tx.error().message;
  for (int m = 0; m < 6; ++m) {
    auto inserted = runs.insert_run(*tx, later(base, m), "");
    ASSERT_TRUE(inserted) << inserted.error().message;
    EXPECT_EQ(inserted->outcome, m < 3 ? InsertOutcome::Duplicate : InsertOutcome::Inserted) << m;
  }
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(*runs.run_count(), 6);
  // A restart between two batches: the next batch's first statement finds the session gone and
  // runs again on a new one, so the batch goes through.
  server.stop(/*immediate=*/false);
  server.start_again();
  auto next = connection->begin();
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_TRUE(runs.insert_run(*next, later(base, 6), ""));
  ASSERT_TRUE(next->commit());
  EXPECT_EQ(*runs.run_count(), 7);
}

TEST(PostgresqlConnection, ADaemonsClaimRefusesASecondAndIsNeverRunWithoutAfterAReconnect) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  auto first = Connection::open(url, OpenMode::Create);
  auto second = Connection::open(url, OpenMode::Create);
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->claim_for_daemon());
  auto refused = second->claim_for_daemon();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::Unavailable);
  EXPECT_NE(refused.error().message.find("another kernelwatch daemon"), std::string::npos);
  // The server restarts: both sessions are gone, and the second claims the database first.
  server.stop(/*immediate=*/true);
  server.start_again();
  ASSERT_TRUE(second->claim_for_daemon());
  // The first reconnects but cannot take its claim again: nothing runs on it, now or later.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto count = RunStore(*first).run_count();
    ASSERT_FALSE(count) << attempt;
    EXPECT_NE(count.error().message.find("another kernelwatch daemon"), std::string::npos)
        << count.error().message;
  }
  // A reader needs no claim.
  auto reader = Connection::open(url, OpenMode::ReadOnly);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_TRUE(RunStore(*reader).run_count());
}

// A fleet's database (docs/FLEET.md): each host's daemon in its own schema, named by libpq's
// search_path (what storage.schema writes into the URL): created at the first open, its tables
// its own, and claimed by one daemon each.
TEST(PostgresqlConnection, EachHostsSchemaOfOneDatabaseIsCreatedItsOwnAndClaimedOnce) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  const auto in_schema = [&](const std::string& name) {
    return url + "&options=-csearch_path%3D" + name;
  };
  // A reader of a schema nobody created is told so; nothing is created for it.
  auto nobody = Connection::open(in_schema("gpu_c"), OpenMode::ReadOnly);
  ASSERT_FALSE(nobody);
  EXPECT_EQ(nobody.error().code, core::ErrorCode::NotFound);
  EXPECT_NE(nobody.error().message.find("does not exist"), std::string::npos)
      << nobody.error().message;
  EXPECT_NE(nobody.error().message.find("schema gpu_c"), std::string::npos)
      << nobody.error().message;
  auto a = Connection::open(in_schema("gpu_a"), OpenMode::Create);
  auto b = Connection::open(in_schema("gpu_b"), OpenMode::Create);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_TRUE(a->claim_for_daemon());
  auto b_claim = b->claim_for_daemon();
  ASSERT_TRUE(b_claim) << b_claim.error().message;
  auto a_again = Connection::open(in_schema("gpu_a"), OpenMode::Create);
  ASSERT_TRUE(a_again) << a_again.error().message;
  auto refused = a_again->claim_for_daemon();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("another kernelwatch daemon"), std::string::npos);
  EXPECT_NE(refused.error().message.find("schema gpu_a"), std::string::npos)
      << refused.error().message;
  auto tx = a->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(RunStore(*a).insert_run(*tx, fixture_record(kTvdFixture), ""));
  ASSERT_TRUE(tx->commit());
  EXPECT_EQ(*RunStore(*a).run_count(), 1);
  EXPECT_EQ(*RunStore(*b).run_count(), 0) << "gpu_b's runs are its own";
  // A search_path list that names a missing schema first creates that one: a host's tables never
  // land in the next schema of the list.
  auto listed = Connection::open(url + "&options=-csearch_path%3Dgpu_d,public", OpenMode::Create);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_TRUE(listed->claim_for_daemon());
  auto d_reader = Connection::open(in_schema("gpu_d"), OpenMode::ReadOnly);
  ASSERT_TRUE(d_reader) << d_reader.error().message;
  // The database's default schema holds no kernelwatch tables: only the hosts' schemas do.
  auto plain = Connection::open(url, OpenMode::ReadOnly);
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().code, core::ErrorCode::NotFound) << plain.error().message;
  // A kernelwatch that claimed the whole database (one daemon per database) and this one refuse
  // each other: its claim, taken by hand here, keeps every schema's daemon out.
  // (On a database of its own: the daemons above share that claim, which keeps an older daemon
  // out of theirs.)
  const std::string other = server.create_database() + "&options=-csearch_path%3Dgpu_e";
  auto old_daemon = Connection::open(other, OpenMode::Create);
  ASSERT_TRUE(old_daemon);
  ASSERT_TRUE(old_daemon->database().exec("SELECT pg_try_advisory_lock(8563983191375601006)"));
  auto refused_old = Connection::open(url, OpenMode::Create);
  ASSERT_TRUE(refused_old);
  EXPECT_EQ(refused_old->database().query_int("SELECT CASE WHEN "
                                              "pg_try_advisory_lock(8563983191375601006) THEN 1 "
                                              "ELSE 0 END"),
            0)
      << "an older daemon's claim of a database whose schemas have daemons";
  auto e = Connection::open(other, OpenMode::Create);
  ASSERT_TRUE(e);
  auto e_claim = e->claim_for_daemon();
  ASSERT_FALSE(e_claim);
  EXPECT_NE(e_claim.error().message.find("an older kernelwatch daemon"), std::string::npos)
      << e_claim.error().message;
}

// What one daemon shows of its fleet: every host's schema in the database, problems first,
// read on its own connection; a schema it cannot read is listed as such, never hiding the rest.
TEST(PostgresqlConnection, TheFleetListsEveryHostsSchemaProblemsFirst) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  const auto in_schema = [&](const std::string& name) {
    return url + "&options=-csearch_path%3D" + name;
  };
  auto a = Connection::open(in_schema("gpu_a"), OpenMode::Create);
  auto b = Connection::open(in_schema("gpu_b"), OpenMode::Create);
  auto c = Connection::open(in_schema("gpu_c"), OpenMode::Create);
  ASSERT_TRUE(a && b && c);
  const core::Record base = fixture_record(kTvdFixture);
  for (auto* host : {&*a, &*b}) {
    auto tx = host->begin();
    ASSERT_TRUE(tx);
    auto stored = RunStore(*host).insert_run(*tx, base, "");
    ASSERT_TRUE(stored) << stored.error().message;
    if (host == &*b) {
      AlertRow row;
      row.alert.id = core::AlertId("sha256:key@b");
      row.alert.key = {"tvd/backward",
                       "torch",
                       "tokens16384-vocab65536-fp32",
                       "nvidia-h100-80gb-hbm3",
                       "liger-bench-do-bench-backward",
                       "sha256:key"};
      row.alert.fired = {"run/1", base.run.observed_at, std::chrono::nanoseconds(1)};
      row.alert.onset = row.alert.fired;
      row.key_id = stored->key_id;
      row.updated_at = base.run.observed_at;
      ASSERT_TRUE(AlertStore(*host).upsert(*tx, row));
    }
    ASSERT_TRUE(tx->commit());
  }
  ASSERT_TRUE(a->database().exec(
      "CREATE SCHEMA broken; CREATE TABLE broken.kernelwatch_schema (version INTEGER)"));
  auto reader = Connection::open(in_schema("gpu_a"), OpenMode::ReadOnly);
  ASSERT_TRUE(reader) << reader.error().message;
  const auto fleet = fleet_hosts(*reader);
  ASSERT_TRUE(fleet) << fleet.error().message;
  std::vector<std::string> order;
  for (const auto& host : *fleet) order.push_back(host.schema);
  // broken (unreadable), gpu_b (firing), gpu_c (no run yet), gpu_a (its newest run).
  EXPECT_EQ(order, (std::vector<std::string>{"broken", "gpu_b", "gpu_c", "gpu_a"}));
  ASSERT_EQ(fleet->size(), 4u);
  EXPECT_NE((*fleet)[0].unreadable.find("keys"), std::string::npos) << (*fleet)[0].unreadable;
  EXPECT_EQ((*fleet)[1].firing, 1);
  ASSERT_EQ((*fleet)[1].open.size(), 1u);
  EXPECT_EQ((*fleet)[1].open[0].alert.id.long_form(), "sha256:key@b");
  EXPECT_EQ((*fleet)[1].keys, 1);
  EXPECT_FALSE((*fleet)[2].newest_run);
  EXPECT_EQ((*fleet)[3].newest_run, base.run.observed_at);
  EXPECT_EQ((*fleet)[3].firing + (*fleet)[3].acknowledged, 0);
  for (const auto& host : *fleet) EXPECT_EQ(host.own, host.schema == "gpu_a") << host.schema;
}

// storage.warm_start's read of the fleet: a key's newest passed runs from before its first run
// here, over the other hosts' schemas (never the reader's own), merged newest first; a key with
// fewer than min_runs is left out; a schema that cannot be read is named and the others read.
TEST(PostgresqlConnection, TheFleetSeedsAKeyFromTheOtherHostsNewestPassedRunsBeforeItsFirstRun) {
  KW_REQUIRE_POSTGRES(server);
  const std::string url = server.create_database();
  const auto in_schema = [&](const std::string& name) {
    return std::filesystem::path(url + "&options=-csearch_path%3D" + name);
  };
  const core::Record base = fixture_record(kTvdFixture);
  const auto store = [&](const std::string& schema, const std::vector<core::Record>& records) {
    auto host = Connection::open(in_schema(schema), OpenMode::Create);
    ASSERT_TRUE(host) << host.error().message;
    auto tx = host->begin();
    ASSERT_TRUE(tx);
    for (const auto& record : records) {
      auto stored = RunStore(*host).insert_run(*tx, record, "");
      ASSERT_TRUE(stored) << stored.error().message;
    }
    ASSERT_TRUE(tx->commit());
  };
  // gpu_a: hourly; gpu_b: hourly, half an hour later, one failed run and one at gpu_a's instant;
  // gpu_c (the reader's own): runs that must never be read back.
  std::vector<core::Record> a;
  std::vector<core::Record> b;
  for (int h = 0; h < 8; ++h) {
    a.push_back(later(base, 60 * h));
    b.push_back(later(base, 60 * h + 30));
  }
  b[2].run.status = core::RunStatus::RuntimeError;
  b[2].run.status_reason = "the benchmark failed";
  b.push_back(later(base, 60 * 5));  // gpu_a's run at 5 h: the same run of the key here
  store("gpu_a", a);
  store("gpu_b", b);
  store("gpu_c", {later(base, 90), later(base, 150)});
  auto reader = Connection::open(in_schema("gpu_c"), OpenMode::Create);
  ASSERT_TRUE(reader) << reader.error().message;
  ASSERT_TRUE(reader->database().exec(
      "CREATE SCHEMA broken; CREATE TABLE broken.kernelwatch_schema (version INTEGER)"));

  const std::string digest = core::Run::of(base)->key_digest();
  const core::Timestamp before = base.run.observed_at + std::chrono::minutes(6 * 60);
  const std::vector<SeedRequest> wanted{{digest, before},
                                        {"sha256:not-a-key-of-the-fleet", before}};
  const auto seeds = fleet_seeds(*reader, in_schema, wanted, 5, 3);
  ASSERT_TRUE(seeds) << seeds.error().message;
  ASSERT_EQ(seeds->problems.size(), 1u);
  EXPECT_NE(seeds->problems[0].find("schema broken: "), std::string::npos) << seeds->problems[0];
  ASSERT_EQ(seeds->keys.size(), 1u);
  const auto& key = seeds->keys.at(digest);
  EXPECT_EQ(key.hosts, (std::vector<std::string>{"gpu_a", "gpu_b"}));
  // Before 6 h: a's 0..5 h, b's 0:30..5:30 less the failed 2:30 (the newest five, oldest first).
  std::vector<std::int64_t> minutes;
  for (const auto& record : key.records) {
    EXPECT_EQ(record.run.status, core::RunStatus::Passed);
    minutes.push_back(std::chrono::duration_cast<std::chrono::minutes>(record.run.observed_at -
                                                                       base.run.observed_at)
                          .count());
  }
  EXPECT_EQ(minutes, (std::vector<std::int64_t>{210, 240, 270, 300, 330}));
  // More runs asked for than the fleet holds from before: too few, the key is left out.
  const auto too_few = fleet_seeds(*reader, in_schema, wanted, 50, 20);
  ASSERT_TRUE(too_few) << too_few.error().message;
  EXPECT_TRUE(too_few->keys.empty());
  // A SQLite file holds one host: no fleet.
  kernelwatch::testing::TempDir dir;
  auto file = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(file);
  const auto none = fleet_seeds(*file, in_schema, wanted, 5, 3);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->keys.empty() && none->problems.empty());
}

TEST(PostgresqlConnection, TextWithANulByteIsRefusedAsBadInputAndTheBatchIsNotCommitted) {
  KW_REQUIRE_POSTGRES(server);
  auto connection = Connection::open(server.create_database(), OpenMode::Create);
  ASSERT_TRUE(connection);
  core::Record record = fixture_record(kTvdFixture);
  record.run.metadata.name = std::string("with\0nul", 8);
  auto tx = connection->begin();
  ASSERT_TRUE(tx);
  auto inserted = RunStore(*connection).insert_run(*tx, record, "");
  ASSERT_FALSE(inserted);
  EXPECT_EQ(inserted.error().code, core::ErrorCode::ParseError) << inserted.error().message;
  EXPECT_NE(inserted.error().message.find("NUL byte"), std::string::npos);
}

// Every view of one history, as text: keys, runs newest first (whole records), and the replay's
// summaries in time order.
std::string views(Connection& connection, std::int64_t page_rows = 20000) {
  RunStore runs(connection);
  runs.set_page_rows(page_rows);
  std::string out;
  auto keys = runs.keys();
  EXPECT_TRUE(keys) << keys.error().message;
  for (const auto& key : keys.value_or(std::vector<KeySummary>{})) {
    out += "key " + key.key.digest() + " " + key.key.display() + " " +
           std::to_string(key.run_count) + " " + core::format_timestamp(key.first_observed) + " " +
           core::format_timestamp(key.last_observed) + "\n";
    auto history = runs.key_summaries(key.id, 5);
    EXPECT_TRUE(history);
    for (const auto& run : history.value_or(std::vector<RunSummary>{})) {
      out += "  newest " + core::format_timestamp(run.observed_at) + "\n";
    }
  }
  auto stored = runs.runs({});
  RunFilter limited;
  limited.provider = "liger";
  limited.limit = 30;
  auto newest = runs.runs(limited);
  EXPECT_TRUE(newest) << newest.error().message;
  for (const auto& run : newest.value_or(std::vector<StoredRun>{})) {
    out += "newest liger " + run.record.run.source_native.external_id + "\n";
  }
  EXPECT_TRUE(stored) << stored.error().message;
  for (const auto& run : stored.value_or(std::vector<StoredRun>{})) {
    out += "run " + core::canonical_json(core::to_json(run.record)) + " " +
           run.implementation_version + "\n";
  }
  EXPECT_TRUE(runs.for_each_in_time_order([&](const RunSummary& run) -> core::Status {
    out += "summary " + core::format_timestamp(run.observed_at) + " " + run.external_id + " " +
           std::string(core::to_string(run.status)) + " " +
           std::to_string(run.median.value_or(std::chrono::nanoseconds{-1}).count()) + " " +
           run.implementation_digest + " " + run.software.dump() + " " + run.source + " " +
           run.placement->host + "/" + run.placement->gpu + "\n";
    return {};
  }));
  auto medians = runs.recent_medians(3);
  EXPECT_TRUE(medians);
  for (const auto& [key_id, recent] :
       medians.value_or(std::map<std::int64_t, RunStore::RecentMedians>{})) {
    out += "medians " + std::to_string(recent.runs);
    for (auto m : recent.medians_ns) out += " " + std::to_string(m);
    out += "\n";
  }
  return out;
}

TEST(PostgresqlConnection, AnImportedHistoryReadsTheSameAsFromSqlite) {
  KW_REQUIRE_POSTGRES(server);
  kernelwatch::testing::TempDir dir;
  const std::vector<std::filesystem::path> files = {
      kernelwatch::testing::fixture(kTvdFixture),
      kernelwatch::testing::fixture(testing::kLayerNormFixture),
      kernelwatch::testing::liger_csv("weekly_ci.tvd_layer_norm.csv")};
  const auto now = core::Timestamp{std::chrono::hours{24 * 365 * 60}};  // after every run
  auto sqlite = Connection::open(dir / "kw.db", OpenMode::Create);
  auto postgresql = Connection::open(server.create_database(), OpenMode::Create);
  ASSERT_TRUE(sqlite && postgresql);
  auto into_sqlite =
      import_files(*sqlite, files, InvalidPolicy::Skip, &runners::liger_csv_reader(), now);
  auto into_postgresql =
      import_files(*postgresql, files, InvalidPolicy::Skip, &runners::liger_csv_reader(), now);
  ASSERT_TRUE(into_sqlite) << into_sqlite.error().message;
  ASSERT_TRUE(into_postgresql) << into_postgresql.error().message;
  EXPECT_GT(into_postgresql->inserted, 1000u);
  EXPECT_EQ(into_postgresql->inserted, into_sqlite->inserted);
  EXPECT_EQ(into_postgresql->skipped, into_sqlite->skipped);
  const std::string expected = views(*sqlite);
  EXPECT_EQ(views(*postgresql), expected);
  // A replay from PostgreSQL walks pages: pages of 7 runs (ties of one observedAt across a page's
  // end among them) read the same.
  EXPECT_EQ(views(*postgresql, 7), expected);
  // The same import again stores nothing new.
  auto again =
      import_files(*postgresql, files, InvalidPolicy::Skip, &runners::liger_csv_reader(), now);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->inserted, 0u);
  EXPECT_EQ(again->duplicates, into_postgresql->inserted);
}

}  // namespace
}  // namespace kernelwatch::storage
