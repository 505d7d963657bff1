#include "http/connection_slots.hpp"

namespace kernelwatch::http {

ConnectionSlots::Admission ConnectionSlots::admit(std::uint64_t id, const std::string& address,
                                                  const HasRequest& has_request) {
  Admission out;
  const auto held = [&] {
    const auto it = per_client_.find(address);
    return it == per_client_.end() ? std::size_t{0} : it->second;
  };
  // Room among the regular slots: the address's own waiting connections go first, then anyone's.
  bool room = true;
  while (room && held() >= limits_.per_client) {
    const auto victim = evict_waiting(Slot::Regular, &address, has_request);
    if (victim) out.evicted.push_back(*victim);
    room = victim.has_value();
  }
  while (room && regular_ >= limits_.total) {
    const auto victim = evict_waiting(Slot::Regular, nullptr, has_request);
    if (victim) out.evicted.push_back(*victim);
    room = victim.has_value();
  }
  Slot slot = Slot::Regular;
  if (!room) {
    // Every regular slot it may take is busy with a request: a spare one, replacing the spare
    // connection that has waited longest for its header when all are taken.
    slot = Slot::Spare;
    if (spare_ >= limits_.spare) {
      const auto victim = evict_waiting(Slot::Spare, nullptr, has_request);
      if (!victim) return out;  // refused
      out.evicted.push_back(*victim);
    }
  }
  out.slot = slot;
  Connection connection{address, slot, true, next_wait_++, false};
  if (slot == Slot::Regular) {
    ++regular_;
    ++per_client_[address];
  } else {
    ++spare_;
  }
  connections_.insert_or_assign(id, std::move(connection));
  return out;
}

std::optional<std::uint64_t> ConnectionSlots::evict_waiting(Slot slot, const std::string* address,
                                                            const HasRequest& has_request) {
  std::optional<std::uint64_t> oldest;
  std::uint64_t oldest_since = 0;
  for (const auto& [id, connection] : connections_) {
    if (connection.evicted || !connection.waiting || connection.slot != slot) continue;
    if (address != nullptr && connection.address != *address) continue;
    if (oldest && connection.waiting_since >= oldest_since) continue;
    // A request that has arrived is about to be served (a health check), not a slow client.
    if (has_request && has_request(id)) continue;
    oldest = id;
    oldest_since = connection.waiting_since;
  }
  if (!oldest) return std::nullopt;
  auto& victim = connections_.at(*oldest);
  victim.evicted = true;
  free_slot(victim);
  ++evictions_;
  return oldest;
}

void ConnectionSlots::free_slot(const Connection& connection) {
  if (connection.slot == Slot::Spare) {
    --spare_;
    return;
  }
  --regular_;
  const auto it = per_client_.find(connection.address);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

void ConnectionSlots::set_waiting(std::uint64_t id, bool waiting) {
  const auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (waiting && !it->second.waiting) it->second.waiting_since = next_wait_++;
  it->second.waiting = waiting;
}

bool ConnectionSlots::evicted(std::uint64_t id) const {
  const auto it = connections_.find(id);
  return it == connections_.end() || it->second.evicted;
}

ConnectionSlots::Slot ConnectionSlots::slot(std::uint64_t id) const {
  const auto it = connections_.find(id);
  return it == connections_.end() ? Slot::Regular : it->second.slot;
}

void ConnectionSlots::release(std::uint64_t id) {
  const auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (!it->second.evicted) free_slot(it->second);
  connections_.erase(it);
}

}  // namespace kernelwatch::http
