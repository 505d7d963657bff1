// The float64 oracles every provider is compared against: by the kernel tests, and by the
// harness's correctness gate before a run is timed. Each kernel's own lives in its folder
// (kernels/<name>/oracle.hpp, outside its implementation digest); this header gathers the founding
// kernels' for the tests that use them.
#pragma once

#include "kernels/layer_norm/oracle.hpp"
#include "kernels/tvd/oracle.hpp"
