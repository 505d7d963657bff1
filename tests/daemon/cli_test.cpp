// The real kernelwatch binary as a user runs it: exit codes, messages, files.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace kernelwatch {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::liger_csv;
using testing::read_file;
using testing::run_kernelwatch;
using testing::TempDir;
using testing::write_file;

const std::string kTvd =
    fixture("tvd-backward-torch-h100-tokens16384-vocab65536-fp32.json").string();
const std::string kLayerNorm =
    fixture("layer-norm-backward-liger-h100-hidden16384-rows4096-fp32.json").string();
const std::string kAll = liger_csv("all_benchmark_data.tvd_layer_norm.csv").string();
const std::string kWeekly = liger_csv("weekly_ci.tvd_layer_norm.csv").string();

TEST(CliTest, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(run_kernelwatch({}).exit_code, 2);
  EXPECT_EQ(run_kernelwatch({"frobnicate"}).exit_code, 2);
  auto no_db = run_kernelwatch({"import", kTvd});
  EXPECT_EQ(no_db.exit_code, 2);
  EXPECT_NE(no_db.err.find("--db is required"), std::string::npos) << no_db.err;
  EXPECT_EQ(run_kernelwatch({"history", "--db", "x.db", "--limit", "many"}).exit_code, 2);
  for (const char* sub : {"import", "keys", "history"}) {
    auto help = run_kernelwatch({sub, "--help"});
    EXPECT_EQ(help.exit_code, 0) << sub;
    EXPECT_NE(help.out.find("--db"), std::string::npos) << sub;
  }
  auto top = run_kernelwatch({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("import"), std::string::npos);
  auto version = run_kernelwatch({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_FALSE(version.out.empty());
}

// A mistyped command or flag is named as what it is, not reported as whatever it displaced.
TEST(CliTest, UnknownCommandsFlagsAndNegativeLimitsAreNamed) {
  const auto command = run_kernelwatch({"frobnicate", "--db", "x.db"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_NE(command.err.find("unknown command \"frobnicate\""), std::string::npos) << command.err;
  EXPECT_NE(command.err.find("backtest"), std::string::npos) << command.err;  // lists the commands
  const auto flag = run_kernelwatch({"keys", "--dbb", "x.db"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("unknown option --dbb"), std::string::npos) << flag.err;
  EXPECT_EQ(flag.err.find("--db is required"), std::string::npos) << flag.err;
  const auto with_value = run_kernelwatch({"history", "--db=x.db", "--limt=5"});
  EXPECT_EQ(with_value.exit_code, 2);
  EXPECT_NE(with_value.err.find("unknown option --limt"), std::string::npos) << with_value.err;
  TempDir dir;
  const auto db = (dir / "kw.db").string();
  ASSERT_EQ(run_kernelwatch({"import", "--db", db, kTvd}).exit_code, 0);
  const auto negative = run_kernelwatch({"history", "--db", db, "--limit", "-1"});
  EXPECT_EQ(negative.exit_code, 2) << negative.out;
  EXPECT_NE(negative.err.find("--limit"), std::string::npos) << negative.err;
  // Known options, given as --name=value, still work.
  EXPECT_EQ(run_kernelwatch({"history", "--db=" + db, "--limit=1"}).exit_code, 0);
}

TEST(CliTest, ImportKeysAndHistoryOfTheSharedData) {
  TempDir dir;
  const std::string db = (dir / "kw.db").string();
  auto import = run_kernelwatch({"import", "--db", db, kTvd, kLayerNorm, kAll, kWeekly});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  EXPECT_NE(
      import.out.find("read 3024, new 2264, duplicate 2, skipped 758 (758 memory rows, 0 invalid)"),
      std::string::npos)
      << import.out;

  auto keys = run_kernelwatch({"keys", "--db", db, "--json"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  const json key_list = json::parse(keys.out);
  std::int64_t total = 0;
  const json* tvd_key = nullptr;
  for (const auto& k : key_list) {
    total += k["runs"].get<std::int64_t>();
    if (k["benchmark"] == "tvd/backward" && k["provider"] == "torch" &&
        k["workload"] == "tokens16384-vocab65536-fp32" &&
        k["environment"] == "nvidia-h100-80gb-hbm3") {
      tvd_key = &k;
    }
  }
  EXPECT_EQ(total, 2264);
  ASSERT_NE(tvd_key, nullptr);
  EXPECT_EQ((*tvd_key)["protocol"], "liger-bench-do-bench-backward");

  auto history =
      run_kernelwatch({"history", "--db", db, "--json", "--benchmark", "tvd/backward", "--provider",
                       "torch", "--workload", "tokens16384-vocab65536-fp32", "--environment",
                       "nvidia-h100-80gb-hbm3", "--limit", "0"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  const json runs = json::parse(history.out);
  EXPECT_EQ(static_cast<std::int64_t>(runs.size()), (*tvd_key)["runs"].get<std::int64_t>());
  int found = 0;
  for (const auto& r : runs) {
    if (r["run"]["spec"]["observedAt"] == "2026-03-03T23:02:57.000Z") {
      ++found;
      EXPECT_EQ(r["run"]["spec"]["timing"]["latencyNs"]["median"], 23379841);
      EXPECT_EQ(r["run"]["spec"]["measurements"][0]["value"], 23379386);
      EXPECT_EQ(r["run"]["spec"]["measurements"][1]["value"], 23381268);
    }
  }
  EXPECT_EQ(found, 1);

  auto table = run_kernelwatch(
      {"history", "--db", db, "--benchmark", "layer_norm/backward", "--limit", "3"});
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("OBSERVED_AT"), std::string::npos);
  EXPECT_NE(table.out.find("3 runs"), std::string::npos);
}

TEST(CliTest, HistoryJsonImportsBackIntoAnEqualDatabase) {
  TempDir dir;
  const std::string first = (dir / "first.db").string();
  ASSERT_EQ(run_kernelwatch({"import", "--db", first, kTvd, kLayerNorm, kAll}).exit_code, 0);
  auto exported = run_kernelwatch({"history", "--db", first, "--json", "--limit", "0"});
  ASSERT_EQ(exported.exit_code, 0);
  write_file(dir / "export.json", exported.out);

  const std::string second = (dir / "second.db").string();
  auto import = run_kernelwatch({"import", "--db", second, (dir / "export.json").string()});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  EXPECT_EQ(run_kernelwatch({"keys", "--db", second, "--json"}).out,
            run_kernelwatch({"keys", "--db", first, "--json"}).out);
  EXPECT_EQ(run_kernelwatch({"history", "--db", second, "--json", "--limit", "0"}).out,
            exported.out);

  auto again = run_kernelwatch({"import", "--db", first, (dir / "export.json").string()});
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find(", new 0, "), std::string::npos) << again.out;
}

TEST(CliTest, BadInputExitsOneWithFileLineAndStoresNothing) {
  TempDir dir;
  const std::string db = (dir / "kw.db").string();
  ASSERT_EQ(run_kernelwatch({"import", "--db", db, kLayerNorm}).exit_code, 0);
  const std::string csv = read_file(kAll);
  const std::string header = csv.substr(0, csv.find('\n') + 1);
  write_file(dir / "bad.csv", header + "layer_norm,liger,forward,speed\n");
  auto bad = run_kernelwatch({"import", "--db", db, kTvd, (dir / "bad.csv").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find((dir / "bad.csv").string() + ":2: expected 15 columns, got 4"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("nothing was imported"), std::string::npos);
  auto keys = run_kernelwatch({"keys", "--db", db, "--json"});
  ASSERT_EQ(keys.exit_code, 0);
  EXPECT_EQ(json::parse(keys.out).size(), 1u);  // only the LayerNorm fixture's key

  auto skipping =
      run_kernelwatch({"import", "--db", db, "--skip-invalid", kTvd, (dir / "bad.csv").string()});
  EXPECT_EQ(skipping.exit_code, 0) << skipping.err;
  EXPECT_NE(skipping.err.find("skipped " + (dir / "bad.csv").string() + ":2:"), std::string::npos);
  EXPECT_NE(skipping.out.find("new 1, duplicate 0, skipped 1 (0 memory rows, 1 invalid)"),
            std::string::npos)
      << skipping.out;
}

TEST(CliTest, ReadingCommandsNeverCreateOrDamageFiles) {
  TempDir dir;
  auto missing = run_kernelwatch({"keys", "--db", (dir / "absent.db").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("absent.db: no such database"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "absent.db"));

  write_file(dir / "text.db", "plain text");
  auto not_db = run_kernelwatch({"history", "--db", (dir / "text.db").string()});
  EXPECT_EQ(not_db.exit_code, 1);
  EXPECT_NE(not_db.err.find("not a SQLite database"), std::string::npos);
  auto import = run_kernelwatch({"import", "--db", (dir / "text.db").string(), kTvd});
  EXPECT_EQ(import.exit_code, 1);
  EXPECT_EQ(read_file(dir / "text.db"), "plain text");
}

TEST(CliTest, ARefusedImportIntoANewDatabaseLeavesNoFileBehind) {
  TempDir dir;
  const std::string csv = read_file(kAll);
  write_file(dir / "bad.csv", csv.substr(0, csv.find('\n') + 1) + "layer_norm,liger\n");
  const auto db = dir / "new.db";
  auto refused = run_kernelwatch({"import", "--db", db.string(), (dir / "bad.csv").string()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("nothing was imported"), std::string::npos) << refused.err;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    EXPECT_FALSE(std::filesystem::exists(db.string() + suffix)) << suffix;
  auto missing = run_kernelwatch({"import", "--db", db.string(), (dir / "absent.json").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(db));

  // An existing database that refuses an import is kept, unchanged.
  ASSERT_EQ(run_kernelwatch({"import", "--db", db.string(), kTvd}).exit_code, 0);
  EXPECT_EQ(run_kernelwatch({"import", "--db", db.string(), (dir / "bad.csv").string()}).exit_code,
            1);
  auto keys = run_kernelwatch({"keys", "--db", db.string(), "--json"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  EXPECT_EQ(json::parse(keys.out).size(), 1u);
}

}  // namespace
}  // namespace kernelwatch

namespace kernelwatch {
namespace {

TEST(CliBacktestTest, FindsTheLigerReleaseStepsInTheWeeklyHistory) {
  TempDir dir;
  const std::string db = (dir / "kw.db").string();
  ASSERT_EQ(run_kernelwatch({"import", "--db", db, kWeekly}).exit_code, 0);
  auto result = run_kernelwatch({"backtest", "--db", db, "--confirm", "none", "--json",
                                 "--benchmark", "tvd/forward", "--provider", "liger"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json alerts = json::parse(result.out);
  ASSERT_TRUE(alerts.is_array());
  // TVD forward (liger) dropped about 40% in March 2026 on every H100 vocabulary: the keys'
  // own alerts, or members of the incident of that run (six keys stepped together).
  int march_drops = 0;
  std::vector<json> selected;
  for (const auto& a : alerts) {
    if (a["members"].empty()) {
      selected.push_back(a);
      continue;
    }
    EXPECT_EQ(a["kind"], "environment");
    for (const auto& member : a["members"]) {
      if (member["benchmark"] == "tvd/forward" && member["provider"] == "liger")
        selected.push_back(member);
    }
  }
  for (const auto& a : selected) {
    for (const char* field :
         {"benchmark", "provider", "workload", "environment", "externalId", "observedAt",
          "direction", "kind", "relativeChange", "median", "band", "baselineRuns", "attribution"}) {
      EXPECT_TRUE(a.contains(field)) << field;
    }
    EXPECT_EQ(a["benchmark"], "tvd/forward");
    EXPECT_EQ(a["provider"], "liger");
    if (a["observedAt"].get<std::string>().rfind("2026-03", 0) == 0 &&
        a["direction"] == "improvement" && a["relativeChange"].get<double>() < -0.3 &&
        a["environment"] == "nvidia-h100-80gb-hbm3") {
      ++march_drops;
      EXPECT_LT(a["median"].get<std::int64_t>(), a["band"]["lower"].get<std::int64_t>());
    }
  }
  EXPECT_GE(march_drops, 4);

  auto table = run_kernelwatch({"backtest", "--db", db});
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("replayed 198 keys and 2178 runs with --confirm judged"),
            std::string::npos)
      << table.out.substr(table.out.size() > 300 ? table.out.size() - 300 : 0);
  EXPECT_EQ(run_kernelwatch({"backtest", "--db", db, "--confirm", "later"}).exit_code, 2);
}

}  // namespace
}  // namespace kernelwatch

namespace kernelwatch {
namespace {

TEST(CliBenchTest, CpuRecordsImportBackAndRoundTrip) {
  TempDir dir;
  const std::string db = (dir / "kw.db").string();
  auto bench = run_kernelwatch({"bench", "--kernel", "layer_norm", "--pass", "forward", "--backend",
                                "cpu", "--rows", "64", "--hidden", "512", "--warmup-ms", "2",
                                "--rep-ms", "5", "--json", "--db", db});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const json records = json::parse(bench.out);
  ASSERT_EQ(records.size(), 2u);  // both providers
  for (const auto& r : records) {
    EXPECT_EQ(r["run"]["spec"]["status"], "passed");
    EXPECT_EQ(r["run"]["spec"]["sourceNative"]["benchmark"], "layer_norm/forward");
    EXPECT_EQ(r["protocol"]["metadata"]["name"], "kernelwatch-cpu-steady-clock-forward");
  }
  write_file(dir / "bench.json", bench.out);

  // --db stored them; importing the printed records again finds them already there.
  auto again = run_kernelwatch({"import", "--db", db, (dir / "bench.json").string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("read 2, new 0, duplicate 2"), std::string::npos) << again.out;

  // Into a fresh database they import as new runs and come back unchanged.
  const std::string fresh = (dir / "fresh.db").string();
  ASSERT_EQ(run_kernelwatch({"import", "--db", fresh, (dir / "bench.json").string()}).exit_code, 0);
  auto history = run_kernelwatch({"history", "--db", fresh, "--json"});
  ASSERT_EQ(history.exit_code, 0);
  json sorted_back = json::parse(history.out);
  json sorted_in = records;
  const auto by_id = [](const json& a, const json& b) {
    return a["run"]["spec"]["sourceNative"]["externalId"] <
           b["run"]["spec"]["sourceNative"]["externalId"];
  };
  std::sort(sorted_back.begin(), sorted_back.end(), by_id);
  std::sort(sorted_in.begin(), sorted_in.end(), by_id);
  EXPECT_EQ(sorted_back, sorted_in);

  auto table = run_kernelwatch({"bench", "--kernel", "tvd", "--pass", "full", "--provider",
                                "kernelwatch-fused", "--backend", "cpu", "--tokens", "32",
                                "--vocab", "1000", "--rep-ms", "5"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("tvd/full kernelwatch-fused"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("tokens32-vocab1000-fp32"), std::string::npos);
  // stderr says each case's phases as they begin, numbered, in order.
  std::size_t from = 0;
  for (const char* phase : {"checking correctness", "preparing inputs", "timing"}) {
    const auto at = table.err.find(
        std::string("bench: [1/1] tvd/full/kernelwatch-fused/cpu: ") + phase + "\n", from);
    ASSERT_NE(at, std::string::npos) << phase << "\n" << table.err;
    from = at;
  }
}

// --workload gives the shape as a label of the kernel's own form, for any kernel of the catalogue
// (RMSNorm's is the one Liger's importer gives Liger's rms_norm history).
TEST(CliBenchTest, WorkloadLabelsGiveTheShapeOfAnyKernelOfTheCatalogue) {
  auto bench = run_kernelwatch({"bench", "--kernel", "rms_norm", "--pass", "backward", "--provider",
                                "kernelwatch-fused", "--backend", "cpu", "--workload",
                                "h512-bf16-eps1e-06-m64", "--workload", "h256-fp32-eps1e-05-m8",
                                "--warmup-ms", "2", "--rep-ms", "5", "--json"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const json records = json::parse(bench.out);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["run"]["metadata"]["labels"]["workload"], "h512-bf16-eps1e-06-m64");
  EXPECT_EQ(records[1]["run"]["metadata"]["labels"]["workload"], "h256-fp32-eps1e-05-m8");
  for (const auto& r : records) {
    EXPECT_EQ(r["run"]["spec"]["status"], "passed");
    EXPECT_EQ(r["run"]["spec"]["sourceNative"]["benchmark"], "rms_norm/backward");
  }
  auto tvd = run_kernelwatch({"bench", "--kernel", "tvd", "--pass", "forward", "--backend", "cpu",
                              "--provider", "kernelwatch-fused", "--workload",
                              "tokens16-vocab300-bf16", "--rep-ms", "5"});
  ASSERT_EQ(tvd.exit_code, 0) << tvd.err;
  EXPECT_NE(tvd.out.find("tokens16-vocab300-bf16"), std::string::npos) << tvd.out;
  for (const auto& [args, message] :
       {std::pair{
            std::vector<std::string>{"--kernel", "rms_norm", "--workload", "hidden512-rows64-fp32"},
            std::string("is not an rms_norm workload")},
        std::pair{std::vector<std::string>{"--kernel", "layer_norm", "--workload",
                                           "hidden512-rows64-fp32", "--rows", "4"},
                  std::string("--workload gives the whole shape")}}) {
    std::vector<std::string> all = {"bench", "--pass", "forward", "--backend", "cpu"};
    all.insert(all.end(), args.begin(), args.end());
    auto result = run_kernelwatch(all);
    EXPECT_EQ(result.exit_code, 1) << message;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
}

TEST(CliBenchTest, BadRequestsExitOneWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--kernel", "conv", "--pass", "forward"}, "unknown kernel \"conv\""},
      {{"--kernel", "tvd", "--pass", "sideways"}, "sideways"},
      {{"--kernel", "tvd", "--pass", "forward", "--provider", "cudnn"}, "cudnn"},
      {{"--kernel", "tvd", "--pass", "forward", "--rows", "4"},
       "--rows and --hidden apply to --kernel layer_norm"},
      {{"--kernel", "layer_norm", "--pass", "forward", "--vocab", "4"},
       "--tokens and --vocab apply to --kernel tvd, not layer_norm"},
      {{"--kernel", "tvd", "--pass", "forward", "--backend", "cpu", "--tokens", "1000000",
        "--vocab", "1000000"},
       "needs at least"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"bench"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto result = run_kernelwatch(args);
    EXPECT_EQ(result.exit_code, 1) << c.message;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << result.err;
  }
  auto cuda =
      run_kernelwatch({"bench", "--kernel", "tvd", "--pass", "forward", "--backend", "cuda"});
  if (cuda.exit_code != 0) {  // no GPU here: a clear error, not a crash
    EXPECT_EQ(cuda.exit_code, 1);
    EXPECT_NE(cuda.err.find("cuda"), std::string::npos) << cuda.err;
  }
}

}  // namespace
}  // namespace kernelwatch

namespace kernelwatch {
namespace {

// A one-shot TCP server on 127.0.0.1 that answers each connection with the next canned bytes,
// whatever was asked: what `kernelwatch status` does with answers no daemon would give.
class CannedServer {
 public:
  explicit CannedServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (const auto& answer : answers_) {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        char buffer[4096];
        (void)::recv(client, buffer, sizeof buffer, 0);  // the request line and headers
        (void)::send(client, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(client);
      }
    });
  }
  ~CannedServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::vector<std::string> answers_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

TEST(CliStatusTest, MalformedAnswersExitOneWithAMessageNamingTheCommand) {
  const std::string ok_head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
  const std::vector<std::string> answers = {
      ok_head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",  // bad chunk size
      ok_head + "Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffffff\r\n{}\r\n",  // overflow
      ok_head + "Content-Length: 100\r\n\r\n{}",  // the body ends early
      ok_head + "Content-Length: 9\r\n\r\nnot json!",
      "SSH-2.0-OpenSSH_9.2\r\n",
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
  };
  CannedServer server(answers);
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto r = run_kernelwatch({"status", "--url", server.url()});
    EXPECT_EQ(r.exit_code, 1) << i << ": " << r.err;
    EXPECT_EQ(r.err.rfind("kernelwatch status: ", 0), 0u) << i << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << i;
  }
  const auto https = run_kernelwatch({"status", "--url", "https://127.0.0.1:1"});
  EXPECT_EQ(https.exit_code, 2);
  EXPECT_NE(https.err.find("http://"), std::string::npos) << https.err;
}

}  // namespace
}  // namespace kernelwatch
