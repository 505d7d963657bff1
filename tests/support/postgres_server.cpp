#include "tests/support/postgres_server.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch::testing {
namespace {

constexpr unsigned kNobody = 65534;

// Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<version>/bin, off the PATH.
std::optional<std::filesystem::path> find_bin() {
  for (const char* dir :
       {"/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / "pg_ctl")) return dir;
  }
  const auto pg_ctl = find_program("pg_ctl");
  if (pg_ctl && std::filesystem::exists(pg_ctl->parent_path() / "initdb")) {
    return std::filesystem::canonical(*pg_ctl).parent_path();
  }
  return std::nullopt;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free port on 127.0.0.1");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// The program run as the server's user: itself, or nobody when this process is root.
ProcessResult run_as_server_user(const std::filesystem::path& program,
                                 const std::vector<std::string>& args) {
  if (::geteuid() != 0) return run_process(program, args);
  std::vector<std::string> wrapped = {"--reuid=" + std::to_string(kNobody),
                                      "--regid=" + std::to_string(kNobody), "--clear-groups", "--",
                                      program.string()};
  wrapped.insert(wrapped.end(), args.begin(), args.end());
  const auto setpriv = find_program("setpriv");
  if (!setpriv) return ProcessResult{127, "", "setpriv (util-linux) not found"};
  return run_process(*setpriv, wrapped);
}

std::string tail(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

}  // namespace

std::unique_ptr<PostgresServer> PostgresServer::start(std::string& why, bool& programs_missing) {
  const auto bin = find_bin();
  if (!bin) {
    programs_missing = true;
    why =
        "PostgreSQL's initdb and pg_ctl are not installed (Debian package postgresql-15); "
        "scripts/setup installs it";
    return nullptr;
  }
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->bin_ = *bin;
  std::string pattern = (std::filesystem::temp_directory_path() / "kw-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    why = "mkdtemp failed";
    return nullptr;
  }
  server->dir_ = pattern;
  std::mt19937_64 random(std::random_device{}());
  server->password_ = "kw" + std::to_string(random());
  write_file(server->dir_ / "pwfile", server->password_ + "\n");
  if (::geteuid() == 0 && (::chown(server->dir_.c_str(), kNobody, kNobody) != 0 ||
                           ::chown((server->dir_ / "pwfile").c_str(), kNobody, kNobody) != 0)) {
    why = "cannot hand " + server->dir_.string() + " to nobody";
    return nullptr;
  }
  server->port_ = free_port();
  const auto init = run_as_server_user(
      server->bin_ / "initdb",
      {"-D", (server->dir_ / "data").string(), "-U", "kw", "--auth=scram-sha-256",
       "--pwfile=" + (server->dir_ / "pwfile").string(), "--no-locale", "-E", "UTF8", "--no-sync"});
  if (init.exit_code != 0) {
    why = "initdb failed (" + std::to_string(init.exit_code) + "): " + init.err + init.out;
    return nullptr;
  }
  // The client's password file lives beside, readable by this process only (libpq insists).
  server->passfile_ = server->dir_.string() + ".pgpass";
  write_file(server->passfile_,
             "127.0.0.1:" + std::to_string(server->port_) + ":*:kw:" + server->password_ + "\n");
  std::filesystem::permissions(
      server->passfile_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  try {
    server->start_again();
  } catch (const std::exception& error) {
    why = error.what();
    return nullptr;
  }
  return server;
}

void PostgresServer::pg_ctl(const std::string& action, const std::string& extra) {
  std::vector<std::string> args = {"-D", (dir_ / "data").string(), "-w", "-t", "60"};
  if (!extra.empty()) {
    args.push_back("-m");
    args.push_back(extra);
  }
  if (action == "start") {
    args.insert(args.end(), {"-l", (dir_ / "server.log").string(), "-o",
                             "-p " + std::to_string(port_) + " -k " + dir_.string() +
                                 " -c listen_addresses=127.0.0.1"});
  }
  args.push_back(action);
  const auto result = run_as_server_user(bin_ / "pg_ctl", args);
  if (result.exit_code != 0) {
    throw std::runtime_error("pg_ctl " + action + " failed: " + result.err + result.out + "\n" +
                             tail(dir_ / "server.log"));
  }
}

void PostgresServer::start_again() {
  pg_ctl("start");
  running_ = true;
}

void PostgresServer::stop(bool immediate) {
  pg_ctl("stop", immediate ? "immediate" : "fast");
  running_ = false;
}

PostgresServer::~PostgresServer() {
  try {
    if (running_) stop(/*immediate=*/true);
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  std::filesystem::remove(passfile_, ec);
}

std::string PostgresServer::url(const std::string& database) const {
  return "postgresql://kw@127.0.0.1:" + std::to_string(port_) + "/" + database +
         "?passfile=" + passfile_.string();
}

std::string PostgresServer::create_database() {
  const std::string name =
      "kw_test_" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  const auto psql = bin_ / "psql";
  const auto result = run_process(
      std::filesystem::exists(psql) ? psql : "/usr/bin/psql",
      {"-X", "-q", "-v", "ON_ERROR_STOP=1", url("postgres"), "-c", "CREATE DATABASE " + name});
  if (result.exit_code != 0) throw std::runtime_error("CREATE DATABASE failed: " + result.err);
  return url(name);
}

PostgresServer* shared_postgres(std::string& why, bool& programs_missing) {
  static std::string start_why;
  static bool start_missing = false;
  static std::unique_ptr<PostgresServer> server = PostgresServer::start(start_why, start_missing);
  why = start_why;
  programs_missing = start_missing;
  return server.get();
}

}  // namespace kernelwatch::testing
