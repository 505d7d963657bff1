// Who holds the HTTP server's connections: at most `total`, at most `per_client` from one client
// address, each waiting for a request header or busy with a request. Past a limit a new
// connection replaces the one that has waited longest for a header (a slowloris connection, an
// idle kept-alive one), never one whose request has already arrived; when every connection of
// the limit is busy it gets one of a few spare slots, where only answers that need no handler
// are given (health checks, pre-rendered pages), so a client that floods its address's slots
// and reconnects at once after each drop cannot lock out that address's health checks.
// Bookkeeping only, one thread (the server's I/O thread): plain C++, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kernelwatch::http {

class ConnectionSlots {
 public:
  struct Limits {
    std::size_t total = 256;
    std::size_t per_client = 128;
    std::size_t spare = 32;
  };
  enum class Slot { Regular, Spare };
  struct Admission {
    std::optional<Slot> slot;            // nullopt: refused (closed at once)
    std::vector<std::uint64_t> evicted;  // connections to close to make room
  };
  // Whether a connection's request bytes have arrived and wait to be read (it is never evicted).
  using HasRequest = std::function<bool(std::uint64_t id)>;

  explicit ConnectionSlots(Limits limits) : limits_(limits) {}

  // A new connection `id` from `address`, waiting for its request header.
  [[nodiscard]] Admission admit(std::uint64_t id, const std::string& address,
                                const HasRequest& has_request);
  // Waiting for a request header (evictable), or serving a request.
  void set_waiting(std::uint64_t id, bool waiting);
  [[nodiscard]] bool evicted(std::uint64_t id) const;  // or unknown
  [[nodiscard]] Slot slot(std::uint64_t id) const;
  // The connection ended: its slot is free again (an evicted one's already was).
  void release(std::uint64_t id);
  // Connections closed to make room, since the start.
  [[nodiscard]] std::uint64_t evictions() const { return evictions_; }

 private:
  struct Connection {
    std::string address;
    Slot slot = Slot::Regular;
    bool waiting = true;
    std::uint64_t waiting_since = 0;  // order of entering the wait
    bool evicted = false;
  };
  // The connection (of `address`, or of anyone) in `slot` that has waited longest for a request
  // header and whose request has not arrived, marked evicted; nullopt when none.
  std::optional<std::uint64_t> evict_waiting(Slot slot, const std::string* address,
                                             const HasRequest& has_request);
  void free_slot(const Connection& connection);

  Limits limits_;
  std::unordered_map<std::uint64_t, Connection> connections_;
  std::unordered_map<std::string, std::size_t> per_client_;  // regular slots held
  std::size_t regular_ = 0;
  std::size_t spare_ = 0;
  std::uint64_t next_wait_ = 0;
  std::uint64_t evictions_ = 0;
};

}  // namespace kernelwatch::http
