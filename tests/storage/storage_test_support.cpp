#include "tests/storage/storage_test_support.hpp"

#include <sqlite3.h>

#include <stdexcept>
#include <vector>

namespace kernelwatch::storage::testing {
namespace {

struct Db {
  explicit Db(const std::filesystem::path& path, int flags = SQLITE_OPEN_READONLY) {
    if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
      throw std::runtime_error("open " + path.string());
    }
  }
  ~Db() { sqlite3_close_v2(db); }
  std::vector<std::vector<std::string>> query(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sqlite3_errmsg(db));
    }
    std::vector<std::vector<std::string>> rows;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
        row.emplace_back(text ? text : "NULL");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return rows;
  }
  sqlite3* db = nullptr;
};

}  // namespace

core::Record fixture_record(const char* name) {
  auto record = core::parse_record(
      nlohmann::json::parse(kernelwatch::testing::read_file(kernelwatch::testing::fixture(name))));
  EXPECT_TRUE(record) << name << ": " << record.error().message;
  return record ? std::move(*record) : core::Record{};
}

void FreshDatabase::SetUp() {
  auto opened = Connection::open(dir_ / "kw.db", OpenMode::Create);
  ASSERT_TRUE(opened) << opened.error().message;
  connection_.emplace(std::move(*opened));
}

std::string dump_database(const std::filesystem::path& path) {
  Db db(path);
  std::string out;
  for (const auto& table :
       db.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
    out += "table " + table[0] + "\n";
    for (const auto& row : db.query("SELECT * FROM \"" + table[0] + "\" ORDER BY 1")) {
      for (const auto& cell : row) out += cell + "|";
      out += "\n";
    }
  }
  return out;
}

long long user_version(const std::filesystem::path& path) {
  return std::stoll(Db(path).query("PRAGMA user_version").at(0).at(0));
}

std::string pragma_text(const std::filesystem::path& path, const char* pragma) {
  return Db(path).query(std::string("PRAGMA ") + pragma).at(0).at(0);
}

void exec_sql(const std::filesystem::path& path, const std::string& sql) {
  Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  char* error = nullptr;
  if (sqlite3_exec(db.db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error(message);
  }
}

}  // namespace kernelwatch::storage::testing
