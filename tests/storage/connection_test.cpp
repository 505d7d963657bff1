#include "storage/connection.hpp"

#include <gtest/gtest.h>

#include "storage/run_store.hpp"
#include "tests/storage/storage_test_support.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::read_file;
using kernelwatch::testing::TempDir;
using kernelwatch::testing::write_file;
using testing::fixture_record;
using testing::kTvdFixture;

// A new database at `path` holding the TVD fixture's run, closed again.
void create_with_one_run(const std::filesystem::path& path) {
  auto connection = Connection::open(path, OpenMode::Create);
  ASSERT_TRUE(connection) << connection.error().message;
  auto tx = connection->begin();
  ASSERT_TRUE(tx);
  ASSERT_TRUE(RunStore(*connection).insert_run(*tx, fixture_record(kTvdFixture), ""));
  ASSERT_TRUE(tx->commit());
}

TEST(ConnectionTest, CreatesSchemaInWalMode) {
  TempDir dir;
  const auto path = dir / "kw.db";
  {
    auto connection = Connection::open(path, OpenMode::Create);
    ASSERT_TRUE(connection) << connection.error().message;
    EXPECT_EQ(connection->path(), path);
  }
  EXPECT_EQ(testing::user_version(path), kSchemaVersion);
  EXPECT_EQ(testing::pragma_text(path, "journal_mode"), "wal");
  // Reopening an up-to-date database runs no migration and keeps the data.
  auto again = Connection::open(path, OpenMode::Existing);
  ASSERT_TRUE(again);
  EXPECT_EQ(*RunStore(*again).run_count(), 0);
}

TEST(ConnectionTest, MissingFileIsNotCreatedUnlessAsked) {
  TempDir dir;
  for (OpenMode mode : {OpenMode::Existing, OpenMode::ReadOnly}) {
    auto connection = Connection::open(dir / "absent.db", mode);
    ASSERT_FALSE(connection);
    EXPECT_EQ(connection.error().code, core::ErrorCode::NotFound);
    EXPECT_NE(connection.error().message.find("absent.db: no such database"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "absent.db"));
  auto nested = Connection::open(dir / "no-such-dir" / "kw.db", OpenMode::Create);
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("does not exist"), std::string::npos);
}

TEST(ConnectionTest, NotASqliteFileIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "notes.db";
  const std::string content = "these are my notes, not a database\n" + std::string(4096, 'x');
  write_file(path, content);
  for (OpenMode mode : {OpenMode::Create, OpenMode::Existing, OpenMode::ReadOnly}) {
    auto connection = Connection::open(path, mode);
    ASSERT_FALSE(connection);
    EXPECT_EQ(connection.error().code, core::ErrorCode::NotADatabase);
    EXPECT_NE(connection.error().message.find("notes.db: not a SQLite database"), std::string::npos)
        << connection.error().message;
  }
  EXPECT_EQ(read_file(path), content);
  EXPECT_FALSE(std::filesystem::exists(dir / "notes.db-wal"));
}

TEST(ConnectionTest, ForeignSqliteDatabaseIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "other.db";
  testing::exec_sql(path,
                    "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos "
                    "VALUES (1, 'a');");
  const std::string before = read_file(path);
  auto connection = Connection::open(path, OpenMode::Create);
  ASSERT_FALSE(connection);
  EXPECT_EQ(connection.error().code, core::ErrorCode::NotADatabase);
  EXPECT_NE(connection.error().message.find("not kernelwatch's"), std::string::npos);
  EXPECT_EQ(read_file(path), before);
}

TEST(ConnectionTest, NewerSchemaIsRefusedAndUntouched) {
  TempDir dir;
  const auto path = dir / "future.db";
  ASSERT_NO_FATAL_FAILURE(create_with_one_run(path));
  testing::exec_sql(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  const std::string before = read_file(path);
  const std::string rows_before = testing::dump_database(path);
  for (OpenMode mode : {OpenMode::Create, OpenMode::Existing, OpenMode::ReadOnly}) {
    auto connection = Connection::open(path, mode);
    ASSERT_FALSE(connection);
    EXPECT_EQ(connection.error().code, core::ErrorCode::VersionTooNew);
    EXPECT_NE(connection.error().message.find("written by a newer kernelwatch (schema version " +
                                              std::to_string(kSchemaVersion + 1)),
              std::string::npos)
        << connection.error().message;
  }
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(testing::dump_database(path), rows_before);
}

TEST(ConnectionTest, UncommittedTransactionRollsBack) {
  TempDir dir;
  auto connection = Connection::open(dir / "kw.db", OpenMode::Create);
  ASSERT_TRUE(connection);
  RunStore runs(*connection);
  {
    auto tx = connection->begin();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(runs.insert_run(*tx, fixture_record(kTvdFixture), ""));
  }
  EXPECT_EQ(*runs.run_count(), 0);
  EXPECT_EQ(testing::dump_database(connection->path()).find("tokens16384"), std::string::npos);
}

// A reader never writes: a ReadOnly connection of a current file leaves it byte for byte as it
// was, and what it reads is what a writer committed.
TEST(ConnectionTest, ReadOnlyConnectionReadsWithoutWriting) {
  TempDir dir;
  const auto path = dir / "kw.db";
  ASSERT_NO_FATAL_FAILURE(create_with_one_run(path));
  const std::string rows_before = testing::dump_database(path);
  const std::string before = read_file(path);
  auto reader = Connection::open(path, OpenMode::ReadOnly);
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(*RunStore(*reader).run_count(), 1);
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(testing::dump_database(path), rows_before);
}

}  // namespace
}  // namespace kernelwatch::storage
