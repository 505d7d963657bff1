#include "kernels/cpu_threads.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/detail/cpu_parallel.hpp"

namespace kernelwatch::kernels {
namespace {

// A fixed set of workers that join the calling thread on one job at a time. Tasks are handed
// out through an atomic counter, so a slow thread never holds up the others.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  [[nodiscard]] int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void run(std::int64_t tasks, const std::function<void(std::int64_t)>& body) {
    {
      std::lock_guard lock(mutex_);
      body_ = &body;
      tasks_ = tasks;
      next_.store(0, std::memory_order_relaxed);
      active_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return active_ == 0; });
    body_ = nullptr;
  }

 private:
  void drain() {
    for (;;) {
      const std::int64_t task = next_.fetch_add(1, std::memory_order_relaxed);
      if (task >= tasks_) return;
      (*body_)(task);
    }
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard lock(mutex_);
      if (--active_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::int64_t)>* body_ = nullptr;
  std::int64_t tasks_ = 0;
  std::atomic<std::int64_t> next_{0};
  int active_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

int resolve(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::mutex g_pool_mutex;  // one job at a time; guards the pool's lifetime
std::atomic<int> g_requested{0};
std::unique_ptr<ThreadPool> g_pool;
thread_local bool t_inside_task = false;

}  // namespace

void set_cpu_threads(int threads) {
  g_requested.store(std::max(0, threads));
}

int cpu_threads() {
  return resolve(g_requested.load());
}

namespace detail {

void parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& body) {
  if (tasks <= 0) return;
  const int threads = cpu_threads();
  if (tasks == 1 || threads == 1 || t_inside_task) {
    for (std::int64_t task = 0; task < tasks; ++task) body(task);
    return;
  }
  std::lock_guard lock(g_pool_mutex);
  if (!g_pool || g_pool->threads() != threads) {
    g_pool.reset();
    g_pool = std::make_unique<ThreadPool>(threads);
  }
  const std::function<void(std::int64_t)> guarded = [&body](std::int64_t task) {
    t_inside_task = true;
    body(task);
    t_inside_task = false;
  };
  g_pool->run(tasks, guarded);
}

void parallel_blocks(std::int64_t count, std::int64_t grain,
                     const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (count <= 0) return;
  grain = std::max<std::int64_t>(1, grain);
  const std::int64_t blocks = (count + grain - 1) / grain;
  parallel_for(blocks, [&](std::int64_t block) {
    const std::int64_t begin = block * grain;
    body(begin, std::min(count, begin + grain));
  });
}

}  // namespace detail
}  // namespace kernelwatch::kernels
