#include "storage/sqlite_store.hpp"
#include "core/error.hpp"
