// The rmt client's reads: one record a reply, pipelined reads asked before
// the caller takes them, and the records read ahead but not taken given back
// (the tape spaces back over them).
#include "remote_pipeline.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "remote_internal.hpp"

namespace tk {

using detail::max_window;
using detail::register_bits;

std::size_t RemotePipeline::read_ahead(std::span<std::byte> buf) {
  // Records read ahead with another buffer size might not fit this one.
  if (reads_ended_ || (reads_in_flight_ > 0 && buf.size() != read_size_)) settle_reads("read");
  if (server_stopped_) acknowledge_stop();
  read_size_ = buf.size();
  // Records in flight are bounded by what they hold, which is what the
  // last one held, not the (often much larger) buffer they may fill.
  std::size_t record = last_record_ > 0 ? last_record_ : read_size_;
  std::size_t most = std::min(rmt::pipelined_max_requests, std::max<std::size_t>(1, max_window / record));
  const std::size_t streams = link_.count();
  // A connection carries at most its ssh channel window a round trip, so
  // more read ahead on it only waits in the ssh client's buffers, which
  // OpenSSH then spends its time moving and reallocating (--streams 8 read
  // 128 MiB with 4 CPU-seconds, half of them memmove in ssh, and at half
  // the speed, against 1 CPU-second capped).
  if (streams > 1)
    most = std::min(most, std::max<std::size_t>(streams, streams * ssh_channel_window / record));
  // Streams ask a channel window each from the start, by the size of the
  // records once one is known. One connection grows its window instead:
  // waiting for the reply means the requests in flight do not cover the
  // round trip, so it asks further ahead next time.
  if (streams > 1) {
    read_window_ = most;
  } else {
    if (reads_in_flight_ > 0 && !link_.reply_ready()) read_window_ = std::min(read_window_ * 2, most);
    read_window_ = std::min(read_window_, most);
  }
  request_ = "R" + std::to_string(read_size_) + "\n";
  if (streams > 1) {
    // One request per stream in turn.
    for (; reads_in_flight_ < read_window_; ++reads_in_flight_) link_.send(request_, "read");
  } else if (reads_in_flight_ < read_window_) {
    std::string requests;
    for (std::size_t n = reads_in_flight_; n < read_window_; ++n) requests += request_;
    link_.send(requests, "read", {}, read_window_ - reads_in_flight_);
    reads_in_flight_ = read_window_;
  }
  --reads_in_flight_;
  std::size_t n = take_read_reply(buf);
  if (n > 0) last_record_ = n;
  return n;
}

std::size_t RemotePipeline::take_read_reply(std::span<std::byte> buf) {
  rmt::Reply r = link_.receive("read");
  if (!r.ok || r.value == 0) {
    // The server now cancels reads until told it is known (protocol.hpp).
    server_stopped_ = pipelined_;
    reads_ended_ = reads_in_flight_ > 0;
  }
  if (!r.ok) throw Error(r.errnum, "read " + tape_.name());
  // A server sending more than asked would overflow the caller's buffer
  // (CVE-2010-0624); the stream cannot be resynchronised after it.
  if (static_cast<std::uint64_t>(r.value) > buf.size())
    link_.lose("read", "server sent " + std::to_string(r.value) + " bytes for " +
                           std::to_string(buf.size()));
  auto n = static_cast<std::size_t>(r.value);
  std::size_t got = 0;
  const std::size_t stream = link_.last_stream();
  try {
    got = link_.reply_in().read_exact(buf.first(n));
  } catch (const Interrupted&) {
    // A stop, as in receive(): the rest of the record may still come, so
    // the session cannot go on, and close() hangs up at once; the link is
    // not lost, and a server that hung would not let its shell end.
    link_.break_off();
    throw;
  } catch (const Error& e) {
    link_.lose("read", e.what(), stream);
  }
  if (got < n) link_.lose("read", "connection lost", stream);
  if (n > 0) ++records_read_;
  return n;
}

void RemotePipeline::settle_reads(const std::string& action) {
  // What the server did for the reads the caller never took: records it
  // passed, and whether one reached the end of the file (cancelled reads
  // did nothing).
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  bool passed_end = false;
  for (; reads_in_flight_ > 0; --reads_in_flight_) {
    rmt::Reply r = link_.receive(action);
    if (r.ok && r.value > 0) {
      if (static_cast<std::uint64_t>(r.value) > read_size_)
        link_.lose(action, "server sent " + std::to_string(r.value) + " bytes for " +
                               std::to_string(read_size_));
      std::uint64_t got = 0;
      const std::size_t stream = link_.last_stream();
      try {
        got = link_.reply_in().discard(static_cast<std::uint64_t>(r.value));
      } catch (const Interrupted&) {
        link_.break_off();  // as in take_read_reply()
        throw;
      } catch (const Error& e) {
        link_.lose(action, e.what(), stream);
      }
      if (got < static_cast<std::uint64_t>(r.value))
        link_.lose(action, "connection lost", stream);
      ++records;
      bytes += got;
    } else if (r.ok) {
      passed_end = true;
    } else if (r.errnum != ECANCELED) {
      ++records;  // a bad record is passed, as the next read shows
    }
    if (!r.ok || r.value == 0) server_stopped_ = true;
  }
  reads_ended_ = false;
  // The stop is acknowledged before the next R or W, not here: spacing back
  // is not cancelled, and after a close nothing needs it.
  if (records > 0 || passed_end) step_back(records, bytes, passed_end);
}

void RemotePipeline::step_back(std::uint64_t records, std::uint64_t bytes, bool passed_end) {
  // The caller must find the tape where its own reads left it. Records are
  // spaced back over, exactly; a filemark read ahead but not taken is
  // spaced back over too, which leaves the block number unknown, as st
  // leaves it after bsf (callers that expect_sequential_reads() take the
  // filemark unless they stop early). At end of data the read moved nothing.
  if (passed_end) {
    link_.send("sf", "read-ahead");
    rmt::Reply r = link_.receive("read-ahead", rmt::ReplyValue::field);
    if (!r.ok || (static_cast<std::uint64_t>(register_bits(r.value)) & gmt::eod) == 0)
      tape_.op(MtOp::bsf, 1);
  }
  if (records == 0) return;
  try {
    tape_.op(MtOp::bsr, static_cast<int>(records));
  } catch (const Error& e) {
    // A file read through rmt: its offset goes back by the bytes instead.
    if (e.errnum() != ENOTTY && e.errnum() != EINVAL) throw;
    tape_.seek(-static_cast<std::int64_t>(bytes), SEEK_CUR);
  }
}

}  // namespace tk
