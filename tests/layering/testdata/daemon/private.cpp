#include "storage/detail/database.hpp"
#include "storage/connection.hpp"
#include <boost/asio.hpp>
