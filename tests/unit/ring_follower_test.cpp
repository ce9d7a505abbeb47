// Ring::take/release_taken and RingFollower: a block the consumer took is
// the producer's again only once the follower has processed it; what the
// follower processes comes in the order it was added, from the ring or not.
#include "../../lib/ring/follower.hpp"
#include "../../lib/ring/ring.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

std::string text_of(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Publishes `text` as one block of the ring.
void publish(tk::Ring& ring, const std::string& text) {
  ASSERT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
  std::span<std::byte> block = ring.next_free_block();
  ASSERT_LE(text.size(), block.size());
  std::memcpy(block.data(), text.data(), text.size());
  ring.publish(text.size());
}

TEST(RingTake, ATakenBlockIsNeitherFilledNorFreeUntilReleased) {
  tk::Ring ring(4096, 2);
  publish(ring, "first");
  publish(ring, "second");
  EXPECT_EQ(ring.filled(), 2u);
  ring.take();
  EXPECT_EQ(ring.filled(), 1u);
  EXPECT_EQ(text_of(ring.oldest_filled_block()), "second");
  // Taken is out, as far as the producer's side is told.
  EXPECT_EQ(ring.stats().bytes_out, 5u);
  // Both blocks are still held: the producer has no room.
  EXPECT_EQ(ring.wait_free(1ms), tk::Ring::Wait::timed_out);
  ring.release_taken();
  EXPECT_EQ(ring.stats().bytes_out, 5u);
  EXPECT_EQ(ring.wait_free(1ms), tk::Ring::Wait::ready);
  EXPECT_EQ(ring.filled(), 1u);
}

TEST(RingTake, HoldsOnlyTheRingsOwnBytes) {
  tk::Ring ring(4096, 2);
  std::span<std::byte> block = ring.next_free_block();
  EXPECT_TRUE(ring.holds(block));
  EXPECT_TRUE(ring.holds(block.subspan(100, 10)));
  std::string elsewhere = "not in the ring";
  EXPECT_FALSE(ring.holds(bytes_of(elsewhere)));
  EXPECT_FALSE(ring.holds({}));
}

TEST(RingFollower, ReleasesATakenBlockOnlyOnceItIsProcessed) {
  tk::Ring ring(4096, 1);
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::string seen;
  tk::RingFollower follower(ring, [&](std::span<const std::byte> bytes) {
    gate.wait();
    seen += text_of(bytes);
  });
  publish(ring, "block");
  ASSERT_EQ(ring.wait_filled(1, 1s), tk::Ring::Wait::ready);
  std::span<const std::byte> block = ring.oldest_filled_block();
  follower.add(block);
  ring.take();
  follower.release_block();
  // The follower waits at the gate: the ring's only block is not free.
  EXPECT_EQ(ring.wait_free(20ms), tk::Ring::Wait::timed_out);
  go.set_value();
  follower.drain();
  EXPECT_EQ(seen, "block");
  EXPECT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
}

TEST(RingFollower, ProcessesInTheOrderAddedWhetherInTheRingOrNot) {
  tk::Ring ring(4096, 4);
  std::string seen;
  tk::RingFollower follower(ring, [&](std::span<const std::byte> bytes) { seen += text_of(bytes); });
  publish(ring, "one,");
  publish(ring, "three,");
  ASSERT_EQ(ring.wait_filled(2, 1s), tk::Ring::Wait::ready);
  follower.add(ring.oldest_filled_block());
  ring.take();
  follower.release_block();
  // A copy outside the ring (as records a full volume handed back) is
  // processed at once, after what was queued before it.
  std::string copy = "two,";
  follower.add(bytes_of(copy));
  EXPECT_EQ(seen, "one,two,");
  follower.add(ring.oldest_filled_block());
  ring.take();
  follower.release_block();
  follower.drain();
  EXPECT_EQ(seen, "one,two,three,");
}

TEST(RingFollower, DrainRethrowsAFailureAndTheBlocksStillGoBack) {
  tk::Ring ring(4096, 1);
  tk::RingFollower follower(ring, [](std::span<const std::byte>) {
    throw std::runtime_error("digest failed");
  });
  publish(ring, "block");
  follower.add(ring.oldest_filled_block());
  ring.take();
  follower.release_block();
  EXPECT_THROW(follower.drain(), std::runtime_error);
  EXPECT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
}

TEST(RingFollower, EndsWithWorkStillQueuedProcessed) {
  tk::Ring ring(4096, 1);
  std::string seen;
  {
    tk::RingFollower follower(ring,
                              [&](std::span<const std::byte> bytes) { seen += text_of(bytes); });
    publish(ring, "last");
    follower.add(ring.oldest_filled_block());
    ring.take();
    follower.release_block();
  }
  EXPECT_EQ(seen, "last");
  EXPECT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
}

}  // namespace
