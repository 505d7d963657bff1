#include "notifiers/worker.hpp"
#include "kernels/registry.hpp"
