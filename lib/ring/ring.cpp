// The ring's shared header and its futex-based waits.
#include "ring.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <linux/futex.h>
#include <new>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <boost/interprocess/anonymous_shared_memory.hpp>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>

#include "../error.hpp"
#include "../io.hpp"
#include "../threads.hpp"

namespace tk {

// Lives at the start of the mapping. Only lock-free atomics, so it works across
// processes. The 32-bit sequence words are the futex words; the 64-bit counts
// are the truth.
struct Ring::Shared {
  std::size_t block_size = 0;
  std::size_t blocks = 0;
  std::atomic<std::uint64_t> produced{0};  // blocks published, ever
  std::atomic<std::uint64_t> consumed{0};  // blocks released, ever
  std::atomic<std::uint32_t> produced_word{0};
  std::atomic<std::uint32_t> consumed_word{0};
  // What a sleeping side waits for (0: not sleeping), so the other side only
  // makes the wake-up system call when it reaches that point.
  std::atomic<std::uint64_t> consumer_wants{0};
  std::atomic<std::uint64_t> producer_wants{0};
  std::atomic<bool> input_done{false};
  std::atomic<bool> input_failed{false};
  std::atomic<bool> abort{false};
  std::atomic<bool> consumer_started{false};
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> bytes_out{0};
  std::atomic<std::uint64_t> peak_filled{0};
  std::atomic<std::uint64_t> underruns{0};
  std::atomic<std::uint64_t> consumer_steps{0};
  // Sleeps on the futex words, for buffer --record: the total of those
  // ended, and when the one under way began (0: none), so that a reader
  // sees a long sleep grow rather than jump when it ends.
  std::atomic<std::uint64_t> consumer_wait_ns{0};
  std::atomic<std::int64_t> consumer_wait_since{0};
  std::atomic<std::uint64_t> producer_wait_ns{0};
  std::atomic<std::int64_t> producer_wait_since{0};
  // Followed by `blocks` lengths, then the blocks themselves.
};

// The first lap's warming. In the producer's process, the warmer and the
// producer share one frontier: bytes of the first lap below it are claimed,
// by the warmer a chunk at a time or by the producer a block at a time,
// and each side touches only what it claimed. The producer never touches a
// chunk the warmer is still on: it waits for `warmed` to pass it, which is
// at most one chunk's page faults.
struct Ring::Warmer {
  std::atomic<std::size_t> claimed{0};  // first-lap bytes claimed by either side
  std::atomic<std::size_t> warmed{0};   // the end of the warmer's last finished chunk
  std::atomic<std::uint32_t> wake{0};   // bumped when the producer moves on, or to stop
  std::atomic<bool> stop{false};
  Side side = Side::producer;
  Fd zero;  // the producer's: /dev/zero, when it opens
  Fd sink;  // the consumer's: a memfd the kernel copies one byte a page to
  std::thread thread;

  ~Warmer() {
    stop.store(true);
    wake.fetch_add(1);
    wake.notify_all();
    if (thread.joinable()) thread.join();
  }
};

struct Ring::Mapping {
  boost::interprocess::mapped_region region;  // header, and the blocks without a queue file
  boost::interprocess::mapped_region blocks;  // the queue file's blocks
};

namespace {
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

constexpr std::size_t kAlign = 4096;

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// The block lengths follow the fixed part of the header (the counters).
constexpr std::size_t kLengthsOffset = 512;

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One sleep of a side, timed for buffer --record: two clock reads (vDSO, no
// system call) on a path that is about to make one anyway. `since` is
// cleared before the total grows, so a reader that reads the total first
// may briefly miss the sleep's end but never counts it twice.
class TimedSleep {
 public:
  TimedSleep(std::atomic<std::uint64_t>& total, std::atomic<std::int64_t>& since) noexcept
      : total_(total), since_(since), start_(steady_ns()) {
    since_.store(start_, std::memory_order_release);
  }
  ~TimedSleep() {
    std::int64_t took = steady_ns() - start_;
    since_.store(0, std::memory_order_release);
    total_.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(took, 0)),
                     std::memory_order_release);
  }
  TimedSleep(const TimedSleep&) = delete;
  TimedSleep& operator=(const TimedSleep&) = delete;

 private:
  std::atomic<std::uint64_t>& total_;
  std::atomic<std::int64_t>& since_;
  std::int64_t start_;
};

// A total of sleeps with the one under way counted up to now.
std::uint64_t slept_ns(const std::atomic<std::uint64_t>& total,
                       const std::atomic<std::int64_t>& since) noexcept {
  std::uint64_t ended = total.load(std::memory_order_acquire);
  std::int64_t began = since.load(std::memory_order_acquire);
  if (began == 0) return ended;
  return ended + static_cast<std::uint64_t>(std::max<std::int64_t>(steady_ns() - began, 0));
}

std::uint64_t* lengths_of(void* shared) {
  return reinterpret_cast<std::uint64_t*>(static_cast<std::byte*>(shared) + kLengthsOffset);
}

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen,
                std::chrono::milliseconds timeout) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000) * 1000000L;
  // A shared (non-private) futex: the word is in memory mapped by two processes.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr,
            nullptr, 0);
}

boost::interprocess::mapped_region map_anonymous(std::size_t bytes, const std::string& what) {
  try {
    return boost::interprocess::anonymous_shared_memory(bytes);
  } catch (const boost::interprocess::interprocess_exception& e) {
    int err = e.get_native_error();
    throw Error(err ? err : ENOMEM, "create " + what + " of " + std::to_string(bytes) + " bytes");
  }
}

// An open file of `bytes` bytes that has no name, so that no exit, kill -9
// included, can leave it behind: O_TMPFILE in a directory, or a new file of
// that name removed before anything else happens to it.
Fd open_nameless_file(const std::string& path, std::size_t bytes) {
  Fd fd;
  int made = ::open(path.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (made >= 0) {
    fd = Fd(made);
  } else if (errno == EOPNOTSUPP) {
    // A directory on a file system without O_TMPFILE: a fresh name in it.
    std::string name = path + "/buffer-queue.XXXXXX";
    made = ::mkostemp(name.data(), O_CLOEXEC);
    if (made < 0) throw_errno("create queue file in " + path);
    fd = Fd(made);
    if (::unlink(name.c_str()) != 0) throw_errno("remove queue file " + name);
  } else if (errno == ENOTDIR || errno == ENOENT) {
    // O_EXCL: an existing file may be someone's data, never a scratch queue.
    made = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (made < 0 && errno == EEXIST)
      throw Error(EEXIST, "queue file " + path + " (give a new name or a directory)");
    if (made < 0) throw_errno("create queue file " + path);
    fd = Fd(made);
    if (::unlink(path.c_str()) != 0) throw_errno("remove queue file " + path);
  } else {
    throw_errno("open queue file in " + path);
  }
  // Reserved now: a sparse file on a disk that fills up would fail a page
  // fault in the middle of the run, and that is SIGBUS, not an error.
  // File systems without fallocate (EOPNOTSUPP) only get the size.
  // (fallocate(2) rather than posix_fallocate, whose fallback writes every
  // block: minutes for a large queue.)
  if (::fallocate(fd.get(), 0, 0, static_cast<off_t>(bytes)) != 0) {
    if (errno != EOPNOTSUPP)
      throw_errno("reserve " + std::to_string(bytes) + " bytes for the queue in " + path);
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
      throw_errno("size queue file " + path);
  }
  return fd;
}

// The blocks of a queue file, mapped shared through the descriptor's
// /proc/self/fd name, since the file has no other.
boost::interprocess::mapped_region map_queue_file(const std::string& path, std::size_t bytes) {
  Fd fd = open_nameless_file(path, bytes);
  try {
    std::string by_descriptor = "/proc/self/fd/" + std::to_string(fd.get());
    boost::interprocess::file_mapping file(by_descriptor.c_str(),
                                           boost::interprocess::read_write);
    return boost::interprocess::mapped_region(file, boost::interprocess::read_write, 0, bytes);
  } catch (const boost::interprocess::interprocess_exception& e) {
    int err = e.get_native_error();
    throw Error(err ? err : ENOMEM, "map queue file " + path);
  }
}
}  // namespace

Ring::Ring(std::size_t block_size, std::size_t blocks, const std::string& queue_file) {
  static_assert(sizeof(Shared) <= kLengthsOffset);
  if (block_size == 0 || blocks == 0) throw Error(EINVAL, "create ring");
  std::size_t header = round_up(kLengthsOffset + blocks * sizeof(std::uint64_t) + 64, kAlign);
  if (blocks > (SIZE_MAX - header) / block_size) throw Error(ENOMEM, "create ring");
  mapping_ = std::make_unique<Mapping>();
  void* base = nullptr;
  if (queue_file.empty()) {
    mapping_->region = map_anonymous(header + block_size * blocks, "shared ring");
    base = mapping_->region.get_address();
    data_ = static_cast<std::byte*>(base) + header;
  } else {
    // The counters and futex words stay in memory: they change on every
    // block, and a file's page cache would write them back for nothing.
    mapping_->region = map_anonymous(header, "shared ring header");
    mapping_->blocks = map_queue_file(queue_file, block_size * blocks);
    base = mapping_->region.get_address();
    data_ = static_cast<std::byte*>(mapping_->blocks.get_address());
  }
  shared_ = new (base) Shared();
  shared_->block_size = block_size;
  shared_->blocks = blocks;
}

Ring::~Ring() = default;  // warmer_ is declared after mapping_: it is joined first
Ring::Ring(Ring&&) noexcept = default;
Ring& Ring::operator=(Ring&& other) noexcept {
  if (this != &other) {
    warmer_.reset();  // its thread uses the mapping about to be released
    mapping_ = std::move(other.mapping_);
    warmer_ = std::move(other.warmer_);
    shared_ = other.shared_;
    data_ = other.data_;
    in_underrun_ = other.in_underrun_;
    taken_ = other.taken_;
  }
  return *this;
}

void Ring::warm_ahead(Side side) {
#ifdef TK_WITHOUT_WARM_AHEAD
  // bench/bench-mechanisms' build without it, to show what it gains.
  return;
#endif
  if (warmer_ || mapping_->blocks.get_size() != 0) return;
  warmer_ = std::make_unique<Warmer>();
  Warmer& w = *warmer_;
  w.side = side;
  // A closed standard descriptor must stay closed: buffer checks it (1.19's
  // "can't stat output file") after the warmer has started.
  if (side == Side::producer) {
    w.zero = above_stdio(Fd(::open("/dev/zero", O_RDONLY | O_CLOEXEC)));
    w.thread = thread_without_signals([this] { warm_for_producer(); });
  } else {
    w.sink = above_stdio(Fd(::memfd_create("buffer-ring-warming", MFD_CLOEXEC)));
    if (w.sink.valid()) w.thread = thread_without_signals([this] { warm_for_consumer(); });
  }
}

namespace {
// Small enough that the producer never waits long for the warmer, and that
// a stop is seen within a millisecond or two.
constexpr std::size_t kWarmChunk = std::size_t{256} << 10;

// What both warmers walk: the first lap, a chunk at a time, one byte of
// each page in it handed to the kernel by a single vectored call.
struct FirstLap {
  explicit FirstLap(std::size_t bytes)
      : page(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
        chunk(std::max(page, kWarmChunk)),
        total(bytes),
        iov(chunk / page + 1) {}

  // One byte at `from`, then at each page start up to `to` (a chunk at most).
  int one_byte_a_page(std::byte* data, std::size_t from, std::size_t to) {
    std::size_t count = 0;
    for (std::size_t at = from; at < to; at = (at / page + 1) * page) iov[count++] = iovec{data + at, 1};
    return static_cast<int>(count);
  }

  const std::size_t page;
  const std::size_t chunk;
  const std::size_t total;
  std::vector<iovec> iov;
};
}  // namespace

void Ring::warm_for_producer() {
  Warmer& w = *warmer_;
  Shared& s = *shared_;
  std::byte* data = data_;
  FirstLap lap(s.block_size * s.blocks);
  bool populate = true;
  while (!w.stop.load(std::memory_order_acquire)) {
    std::uint32_t seen = w.wake.load(std::memory_order_acquire);
    std::uint64_t produced = s.produced.load(std::memory_order_acquire);
    if (produced >= s.blocks) break;  // the first lap is over
    std::size_t from = w.claimed.load(std::memory_order_acquire);
    if (from >= lap.total) break;
    if (from >= produced * s.block_size + kWarmLead) {
      w.wake.wait(seen, std::memory_order_acquire);
      continue;
    }
    std::size_t to = std::min(lap.total, from + lap.chunk);
    if (!w.claimed.compare_exchange_weak(from, to, std::memory_order_acq_rel)) continue;
    // The kernel fills the page tables in one call (Linux 5.14 and later).
    // Then a byte of each page is written the way the producer writes the
    // block, by the kernel (readv(2) from /dev/zero, one byte a page, one
    // call a chunk): a virtual machine that shadows page tables makes its
    // entries on first use, and separately for the kernel's accesses and
    // the program's. Measured there, pages touched only by the program or
    // only by madvise still cost the producer's first read(2) into them
    // about as much as fresh ones (bench/README.md, "Measurements behind
    // the code").
    std::size_t page_start = from / lap.page * lap.page;  // the mapping starts on a page
    if (populate && ::madvise(data + page_start, to - page_start, MADV_POPULATE_WRITE) != 0)
      populate = errno != EINVAL;
    int count = lap.one_byte_a_page(data, from, to);
    if (!w.zero.valid() || ::readv(w.zero.get(), lap.iov.data(), count) == -1)
      for (int i = 0; i < count; ++i) *static_cast<volatile char*>(lap.iov[static_cast<std::size_t>(i)].iov_base) = 0;
    w.warmed.store(to, std::memory_order_release);
    w.warmed.notify_all();
  }
}

// The consumer only reads the ring, so its warmer needs no claims: it has
// the kernel read one byte of each page ahead of the consumer (writing them
// to a scratch memfd), which makes the entries the consumer's write(2) of
// the block would otherwise fault in, one page at a time.
void Ring::warm_for_consumer() {
  Warmer& w = *warmer_;
  Shared& s = *shared_;
  std::byte* data = data_;
  FirstLap lap(s.block_size * s.blocks);
  std::size_t from = 0;
  while (!w.stop.load(std::memory_order_acquire) && !s.abort.load(std::memory_order_acquire)) {
    std::uint32_t seen = w.wake.load(std::memory_order_acquire);
    std::uint64_t consumed = s.consumed.load(std::memory_order_acquire);
    if (consumed >= s.blocks || from >= lap.total) break;  // the first lap is over
    // No block will ever be published past the input's end.
    if (s.input_done.load(std::memory_order_acquire) &&
        from >= s.produced.load(std::memory_order_acquire) * s.block_size)
      break;
    std::size_t position = static_cast<std::size_t>(consumed) * s.block_size;
    if (from < position) from = position / lap.page * lap.page;  // the consumer got there first
    if (from >= position + kWarmLead) {
      w.wake.wait(seen, std::memory_order_acquire);
      continue;
    }
    std::size_t to = std::min(lap.total, from + lap.chunk);
    if (::pwritev(w.sink.get(), lap.iov.data(), lap.one_byte_a_page(data, from, to), 0) == -1) break;
    from = to;
  }
}

void Ring::claim_from_warmer(std::uint64_t block) noexcept {
  Warmer& w = *warmer_;
  std::size_t start = static_cast<std::size_t>(block) * shared_->block_size;
  std::size_t end = start + shared_->block_size;
  std::size_t seen = w.claimed.load(std::memory_order_acquire);
  while (seen < end && !w.claimed.compare_exchange_weak(seen, end, std::memory_order_acq_rel)) {
  }
  // The producer's own claims end at `start`: anything beyond is the
  // warmer's, finished once `warmed` reaches it (chunks finish in order).
  if (seen > start) {
    std::size_t needed = std::min(seen, end);
    for (std::size_t at; (at = w.warmed.load(std::memory_order_acquire)) < needed;)
      w.warmed.wait(at, std::memory_order_acquire);
  }
  w.wake.fetch_add(1, std::memory_order_release);
  w.wake.notify_one();
}

void Ring::stop_warming() noexcept {
  if (!warmer_) return;
  warmer_->stop.store(true, std::memory_order_release);
  warmer_->wake.fetch_add(1, std::memory_order_release);
  warmer_->wake.notify_one();
}

std::size_t Ring::block_size() const noexcept { return shared_->block_size; }
std::size_t Ring::blocks() const noexcept { return shared_->blocks; }

Ring::Wait Ring::wait_free(std::chrono::milliseconds timeout) {
  Shared& s = *shared_;
  std::uint64_t produced = s.produced.load(std::memory_order_relaxed);
  if (produced < s.blocks) {
    if (warmer_ && warmer_->side == Side::producer) claim_from_warmer(produced);
    return Wait::ready;
  }
  std::uint64_t target = produced + 1 - s.blocks;  // consumed must reach this
  if (s.consumed.load(std::memory_order_acquire) >= target) return Wait::ready;
  std::uint32_t seen = s.consumed_word.load(std::memory_order_seq_cst);
  s.producer_wants.store(target, std::memory_order_seq_cst);
  if (s.consumed.load(std::memory_order_seq_cst) < target && !s.abort.load()) {
    TimedSleep timed(s.producer_wait_ns, s.producer_wait_since);
    futex_wait(s.consumed_word, seen, timeout);
  }
  s.producer_wants.store(0, std::memory_order_seq_cst);
  if (s.abort.load()) return Wait::finished;
  return s.consumed.load(std::memory_order_acquire) >= target ? Wait::ready : Wait::timed_out;
}

std::span<std::byte> Ring::next_free_block() noexcept {
  std::uint64_t index = shared_->produced.load(std::memory_order_relaxed) % shared_->blocks;
  return {data_ + index * shared_->block_size, shared_->block_size};
}

void Ring::publish(std::size_t bytes) noexcept {
  Shared& s = *shared_;
  std::uint64_t produced = s.produced.load(std::memory_order_relaxed);
  lengths_of(shared_)[produced % s.blocks] = bytes;
  s.bytes_in.fetch_add(bytes, std::memory_order_relaxed);
  s.produced.store(produced + 1, std::memory_order_seq_cst);
  s.produced_word.fetch_add(1, std::memory_order_seq_cst);
  std::uint64_t filled = produced + 1 - s.consumed.load(std::memory_order_relaxed);
  if (filled > s.peak_filled.load(std::memory_order_relaxed))
    s.peak_filled.store(filled, std::memory_order_relaxed);
  std::uint64_t wants = s.consumer_wants.load(std::memory_order_seq_cst);
  if (wants != 0 && produced + 1 >= wants) futex_wake(s.produced_word);
}

void Ring::finish_input(bool cleanly) noexcept {
  stop_warming();
  Shared& s = *shared_;
  if (!cleanly) s.input_failed.store(true, std::memory_order_seq_cst);
  s.input_done.store(true, std::memory_order_seq_cst);
  s.produced_word.fetch_add(1, std::memory_order_seq_cst);
  if (s.consumer_wants.load(std::memory_order_seq_cst) != 0) futex_wake(s.produced_word);
}

Ring::Wait Ring::wait_filled(std::size_t count, std::chrono::milliseconds timeout) {
  Shared& s = *shared_;
  if (count > s.blocks) count = s.blocks;
  std::uint64_t target = taken_ + count;
  for (bool first = true;; first = false) {
    if (s.abort.load(std::memory_order_relaxed)) return Wait::finished;
    std::uint64_t produced = s.produced.load(std::memory_order_acquire);
    if (produced >= target) return Wait::ready;
    if (s.input_done.load(std::memory_order_acquire)) {
      produced = s.produced.load(std::memory_order_acquire);
      return produced > taken_ ? Wait::ready : Wait::finished;
    }
    if (!first) return Wait::timed_out;
    if (count == 1 && produced == taken_ && !in_underrun_ &&
        s.consumer_started.load(std::memory_order_relaxed)) {
      in_underrun_ = true;
      s.underruns.fetch_add(1, std::memory_order_relaxed);
    }
    std::uint32_t seen = s.produced_word.load(std::memory_order_seq_cst);
    s.consumer_wants.store(target, std::memory_order_seq_cst);
    if (s.produced.load(std::memory_order_seq_cst) < target &&
        !s.input_done.load(std::memory_order_seq_cst) && !s.abort.load()) {
      // The wait for the first block is the start, not a wait of the output.
      std::optional<TimedSleep> timed;
      if (s.consumer_started.load(std::memory_order_relaxed))
        timed.emplace(s.consumer_wait_ns, s.consumer_wait_since);
      futex_wait(s.produced_word, seen, timeout);
    }
    s.consumer_wants.store(0, std::memory_order_seq_cst);
  }
}

std::size_t Ring::filled() const noexcept {
  return static_cast<std::size_t>(shared_->produced.load(std::memory_order_acquire) - taken_);
}

std::span<const std::byte> Ring::oldest_filled_block() const noexcept {
  std::uint64_t index = taken_ % shared_->blocks;
  return {data_ + index * shared_->block_size,
          static_cast<std::size_t>(lengths_of(shared_)[index])};
}

void Ring::release() noexcept {
  take();
  release_taken();
}

void Ring::take() noexcept {
  Shared& s = *shared_;
  in_underrun_ = false;
  s.bytes_out.fetch_add(lengths_of(shared_)[taken_ % s.blocks], std::memory_order_relaxed);
  s.consumer_steps.fetch_add(1, std::memory_order_relaxed);
  ++taken_;
}

bool Ring::holds(std::span<const std::byte> bytes) const noexcept {
  const std::byte* end = data_ + shared_->block_size * shared_->blocks;
  return !bytes.empty() && std::less_equal<>()(data_, bytes.data()) &&
         std::less_equal<>()(bytes.data() + bytes.size(), end);
}

void Ring::release_taken() noexcept {
  Shared& s = *shared_;
  std::uint64_t consumed = s.consumed.load(std::memory_order_relaxed) + 1;
  s.consumed.store(consumed, std::memory_order_seq_cst);
  s.consumed_word.fetch_add(1, std::memory_order_seq_cst);
  std::uint64_t wants = s.producer_wants.load(std::memory_order_seq_cst);
  if (wants != 0 && consumed >= wants) futex_wake(s.consumed_word);
  if (warmer_ && warmer_->side == Side::consumer && consumed <= s.blocks) {
    warmer_->wake.fetch_add(1, std::memory_order_release);
    warmer_->wake.notify_one();
  }
}

void Ring::request_abort() noexcept {
  Shared& s = *shared_;
  s.abort.store(true, std::memory_order_seq_cst);
  s.produced_word.fetch_add(1, std::memory_order_seq_cst);
  s.consumed_word.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(s.produced_word);
  futex_wake(s.consumed_word);
}

bool Ring::abort_requested() const noexcept { return shared_->abort.load(); }
void Ring::set_bytes_out(std::uint64_t bytes) noexcept { shared_->bytes_out.store(bytes); }
void Ring::note_consumer_step() noexcept { shared_->consumer_steps.fetch_add(1); }
std::uint64_t Ring::consumer_steps() const noexcept { return shared_->consumer_steps.load(); }
void Ring::note_consumer_started() noexcept { shared_->consumer_started.store(true); }
bool Ring::input_finished() const noexcept { return shared_->input_done.load(); }
bool Ring::input_failed() const noexcept { return shared_->input_failed.load(); }

RingStats Ring::stats() const noexcept {
  const Shared& s = *shared_;
  RingStats r;
  r.bytes_in = s.bytes_in.load(std::memory_order_relaxed);
  r.bytes_out = s.bytes_out.load(std::memory_order_relaxed);
  r.blocks_filled = s.produced.load() - s.consumed.load();
  r.peak_filled = s.peak_filled.load(std::memory_order_relaxed);
  r.underruns = s.underruns.load(std::memory_order_relaxed);
  r.consumer_wait_ns = slept_ns(s.consumer_wait_ns, s.consumer_wait_since);
  r.producer_wait_ns = slept_ns(s.producer_wait_ns, s.producer_wait_since);
  return r;
}

}  // namespace tk
