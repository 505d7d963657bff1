// Private to kernels/: the fork-join loop every CPU kernel runs its blocks with.
// Plain C++ and the standard library only.
#pragma once

#include <cstdint>
#include <functional>

namespace kernelwatch::kernels::detail {

// Calls body(task) once for every task in [0, tasks) on the CPU thread pool and returns when all
// are done. Which thread runs a task is unspecified, so a task must write only its own outputs.
// Calls from inside a task run inline on the calling thread.
void parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& body);

// Splits [0, count) into ceil(count / grain) blocks of `grain` (the last one shorter) and calls
// body(begin, end) for each, in parallel.
void parallel_blocks(std::int64_t count, std::int64_t grain,
                     const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace kernelwatch::kernels::detail
