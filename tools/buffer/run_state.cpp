#include "run_state.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>
#include <sys/mman.h>

#include "../../lib/error.hpp"

namespace tk::buffer {

struct RunState::Shared {
  ProcessState reader{Phase::copying};
  ProcessState writer{Phase::opening_output};
  std::atomic<bool> drain_on_signal{true};
  std::atomic<pid_t> writer_pid{0};
  std::atomic<bool> writer_reported{false};
  std::atomic<std::uint64_t> volume{1};
  std::atomic<std::int64_t> tape_file{-1};
  // remaining << 32 | maximum, one word so a report never mixes two samples.
  std::atomic<std::uint64_t> tape_capacity{0};
  std::atomic<std::uint64_t> tape_sampled_at{0};
  std::atomic<bool> alerts_known{false};
  std::atomic<std::uint64_t> alerts_before{0};
  std::atomic<std::uint64_t> alerts_during{0};
  std::atomic<std::uint64_t> long_writes{0};
  std::atomic<std::uint64_t> long_write_ns{0};
  // The last kLongWriteLog long writes, slot = index % kLongWriteLog; a
  // slot is stored before long_writes counts it.
  struct LogSlot {
    std::atomic<std::int64_t> start_ns{0};
    std::atomic<std::int64_t> duration_ns{0};
  };
  LogSlot long_write_log[kLongWriteLog];
};

// Shared between processes, and touched by signal handlers: only a
// lock-free atomic is safe in both.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::int64_t>::is_always_lock_free &&
                  std::atomic<int>::is_always_lock_free &&
                  std::atomic<std::uint8_t>::is_always_lock_free &&
                  std::atomic<Phase>::is_always_lock_free &&
                  std::atomic<pid_t>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free,
              "the run state's atomics must be lock-free");

RunState::RunState() {
  void* at = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
  if (at == MAP_FAILED) throw Error(errno, "mmap of the run state");
  shared_ = new (at) Shared;
}

RunState::~RunState() {
  shared_->~Shared();
  ::munmap(shared_, sizeof(Shared));
}

void RunState::set_volume(std::uint64_t volume) noexcept { shared_->volume.store(volume); }
void RunState::set_tape_file(std::int64_t file) noexcept { shared_->tape_file.store(file); }

void RunState::set_output_capacity(std::uint32_t remaining_mib, std::uint32_t maximum_mib,
                                   std::uint64_t at_bytes_out) noexcept {
  shared_->tape_sampled_at.store(at_bytes_out);
  shared_->tape_capacity.store(std::uint64_t{remaining_mib} << 32 | maximum_mib);
}

void RunState::add_output_alerts(std::uint64_t flags, bool before_run) noexcept {
  (before_run ? shared_->alerts_before : shared_->alerts_during).fetch_or(flags);
  shared_->alerts_known.store(true);
}

ProcessState& RunState::reader() noexcept { return shared_->reader; }
ProcessState& RunState::writer() noexcept { return shared_->writer; }
const ProcessState& RunState::reader() const noexcept { return shared_->reader; }
const ProcessState& RunState::writer() const noexcept { return shared_->writer; }

void RunState::set_drain_on_signal(bool drain) noexcept { shared_->drain_on_signal.store(drain); }
bool RunState::drain_on_signal() const noexcept { return shared_->drain_on_signal.load(); }
void RunState::set_writer_pid(pid_t pid) noexcept { shared_->writer_pid.store(pid); }
pid_t RunState::writer_pid() const noexcept { return shared_->writer_pid.load(); }

void RunState::set_writer_ready() noexcept { shared_->writer.set_phase(Phase::copying); }
bool RunState::writer_ready() const noexcept {
  return shared_->writer.phase() != Phase::opening_output;
}
void RunState::set_writer_reported() noexcept { shared_->writer_reported.store(true); }
bool RunState::writer_reported() const noexcept { return shared_->writer_reported.load(); }

OutputStats RunState::output_stats() const noexcept {
  const Shared& s = *shared_;
  OutputStats r;
  r.volume = s.volume.load(std::memory_order_relaxed);
  r.tape_file = s.tape_file.load(std::memory_order_relaxed);
  std::uint64_t capacity = s.tape_capacity.load();
  r.tape_remaining_mib = static_cast<std::uint32_t>(capacity >> 32);
  r.tape_maximum_mib = static_cast<std::uint32_t>(capacity);
  r.tape_sampled_at = s.tape_sampled_at.load();
  r.alerts_known = s.alerts_known.load();
  r.alerts_before = s.alerts_before.load();
  r.alerts_during = s.alerts_during.load();
  r.long_writes = s.long_writes.load(std::memory_order_acquire);
  r.long_write_ns = s.long_write_ns.load(std::memory_order_relaxed);
  return r;
}

RunStats RunState::stats(const Ring& ring) const noexcept {
  RunStats r;
  static_cast<RingStats&>(r) = ring.stats();
  static_cast<OutputStats&>(r) = output_stats();
  return r;
}

void RunState::note_long_write(std::int64_t start_ns, std::int64_t duration_ns) noexcept {
  Shared& s = *shared_;
  std::uint64_t index = s.long_writes.load(std::memory_order_relaxed);
  Shared::LogSlot& slot = s.long_write_log[index % kLongWriteLog];
  slot.start_ns.store(start_ns, std::memory_order_relaxed);
  slot.duration_ns.store(duration_ns, std::memory_order_relaxed);
  s.long_write_ns.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(duration_ns, 0)),
                            std::memory_order_relaxed);
  s.long_writes.store(index + 1, std::memory_order_release);
}

std::optional<LongWrite> RunState::long_write(std::uint64_t index) const noexcept {
  const Shared& s = *shared_;
  std::uint64_t count = s.long_writes.load(std::memory_order_acquire);
  if (index >= count || count - index > kLongWriteLog) return std::nullopt;
  const Shared::LogSlot& slot = s.long_write_log[index % kLongWriteLog];
  LongWrite w{slot.start_ns.load(std::memory_order_relaxed),
              slot.duration_ns.load(std::memory_order_relaxed)};
  // Overwritten while it was read: the slot is a later write's now.
  if (s.long_writes.load(std::memory_order_acquire) - index > kLongWriteLog) return std::nullopt;
  return w;
}

}  // namespace tk::buffer
