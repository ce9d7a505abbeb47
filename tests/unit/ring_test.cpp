// Ring: the first lap's warming thread never writes over a block the
// producer owns, whatever the block size's alignment to pages.
#include "../../lib/ring/ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace {

using namespace std::chrono_literals;

// Fills every block of a ring being warmed with its own index, then reads
// them back. A warmer that zeroed a block behind the producer shows here.
void fill_and_check(std::size_t block_size, std::size_t blocks) {
  tk::Ring ring(block_size, blocks);
  ring.warm_ahead(tk::Ring::Side::producer);
  for (std::size_t i = 0; i < blocks; ++i) {
    ASSERT_EQ(ring.wait_free(1s), tk::Ring::Wait::ready);
    std::span<std::byte> block = ring.next_free_block();
    std::memset(block.data(), static_cast<int>(i % 251 + 1), block.size());
    ring.publish(block.size());
  }
  ring.finish_input();
  for (std::size_t i = 0; i < blocks; ++i) {
    ASSERT_EQ(ring.wait_filled(1, 1s), tk::Ring::Wait::ready);
    std::span<const std::byte> block = ring.oldest_filled_block();
    auto expected = static_cast<std::byte>(i % 251 + 1);
    ASSERT_EQ(block.size(), block_size);
    EXPECT_TRUE(std::all_of(block.begin(), block.end(), [&](std::byte b) { return b == expected; }))
        << "block " << i << " was written over";
    ring.release(block.size());
  }
}

TEST(RingWarming, NeverWritesOverABlockTheProducerFilled) { fill_and_check(65536, 512); }

TEST(RingWarming, BlocksNotAMultipleOfThePageAreWholeToo) { fill_and_check(10240, 2048); }

}  // namespace
