#include <boost/beast/http.hpp>
#include <openssl/sha.h>
#include "daemon/api.hpp"
