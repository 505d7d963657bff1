#include "storage/detail/database.hpp"
#include "storage/sqlite_store.hpp"
#include <boost/asio.hpp>
