// The rmt client's pipeline with tapekit's rmt: agreeing on it, writes sent
// within a window that grows with the round trip, the records in flight and
// what becomes of them on a failure or a lost connection, the server's stop
// and its acknowledgement, and settling before any other request.
#include "remote_tape.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/ioctl.h>
#include <utility>

#include "remote_internal.hpp"

namespace tk {

using detail::max_window;

void RemoteTape::agree_pipeline(const std::string& action) {
  if (pipeline_asked_) return;
  pipeline_asked_ = true;
  // Only a v1 server may see an "i" request (GNU rmt ends the session on
  // one); of those, others refuse this op without side effects. I-1 costs
  // rmt-dump its raw op numbers above 10, which only mt sends, and mt
  // neither reads nor writes.
  if (tapekit_.has_value()) {
    if (!*tapekit_) return;
  } else {
    probe_version("pipeline");
    if (version_ != Version::v1) return;
  }
  send(pipeline_request(), "pipeline");
  take_pipeline_reply(action);
  // Only tapekit's rmt pipelines, and only it takes streams.
  if (pipelined_)
    join_streams(action);
  else
    end_joiners(joiners_);
}

std::string RemoteTape::pipeline_request() {
  return "i" + std::to_string(rmt::tapekit_pipeline_op) + "\n" +
         std::to_string(rmt::pipeline_version) + "\n";
}

void RemoteTape::take_pipeline_reply(const std::string& action) {
  pipeline_asked_ = true;
  rmt::Reply r = receive(action);
  pipelined_ = r.ok && r.value >= 1;
}

void RemoteTape::acknowledge_stop() {
  transact("i" + std::to_string(rmt::tapekit_acknowledge_op) + "\n0\n", "acknowledge");
  server_stopped_ = false;
}

bool RemoteTape::reply_ready() {
  Stream& s = receiving();
  if (s.in->buffered()) return true;
  pollfd p{s.link.from_child.get(), POLLIN, 0};
  return retry_eintr(::poll, &p, nfds_t{1}, 0) > 0;
}

void RemoteTape::write_pipelined(std::span<const std::byte> data) {
  if (server_stopped_) acknowledge_stop();
  while (!writes_in_flight_.empty() && reply_ready()) take_write_reply();
  while (!writes_in_flight_.empty() &&
         (write_bytes_in_flight_ + data.size() > write_window_ ||
          writes_in_flight_.size() >= rmt::pipelined_max_requests)) {
    // The window is full and the oldest reply has not come. If what we
    // sent has left the pipe too, the round trip, not the link, is what
    // holds the records back: a larger window carries more. Otherwise the
    // link is the limit and a larger window would only hold more memory.
    auto all_sent = [this] {
      for (const Stream& s : streams_) {
        int unsent = 0;
        if (::ioctl(s.link.to_child.get(), FIONREAD, &unsent) != 0 || unsent != 0) return false;
      }
      return true;
    };
    if (write_window_ < max_window && !reply_ready() && all_sent())
      write_window_ = std::min(write_window_ * 2, max_window);
    take_write_reply();
  }
  request_ = "W" + std::to_string(data.size()) + "\n";
  send(request_, "write", data);
  write_bytes_in_flight_ += data.size();
  writes_in_flight_.push_back(data.size());
}

void RemoteTape::take_write_reply() {
  rmt::Reply r = receive("write");
  const std::size_t size = writes_in_flight_.front();
  if (!r.ok || static_cast<std::uint64_t>(r.value) != size) fail_pipelined_writes(r);
  ++records_on_tape_;
  bytes_on_tape_ += size;
  write_bytes_in_flight_ -= size;
  writes_in_flight_.pop_front();
}

void RemoteTape::fail_pipelined_writes(const rmt::Reply& failed) {
  // Counted in refused_ rather than here: the connection may be lost while
  // the replies below are taken (a server that gave up on a request cut
  // short answers it and ends), and the records then still count as
  // unwritten.
  const std::size_t size = writes_in_flight_.front();
  std::size_t written =
      failed.ok ? static_cast<std::size_t>(std::clamp<std::int64_t>(failed.value, 0,
                                                                    static_cast<std::int64_t>(size)))
                : 0;
  refused_.add(size - written);
  bytes_on_tape_ += written;
  write_bytes_in_flight_ -= size;
  writes_in_flight_.pop_front();
  // The server cancels every write after the failed one. A reply that says
  // otherwise (no server of ours sends it) is taken as cancelled too: the
  // writes lost must be the last ones the caller made, to be written again
  // elsewhere in order; one written twice is better than one lost.
  for (; !writes_in_flight_.empty(); writes_in_flight_.pop_front()) {
    receive("write");
    refused_.add(writes_in_flight_.front());
    write_bytes_in_flight_ -= writes_in_flight_.front();
  }
  write_bytes_in_flight_ = 0;
  server_stopped_ = true;
  acknowledge_stop();
  const Unwritten lost = std::exchange(refused_, {});
  throw UnwrittenRecords(failed.ok ? ENOSPC : failed.errnum, "write " + name(), lost.records,
                         lost.bytes);
}

void RemoteTape::settle(const std::string& action) {
  while (!writes_in_flight_.empty()) take_write_reply();
  if (reads_in_flight_ > 0) settle_reads(action);
}

// Pipelined writes were counted as written when sent (write_pipelined).
// What was sent whole still reaches the server, which answers each request
// before it sees the end of its input: once the link to it is closed, the
// answers that come say exactly which of those records are on the tape.
// One refused (or written in part) ends them: the server cancels every
// write after a failed one, so the rest are not on the tape either. When
// the answers end without one (the server, or only its replies, are gone,
// or none came within 30 s), the writes left were sent whole and nobody
// has said whether they arrived: they stay in flight, unconfirmed.
RemoteTape::Unwritten RemoteTape::settle_writes_on_loss() noexcept {
  // Refused before the loss: they come first, as they were written first.
  Unwritten records = std::exchange(refused_, {});
  if (writes_in_flight_.empty()) return records;
  Stream& s = streams_.front();
  s.link.to_child = Fd();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::optional<std::size_t> refused_after;  // bytes of the refused record that were written
  // After a refused write the server cancels every later one.
  if (records.records > 0) refused_after = 0;
  try {
    while (!refused_after && !writes_in_flight_.empty() && s.link.from_child.valid()) {
      if (!s.in->buffered()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{s.link.from_child.get(), POLLIN, 0};
        if (left.count() <= 0 || retry_eintr(::poll, &p, nfds_t{1}, static_cast<int>(left.count())) <= 0)
          break;
      }
      rmt::Reply r = rmt::read_reply(*s.in);
      const std::size_t size = writes_in_flight_.front();
      if (!r.ok || static_cast<std::uint64_t>(r.value) != size) {
        refused_after = r.ok ? static_cast<std::size_t>(std::clamp<std::int64_t>(
                                   r.value, 0, static_cast<std::int64_t>(size)))
                             : 0;
        break;
      }
      ++records_on_tape_;
      bytes_on_tape_ += size;
      write_bytes_in_flight_ -= size;
      writes_in_flight_.pop_front();
    }
  } catch (const std::exception&) {
    // The end of the answers: the link or the server is gone.
  }
  if (!refused_after) {
    unconfirmed_.records = writes_in_flight_.size();
    unconfirmed_.bytes = write_bytes_in_flight_;
    return records;
  }
  std::size_t skip = *refused_after;
  bytes_on_tape_ += skip;
  for (std::size_t size : writes_in_flight_) records.add(size - std::exchange(skip, 0));
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
  return records;
}

std::optional<std::uint64_t> RemoteTape::read_back_size() const noexcept {
  if ((flags_ & O_TRUNC) == 0 || (flags_ & O_ACCMODE) == O_RDONLY) return std::nullopt;
  try {
    // Not even opened again: a device (opening a tape drive may move or
    // load the tape), or a virtual tape, which has records, not a size.
    const std::string path = parse_remote_name(name()).path;
    if (path.starts_with("/dev/") || (path.ends_with(".tap") && !options_.plain_remote))
      return std::nullopt;
    OpenOptions how = options_;
    how.streams = 1;
    how.warn = nullptr;
    RemoteTape file(name(), O_RDONLY, how);
    // A tape, or a virtual tape, answers its status; lseek there says
    // nothing about what was written. A plain file has no status.
    try {
      file.status();
      return std::nullopt;
    } catch (const Error& e) {
      if (e.errnum() != ENOTTY) return std::nullopt;
    }
    std::int64_t end = file.seek(0, SEEK_END);
    file.close();
    if (end < 0) return std::nullopt;
    return static_cast<std::uint64_t>(end);
  } catch (const std::exception&) {
    return std::nullopt;  // the host, its shell or its rmt cannot be asked
  }
}

void RemoteTape::resolve_unconfirmed(Unwritten& records) {
  if (writes_in_flight_.empty()) return;
  std::optional<std::uint64_t> size = read_back_size();
  // A file shorter than what was answered, or longer than all that was
  // sent, was written by someone else too: it says nothing about ours.
  if (!size || *size < bytes_on_tape_ || *size - bytes_on_tape_ > write_bytes_in_flight_) return;
  std::uint64_t arrived = *size - bytes_on_tape_;
  unconfirmed_.bytes_there = arrived;
  bytes_on_tape_ += arrived;
  for (std::size_t length : writes_in_flight_) {
    const std::size_t there = static_cast<std::size_t>(std::min<std::uint64_t>(arrived, length));
    arrived -= there;
    if (there == length)
      ++records_on_tape_;
    else
      records.add(length - there);
  }
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
}

}  // namespace tk
