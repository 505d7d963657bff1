#include "detectors/band.hpp"
#include <sqlite3.h>
