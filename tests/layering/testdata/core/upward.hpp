#include "storage/connection.hpp"
#include "core/error.hpp"
