// The files the commands touch (issue #26's probe), through the real kernelwatch binary: `report`
// replaces what is in its folder instead of writing through links planted there and names the
// system's reason when it cannot write; the reading commands work on a database in a read-only
// folder (a read-only mount).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/neighbours.hpp"
#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_kernelwatch;
using testing::TempDir;
using testing::write_file;

// A database with the repository's two kernelindex fixtures and the TVD/LayerNorm Liger CSV.
fs::path imported(const TempDir& dir) {
  const fs::path db = dir / "kw.db";
  const auto import = run_kernelwatch(
      {"import", "--db", db.string(),
       testing::fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json").string(),
       testing::liger_csv("weekly_ci.tvd_layer_norm.csv").string()});
  EXPECT_EQ(import.exit_code, 0) << import.err;
  return db;
}

TEST(ReportFiles, LinksPlantedInTheFolderAreReplacedNeverWrittenThrough) {
  TempDir dir;
  const fs::path db = imported(dir);
  const fs::path out = dir / "site";
  fs::create_directories(out / "assets");
  write_file(dir / "elsewhere.html", "precious\n");
  write_file(dir / "elsewhere.css", "precious css\n");
  fs::create_symlink(dir / "elsewhere.html", out / "index.html");
  fs::create_symlink(dir / "elsewhere.css", out / "assets" / "kw.css");
  // A dangling link: writing through it would create the file it names.
  fs::create_symlink(dir / "created-through-a-link.js", out / "assets" / "kw.js");

  const auto report = run_kernelwatch({"report", "--db", db.string(), "--out", out.string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(read_file(dir / "elsewhere.html") == "precious\n") << "written through a link";
  EXPECT_TRUE(read_file(dir / "elsewhere.css") == "precious css\n") << "written through a link";
  EXPECT_FALSE(fs::exists(dir / "created-through-a-link.js"));
  for (const char* name : {"index.html", "assets/kw.css", "assets/kw.js"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out / name))) << name;
  }
  EXPECT_NE(read_file(out / "index.html").find("<!doctype html>"), std::string::npos);
  // No temporary file is left behind.
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
  }
}

TEST(ReportFiles, AFolderInsideThatIsALinkIsRefused) {
  TempDir dir;
  const fs::path db = imported(dir);
  const fs::path out = dir / "site";
  fs::create_directories(out);
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", out / "keys");
  const auto report = run_kernelwatch({"report", "--db", db.string(), "--out", out.string()});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_NE(
      report.err.find("cannot write into " + (out / "keys").string() + ": it is a symbolic link"),
      std::string::npos)
      << report.err;
  EXPECT_TRUE(fs::is_empty(dir / "elsewhere"));
}

TEST(ReportFiles, AFileThatCannotBeWrittenNamesTheSystemsReason) {
  TempDir dir;
  const fs::path db = imported(dir);
  const fs::path out = dir / "site";
  // index.html is a folder: the page cannot take its place.
  fs::create_directories(out / "index.html");
  const auto report = run_kernelwatch({"report", "--db", db.string(), "--out", out.string()});
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_NE(report.err.find("cannot write " + (out / "index.html").string() + ": Is a directory"),
            std::string::npos)
      << report.err;
}

// How a folder is made read-only here: a read-only bind mount in a mount namespace of the command
// alone (root with the capability), else the folder's mode 0555 (any other user).
class ReadOnlyFolder {
 public:
  explicit ReadOnlyFolder(fs::path folder) : folder_(std::move(folder)) {
    if (::geteuid() == 0) {
      const auto unshare = testing::find_program("unshare");
      if (unshare) {
        const auto probe = testing::run_process(
            *unshare, {"--mount", "--propagation", "private", "/bin/sh", "-c",
                       "mount --bind -o ro \"$0\" \"$0\" && ! touch \"$0/.probe\" 2>/dev/null",
                       folder_.string()});
        if (probe.exit_code == 0) unshare_ = *unshare;
      }
      return;
    }
    fs::permissions(folder_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                 fs::perms::group_exec | fs::perms::others_read |
                                 fs::perms::others_exec);
    chmodded_ = true;
  }
  ReadOnlyFolder(const ReadOnlyFolder&) = delete;
  ReadOnlyFolder& operator=(const ReadOnlyFolder&) = delete;
  ~ReadOnlyFolder() {
    if (chmodded_) fs::permissions(folder_, fs::perms::owner_all, fs::perm_options::add);
  }
  [[nodiscard]] bool possible() const { return chmodded_ || !unshare_.empty(); }
  [[nodiscard]] std::string how() const {
    return chmodded_ ? "a folder of mode 0555" : "a read-only bind mount";
  }

  // kernelwatch ARGS with the folder read-only.
  [[nodiscard]] testing::ProcessResult kernelwatch(const std::vector<std::string>& args) const {
    if (chmodded_) return run_kernelwatch(args);
    std::vector<std::string> wrapped{"--mount",
                                     "--propagation",
                                     "private",
                                     "/bin/sh",
                                     "-c",
                                     "mount --bind -o ro \"$0\" \"$0\" && exec \"$@\"",
                                     folder_.string(),
                                     testing::kernelwatch_binary().string()};
    wrapped.insert(wrapped.end(), args.begin(), args.end());
    return testing::run_process(unshare_, wrapped);
  }

 private:
  fs::path folder_;
  fs::path unshare_;
  bool chmodded_ = false;
};

// Issue 26: `keys` on a read-only mount failed ("unable to open database file": a WAL database's
// readers need its -shm file, which cannot be created there). Every reading command reads it,
// with the same answers as from a writable folder, and writes nothing there.
TEST(ReadOnlyDatabase, ReadingCommandsWorkInAFolderThatCannotBeWritten) {
  TempDir dir;
  // The same database twice: one in a folder that stays writable (the expected answers), one
  // in the folder made read-only, as `import` left it (closed cleanly: no -wal, no -shm).
  const fs::path db = imported(dir);
  fs::create_directories(dir / "data");
  const fs::path read_only_db = dir / "data" / "kw.db";
  fs::copy_file(db, read_only_db);
  ASSERT_FALSE(fs::exists(db.string() + "-wal"));

  const std::vector<std::vector<std::string>> commands = {
      {"keys", "--json"},
      {"keys"},
      {"history", "--limit", "20", "--json"},
      {"backtest", "--json"},
  };
  const auto with_db = [](std::vector<std::string> command, const fs::path& file) {
    command.insert(command.begin() + 1, {"--db", file.string()});
    return command;
  };
  std::vector<testing::ProcessResult> writable;
  for (const auto& command : commands) {
    writable.push_back(run_kernelwatch(with_db(command, db)));
    ASSERT_EQ(writable.back().exit_code, 0) << command[0] << ": " << writable.back().err;
  }
  std::vector<fs::path> before;
  for (const auto& entry : fs::directory_iterator(dir / "data")) before.push_back(entry.path());

  ReadOnlyFolder read_only(dir / "data");
  if (!read_only.possible()) {
    GTEST_SKIP() << "cannot make a read-only folder here (root without CAP_SYS_ADMIN)";
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const auto result = read_only.kernelwatch(with_db(commands[i], read_only_db));
    EXPECT_EQ(result.exit_code, 0) << read_only.how() << ": " << commands[i][0] << " "
                                   << commands[i].back() << ": " << result.err;
    // The same answers (the table of `keys` names the database file: compare the JSON ones).
    if (commands[i].back() == "--json") {
      EXPECT_TRUE(result.out == writable[i].out) << commands[i][0] << " answers differently";
    }
  }
  const auto report = read_only.kernelwatch(
      {"report", "--db", read_only_db.string(), "--out", (dir / "site").string()});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(fs::exists(dir / "site" / "index.html"));
  std::vector<fs::path> after;
  for (const auto& entry : fs::directory_iterator(dir / "data")) after.push_back(entry.path());
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace kernelwatch
