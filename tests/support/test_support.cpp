#include "tests/support/test_support.hpp"
#include "tests/support/neighbours.hpp"

#include "core/digest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace kernelwatch::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/kernelwatch-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path data_dir() {
  return std::filesystem::path(KW_SOURCE_DIR) / "data";
}
std::filesystem::path fixture(const std::string& name) {
  return data_dir() / "kernelindex" / name;
}
std::filesystem::path liger_csv(const std::string& name) {
  return data_dir() / "liger" / name;
}
std::filesystem::path kernelwatch_binary() {
  return std::filesystem::path(KW_BINARY);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << content;
}

ProcessResult run_process(const std::filesystem::path& program,
                          const std::vector<std::string>& args) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> argv_storage;
  argv_storage.push_back(program.string());
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error("posix_spawn " + program.string() + ": " + std::strerror(rc));
  }

  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buffer[65536];
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

ProcessResult run_kernelwatch(const std::vector<std::string>& args) {
  return run_process(kernelwatch_binary(), args);
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  const auto executable = [](const std::filesystem::path& candidate) {
    std::error_code error;
    return std::filesystem::is_regular_file(candidate, error) &&
           ::access(candidate.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    return executable(name) ? std::optional<std::filesystem::path>(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  // Debian puts some daemons (nginx) in sbin, which a user's PATH may lack.
  dirs += ":/usr/local/sbin:/usr/sbin:/sbin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, end - begin);
    if (!dir.empty() && executable(std::filesystem::path(dir) / name)) {
      return std::filesystem::path(dir) / name;
    }
    begin = end + 1;
  }
  return std::nullopt;
}

bool neighbours_required() {
  const char* value = std::getenv("KERNELWATCH_REQUIRE_NEIGHBOURS");
  return value != nullptr && std::string(value) == "1";
}

nlohmann::json with_digests(nlohmann::json record) {
  nlohmann::json& spec = record["run"]["spec"];
  const nlohmann::json& labels = record["run"]["metadata"]["labels"];
  spec["environmentDigest"] = core::document_digest(record["environment"]);
  spec["protocolDigest"] = core::document_digest(record["protocol"]);
  spec["workloadDigest"] = core::digest_of({{"workload", labels.value("workload", "")}});
  spec["implementationDigest"] = core::digest_of({{"provider", labels.value("provider", "")}});
  return record;
}

}  // namespace kernelwatch::testing
