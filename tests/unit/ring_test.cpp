// Ring: the first lap's warming thread never writes over a block the
// producer owns, whatever the block size's alignment to pages; the
// consumer's ends on its own with the input; a queue file gets none.
#include "../../lib/ring/ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

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
    ring.release();
  }
}

TEST(RingWarming, NeverWritesOverABlockTheProducerFilled) { fill_and_check(65536, 512); }

TEST(RingWarming, BlocksNotAMultipleOfThePageAreWholeToo) { fill_and_check(10240, 2048); }

// This process's threads, from /proc.
std::size_t threads() {
  auto tasks = std::filesystem::directory_iterator("/proc/self/task");
  return static_cast<std::size_t>(std::distance(begin(tasks), end(tasks)));
}

// Waits up to 5 s for the thread count to come down to `count`.
bool threads_come_down_to(std::size_t count) {
  for (int i = 0; i < 500 && threads() > count; ++i) std::this_thread::sleep_for(10ms);
  return threads() == count;
}

// The consumer's process, as buffer's writer: its warmer must end when the
// producer's process ends the input, which this process learns of only
// through the ring.
TEST(RingWarming, TheConsumersWarmerEndsByItselfWhenTheInputEnds) {
  // 256 MiB: beyond the warmer's lead, so only the input's end stops it.
  tk::Ring ring(65536, 4096);
  // The input ends only once the consumer has seen its warmer start: on a
  // busy machine the producer could otherwise finish first, and a warmer
  // that starts after the end rightly stops at once.
  int started[2];
  ASSERT_EQ(::pipe(started), 0);
  pid_t consumer = ::fork();
  ASSERT_NE(consumer, -1);
  if (consumer == 0) {
    std::size_t before = threads();
    ring.warm_ahead(tk::Ring::Side::consumer);
    if (threads() != before + 1) ::_exit(2);
    if (::write(started[1], "s", 1) != 1) ::_exit(4);
    for (int i = 0; i < 4; ++i) {
      if (ring.wait_filled(1, 5s) != tk::Ring::Wait::ready) ::_exit(3);
      ring.release();
    }
    // Not stopped by the Ring's end, which never comes here: by the input's.
    ::_exit(threads_come_down_to(before) ? 0 : 1);
  }
  ::close(started[1]);
  char byte = 0;
  ASSERT_EQ(::read(started[0], &byte, 1), 1) << "the consumer's warmer did not start";
  ::close(started[0]);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(ring.wait_free(5s), tk::Ring::Wait::ready);
    ring.publish(ring.next_free_block().size());
  }
  ring.finish_input();
  int status = 0;
  ASSERT_EQ(::waitpid(consumer, &status, 0), consumer);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the warmer went on past the input's end; 2: none started";
}

TEST(RingWarming, AQueueFileIsNotWarmed) {
  std::size_t before = threads();
  const char* tmp = std::getenv("TMPDIR");
  tk::Ring ring(65536, 64, tmp != nullptr ? tmp : "/tmp");
  ring.warm_ahead(tk::Ring::Side::producer);
  ring.warm_ahead(tk::Ring::Side::consumer);
  EXPECT_EQ(threads(), before);
}

}  // namespace
