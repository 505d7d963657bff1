#include "config/config.hpp"
#include "storage/outbox.hpp"
