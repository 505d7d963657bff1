// The HTTP server's connection bookkeeping (http/connection_slots.cpp): who is replaced when a
// limit is reached, who is never replaced, and the spare slots for a client whose connections
// are all busy.
#include "http/connection_slots.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace kernelwatch::http {
namespace {

using Slot = ConnectionSlots::Slot;

const ConnectionSlots::HasRequest kNone = [](std::uint64_t) { return false; };

TEST(ConnectionSlots, APastTheCapConnectionReplacesItsAddresssLongestWaiting) {
  ConnectionSlots slots({/*total=*/10, /*per_client=*/2, /*spare=*/1});
  ASSERT_EQ(slots.admit(1, "10.0.0.1", kNone).slot, Slot::Regular);
  ASSERT_EQ(slots.admit(2, "10.0.0.2", kNone).slot, Slot::Regular);
  ASSERT_EQ(slots.admit(3, "10.0.0.1", kNone).slot, Slot::Regular);
  // Connection 1 answered a request and waits again: 3 has waited longest now.
  slots.set_waiting(1, false);
  slots.set_waiting(1, true);
  const auto fourth = slots.admit(4, "10.0.0.1", kNone);
  EXPECT_EQ(fourth.slot, Slot::Regular);
  EXPECT_EQ(fourth.evicted, std::vector<std::uint64_t>{3});
  EXPECT_TRUE(slots.evicted(3));
  EXPECT_FALSE(slots.evicted(2));  // another address is never replaced for the cap
  EXPECT_EQ(slots.evictions(), 1u);
  slots.release(3);  // its slot was freed when it was replaced: not twice
  EXPECT_EQ(slots.admit(5, "10.0.0.1", kNone).evicted, std::vector<std::uint64_t>{1});
}

TEST(ConnectionSlots, AConnectionWhoseRequestHasArrivedIsNeverReplaced) {
  ConnectionSlots slots({10, 2, 1});
  ASSERT_TRUE(slots.admit(1, "10.0.0.1", kNone).slot);
  ASSERT_TRUE(slots.admit(2, "10.0.0.1", kNone).slot);
  // 1 waits longest, but its request (a health check) is in its socket, unread.
  const auto third = slots.admit(3, "10.0.0.1", [](std::uint64_t id) { return id == 1; });
  EXPECT_EQ(third.evicted, std::vector<std::uint64_t>{2});
  EXPECT_FALSE(slots.evicted(1));
}

TEST(ConnectionSlots, WhenEveryConnectionIsBusyANewOneGetsASpareSlot) {
  ConnectionSlots slots({/*total=*/3, /*per_client=*/2, /*spare=*/2});
  for (std::uint64_t id : {1, 2}) {
    ASSERT_EQ(slots.admit(id, "10.0.0.1", kNone).slot, Slot::Regular);
    slots.set_waiting(id, false);  // busy with a request
  }
  auto spare = slots.admit(3, "10.0.0.1", kNone);
  EXPECT_EQ(spare.slot, Slot::Spare);
  EXPECT_TRUE(spare.evicted.empty());
  EXPECT_EQ(slots.slot(3), Slot::Spare);
  EXPECT_EQ(slots.admit(4, "10.0.0.1", kNone).slot, Slot::Spare);
  // Spares full: the one that has waited longest for its header goes...
  spare = slots.admit(5, "10.0.0.1", kNone);
  EXPECT_EQ(spare.slot, Slot::Spare);
  EXPECT_EQ(spare.evicted, std::vector<std::uint64_t>{3});
  // ...and when every spare is busy too, the new one is refused.
  slots.set_waiting(4, false);
  slots.set_waiting(5, false);
  EXPECT_FALSE(slots.admit(6, "10.0.0.1", kNone).slot.has_value());
  // Another address still has regular room (total 3).
  EXPECT_EQ(slots.admit(7, "10.0.0.2", kNone).slot, Slot::Regular);
  // A spare that ends frees its spare slot.
  slots.release(4);
  EXPECT_EQ(slots.admit(8, "10.0.0.1", kNone).slot, Slot::Spare);
}

TEST(ConnectionSlots, TheTotalLimitReplacesAnyAddresssLongestWaiting) {
  ConnectionSlots slots({/*total=*/2, /*per_client=*/2, /*spare=*/1});
  ASSERT_TRUE(slots.admit(1, "10.0.0.1", kNone).slot);
  ASSERT_TRUE(slots.admit(2, "10.0.0.2", kNone).slot);
  const auto third = slots.admit(3, "10.0.0.3", kNone);
  EXPECT_EQ(third.slot, Slot::Regular);
  EXPECT_EQ(third.evicted, std::vector<std::uint64_t>{1});
}

}  // namespace
}  // namespace kernelwatch::http
