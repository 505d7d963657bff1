#include <sqlite3.h>
#include <cuda_runtime.h>
