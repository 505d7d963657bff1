#include "storage/detail/database.hpp"

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace kernelwatch::storage {
namespace {

using kernelwatch::testing::TempDir;

// A bare SQLite file with one small table; the statement cache and binds are tested below the
// kernelwatch schema.
class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = Database::open(path_, OpenMode::Create);
    ASSERT_TRUE(opened) << opened.error().message;
    db_ = std::move(*opened);
    ASSERT_TRUE(
        db_->exec("CREATE TABLE t (k INTEGER, v TEXT); "
                  "INSERT INTO t VALUES (1, 'one'), (2, 'two');"));
  }

  // The first column of the first row `sql` yields for k, as text ("" when there is no row).
  std::string first(const std::string& sql, std::int64_t k) {
    auto stmt = db_->statement(sql);
    EXPECT_TRUE(stmt) << stmt.error().message;
    if (!stmt) return "";
    (*stmt)->bind(1, k);
    auto row = (*stmt)->step();
    EXPECT_TRUE(row) << row.error().message;
    return row && *row ? (*stmt)->column_text(0) : "";
  }

  std::int64_t rows() { return db_->query_int("SELECT count(*) FROM t").value_or(-1); }

  TempDir dir_;
  const std::filesystem::path path_ = dir_ / "t.db";
  std::unique_ptr<Database> db_;
};

// The bug a pointer-keyed cache had: one buffer rewritten with another query (same address,
// other text) got the first query's statement back.
TEST_F(DatabaseTest, TextBuiltAtRunTimeInTheSameBufferGetsItsOwnStatement) {
  std::string sql;
  sql.reserve(128);
  const char* const buffer = sql.data();
  for (const auto& [column, k, expected] :
       {std::tuple{"v", 2, "two"}, std::tuple{"k", 2, "2"}, std::tuple{"upper(v)", 1, "ONE"},
        std::tuple{"v", 1, "one"}}) {
    sql.assign("SELECT ").append(column).append(" FROM t WHERE k = ?1");
    ASSERT_EQ(sql.data(), buffer) << "the test needs one buffer for every query";
    EXPECT_EQ(first(sql, k), expected) << sql;
  }
  EXPECT_EQ(db_->cached_statements(), 3u);  // "v" came twice: one statement
}

TEST_F(DatabaseTest, EqualTextBuiltTwiceSharesOneStatement) {
  const std::string prefix = "SELECT v FROM t ";
  const std::string a = prefix + "WHERE k = ?1";
  const std::string b = prefix + "WHERE k = ?1";
  const std::string other = prefix + "WHERE k <> ?1";
  ASSERT_NE(a.data(), b.data());
  const Statement* shared = nullptr;
  {
    auto stmt = db_->statement(a);
    ASSERT_TRUE(stmt);
    shared = &**stmt;
  }
  {
    auto stmt = db_->statement(b);
    ASSERT_TRUE(stmt);
    EXPECT_EQ(&**stmt, shared);
  }
  EXPECT_EQ(first(a, 1), "one");
  EXPECT_EQ(first(b, 2), "two");
  EXPECT_EQ(first(other, 1), "two");
  EXPECT_EQ(db_->cached_statements(), 2u);
}

TEST_F(DatabaseTest, EachUseStartsUnboundAtTheFirstRow) {
  EXPECT_EQ(first("SELECT v FROM t WHERE k >= ?1 ORDER BY k", 1), "one");
  EXPECT_EQ(first("SELECT v FROM t WHERE k >= ?1 ORDER BY k", 1), "one");  // not "two"
  auto stmt = db_->statement("SELECT v FROM t WHERE k >= ?1 ORDER BY k");
  ASSERT_TRUE(stmt);
  auto row = (*stmt)->step();  // ?1 is NULL again: k >= NULL matches nothing
  ASSERT_TRUE(row);
  EXPECT_FALSE(*row);
}

TEST_F(DatabaseTest, ABindToAParameterTheStatementLacksFailsTheUseAndWritesNothing) {
  const char* insert = "INSERT INTO t (k, v) VALUES (?1, ?2)";
  for (int bad : {0, 3}) {
    SCOPED_TRACE(bad);
    auto stmt = db_->statement(insert);
    ASSERT_TRUE(stmt);
    (*stmt)->bind(1, std::int64_t{3}).bind(2, std::string_view("three"));
    (*stmt)->bind(bad, std::int64_t{7});
    (*stmt)->bind(-1, std::int64_t{8});  // a second bad bind: the first one is reported
    auto ok = (*stmt)->run();
    ASSERT_FALSE(ok);
    EXPECT_EQ(ok.error().code, core::ErrorCode::Internal);
    EXPECT_EQ(ok.error().message.rfind(
                  path_.string() + ": binding parameter " + std::to_string(bad) + " failed: ", 0),
              0u)
        << ok.error().message;
    // step() refuses as run() did: the statement never runs half-bound.
    EXPECT_FALSE((*stmt)->step());
  }
  EXPECT_EQ(rows(), 2);
  // The error belongs to that use: the next use, bound right, writes.
  {
    auto stmt = db_->statement(insert);
    ASSERT_TRUE(stmt);
    (*stmt)->bind(1, std::int64_t{3}).bind(2, std::string_view("three"));
    ASSERT_TRUE((*stmt)->run());
  }
  EXPECT_EQ(rows(), 3);
  EXPECT_EQ(first("SELECT v FROM t WHERE k = ?1", 3), "three");
}

TEST_F(DatabaseTest, EveryKindOfBindIsChecked) {
  const char* sql = "SELECT ?1";
  const auto fails = [&](auto bind) {
    auto stmt = db_->statement(sql);
    if (!stmt) return false;
    bind(**stmt);
    return !(*stmt)->step().has_value();
  };
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, std::int64_t{1}); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, std::string_view("x")); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, std::optional<std::int64_t>(1)); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, std::optional<std::int64_t>()); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, core::Timestamp{}); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind(2, std::optional<core::Timestamp>()); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind_null(2); }));
  EXPECT_TRUE(fails([](Statement& s) { s.bind_limit(2, 5); }));
  EXPECT_FALSE(fails([](Statement& s) { s.bind(1, std::int64_t{1}); }));
}

TEST_F(DatabaseTest, AStatementInUseIsNeverHandedOutTwice) {
  EXPECT_DEATH(
      {
        auto outer = db_->statement("SELECT v FROM t");
        auto inner = db_->statement("SELECT v FROM t");
      },
      "used again before its last use ended");
}

}  // namespace
}  // namespace kernelwatch::storage
