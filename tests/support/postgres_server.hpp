// A real PostgreSQL server for tests (Debian's postgresql-15): initdb and pg_ctl in a scratch
// folder, as an unprivileged user (nobody when the tests run as root: initdb refuses root), on
// a free port of 127.0.0.1, password authentication (scram-sha-256) with the password in a
// pgpass file that the connection URLs name. No mock: what cannot start is skipped loudly.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

namespace kernelwatch::testing {

class PostgresServer {
 public:
  // Starts a new server; nullptr with `why` set when the programs are missing or it cannot
  // start. `programs_missing` tells the two apart.
  static std::unique_ptr<PostgresServer> start(std::string& why, bool& programs_missing);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A new, empty database on this server; its URL (user, host, port, database, passfile: no
  // password). Throws when the server refuses.
  [[nodiscard]] std::string create_database();
  [[nodiscard]] std::string url(const std::string& database) const;
  [[nodiscard]] const std::string& password() const { return password_; }
  [[nodiscard]] int port() const { return port_; }

  // Stops the server: `immediate` is a crash (no checkpoint, clients cut off mid-transaction);
  // start_again() brings it back on the same port and data. Both wait for pg_ctl to finish.
  void stop(bool immediate);
  void start_again();

 private:
  PostgresServer() = default;
  void pg_ctl(const std::string& action, const std::string& extra = "");

  std::filesystem::path bin_;
  std::filesystem::path dir_;  // owned by the server's user; removed on destruction
  std::filesystem::path passfile_;
  std::string password_;
  int port_ = 0;
  int databases_ = 0;
  bool running_ = false;
};

// The one server of this test process, started at first use (nullptr: see why).
PostgresServer* shared_postgres(std::string& why, bool& programs_missing);

}  // namespace kernelwatch::testing

// KW_REQUIRE_POSTGRES(server): declares `server` (a PostgresServer&) or ends the test. Programs
// missing: FAIL under scripts/test (scripts/setup installs postgresql-15), skip elsewhere. A server
// that cannot start: the test is skipped, saying why (ctest names skipped tests in its summary).
#define KW_REQUIRE_POSTGRES(server)                                                             \
  std::string server##_why;                                                                     \
  bool server##_missing = false;                                                                \
  auto* server##_ptr = ::kernelwatch::testing::shared_postgres(server##_why, server##_missing); \
  if (server##_ptr == nullptr) {                                                                \
    if (server##_missing && ::kernelwatch::testing::neighbours_required()) {                    \
      FAIL() << server##_why;                                                                   \
    }                                                                                           \
    GTEST_SKIP() << "POSTGRESQL NOT TESTED: " << server##_why;                                  \
  }                                                                                             \
  ::kernelwatch::testing::PostgresServer& server = *server##_ptr
