// Fuzz target: the body of POST /api/v1/runs as the handler takes it: parse and validate the
// batch (core::parse_record_batch, the handler's own code), then store every record in one
// transaction on a scratch SQLite database (a real file in a temporary directory) and read the
// runs back as GET /api/v1/runs does. The HTTP framing itself (Boost.Beast) is not fuzzed here.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/record_batch.hpp"
#include "storage/connection.hpp"
#include "storage/run_store.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

using namespace kernelwatch;

storage::Connection& scratch_database() {
  static storage::Connection* connection = [] {
    std::string dir = (std::filesystem::temp_directory_path() / "kw-fuzz-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) fuzz::invariant_failed("cannot make a temporary dir");
    auto opened = storage::Connection::open(std::filesystem::path(dir) / "scratch.db",
                                            storage::OpenMode::Create);
    if (!opened) fuzz::invariant_failed("cannot open the scratch database");
    return new storage::Connection(std::move(*opened));
  }();
  return *connection;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A fixed receiver clock: the future check is exercised the same way on every run.
  const core::Timestamp now = core::parse_timestamp("2026-01-01T00:00:00Z").value();
  const auto batch = core::parse_record_batch(fuzz::text_of(data, size), now);
  if (!batch) return 0;
  storage::Connection& db = scratch_database();
  storage::RunStore runs(db);
  auto tx = db.begin();
  if (!tx) fuzz::invariant_failed("cannot begin a transaction");
  for (const auto& posted : *batch) {
    // An accepted record may still be refused by the store, never crash it.
    (void)runs.insert_run(*tx, posted, "");
  }
  storage::RunFilter all;
  all.limit = 0;
  const auto stored = runs.runs(all);
  if (!stored) fuzz::invariant_failed("the runs cannot be read back");
  if (!runs.unreadable().empty()) fuzz::invariant_failed("an accepted run is stored unreadable");
  // Rolled back: each input starts from the same empty database.
  return 0;
}
