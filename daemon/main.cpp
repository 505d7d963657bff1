// kernelwatch: one binary, subcommands in daemon/cli.cpp.
#include "daemon/cli.hpp"

int main(int argc, char** argv) {
  return kernelwatch::daemon::run_cli(argc, argv);
}
