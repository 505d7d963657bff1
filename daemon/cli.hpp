// The kernelwatch command line: subcommands, their options, exit codes (0 success, 1 failure,
// 2 bad usage). Composition root code; uses CLI11.
#pragma once

namespace kernelwatch::daemon {

int run_cli(int argc, char** argv);

}  // namespace kernelwatch::daemon
