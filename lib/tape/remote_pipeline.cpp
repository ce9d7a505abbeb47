// The rmt client's records and its pipeline with tapekit's rmt: agreeing on
// it, writes sent within a window that grows with the round trip, the
// records in flight and what becomes of them on a failure or a lost
// connection, the server's stop and its acknowledgement, and settling
// before any other request. Read-ahead is in remote_read_ahead.cpp.
#include "remote_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <poll.h>
#include <utility>

#include "remote_internal.hpp"

namespace tk {

using detail::initial_read_window;
using detail::initial_write_window;
using detail::max_window;

RemotePipeline::RemotePipeline(RemoteLink& link, RemoteStreams& streams, Tape& tape)
    : link_(link),
      streams_(streams),
      tape_(tape),
      write_window_(initial_write_window),
      read_window_(initial_read_window) {}

std::size_t RemotePipeline::read(std::span<std::byte> buf) {
  if (!writes_in_flight_.empty()) settle("read");
  reading_ = true;
  if (read_ahead_wanted_ && !buf.empty()) {
    agree("read");
    if (pipelined_) return read_ahead(buf);
  }
  // Plain reads take no streams.
  streams_.end_joiners();
  if (reads_in_flight_ > 0) settle_reads("read");
  if (server_stopped_) acknowledge_stop();
  request_ = "R" + std::to_string(buf.size()) + "\n";
  link_.send(request_, "read");
  return take_read_reply(buf);
}

void RemotePipeline::write(std::span<const std::byte> data) {
  if (reads_in_flight_ > 0) settle_reads("write");
  reading_ = false;
  agree("write");
  if (pipelined_) return write_pipelined(data);
  request_ = "W" + std::to_string(data.size()) + "\n";
  link_.send(request_, "write", data);
  rmt::Reply r = link_.receive("write");
  if (!r.ok) throw Error(r.errnum, "write " + tape_.name());
  ++records_on_tape_;
  const auto written = static_cast<std::size_t>(
      std::min<std::int64_t>(r.value, static_cast<std::int64_t>(data.size())));
  bytes_on_tape_ += written;
  if (written != data.size()) throw Error(ENOSPC, "write " + tape_.name(), written);
}

void RemotePipeline::agree(const std::string& action) {
  if (pipeline_asked_) return;
  pipeline_asked_ = true;
  // Only a v1 server may see an "i" request (GNU rmt ends the session on
  // one); of those, others refuse this op without side effects. I-1 costs
  // rmt-dump its raw op numbers above 10, which only mt sends, and mt
  // neither reads nor writes.
  if (link_.tapekit().has_value()) {
    if (!*link_.tapekit()) return;
  } else {
    link_.probe_version("pipeline");
    if (link_.version() != RemoteLink::Version::v1) return;
  }
  link_.send(request(), "pipeline");
  take_reply(action);
  // Only tapekit's rmt pipelines, and only it takes streams.
  if (pipelined_) {
    streams_.join(action);
    widen_for_streams();
  } else {
    streams_.end_joiners();
  }
}

void RemotePipeline::agree_with_open(const std::string& open_request) {
  // Our rmt answers them in turn: a failed O leaves no tape, which the
  // streams request is then refused for; the pipeline alone changes
  // nothing until a W or R.
  const bool ask_streams = streams_.joining();
  std::string batch = open_request + request();
  if (ask_streams) batch += streams_.request();
  link_.send(batch, "open", {}, ask_streams ? 3 : 2);
  rmt::Reply opened = link_.receive("open");
  if (!opened.ok) throw Error(opened.errnum, "open " + tape_.name());
  take_reply("open");
  if (!pipelined_) {
    if (ask_streams) link_.receive("open");  // refused as well: an rmt from before the pipeline
    streams_.end_joiners();
    return;
  }
  if (ask_streams) {
    streams_.take_reply("open");
    widen_for_streams();
  }
}

std::string RemotePipeline::request() {
  return "i" + std::to_string(rmt::tapekit_pipeline_op) + "\n" +
         std::to_string(rmt::pipeline_version) + "\n";
}

void RemotePipeline::take_reply(const std::string& action) {
  pipeline_asked_ = true;
  rmt::Reply r = link_.receive(action);
  pipelined_ = r.ok && r.value >= 1;
}

void RemotePipeline::widen_for_streams() {
  // Each stream carries a channel window a round trip from the start: the
  // windows start there instead of doubling up to it over round trips.
  const std::size_t carried = std::min<std::size_t>(max_window, link_.count() * ssh_channel_window);
  write_window_ = std::max(write_window_, carried);
}

void RemotePipeline::acknowledge_stop() {
  link_.transact("i" + std::to_string(rmt::tapekit_acknowledge_op) + "\n0\n", "acknowledge");
  server_stopped_ = false;
}

void RemotePipeline::write_pipelined(std::span<const std::byte> data) {
  if (server_stopped_) acknowledge_stop();
  while (!writes_in_flight_.empty() && link_.reply_ready()) take_write_reply();
  while (!writes_in_flight_.empty() &&
         (write_bytes_in_flight_ + data.size() > write_window_ ||
          writes_in_flight_.size() >= rmt::pipelined_max_requests)) {
    // The window is full and the oldest reply has not come. If what we
    // sent has left the pipe too, the round trip, not the link, is what
    // holds the records back: a larger window carries more. Otherwise the
    // link is the limit and a larger window would only hold more memory.
    if (write_window_ < max_window && !link_.reply_ready() && link_.all_sent())
      write_window_ = std::min(write_window_ * 2, max_window);
    take_write_reply();
  }
  request_ = "W" + std::to_string(data.size()) + "\n";
  link_.send(request_, "write", data);
  write_bytes_in_flight_ += data.size();
  writes_in_flight_.push_back(data.size());
}

void RemotePipeline::take_write_reply() {
  rmt::Reply r = link_.receive("write");
  const std::size_t size = writes_in_flight_.front();
  if (!r.ok || static_cast<std::uint64_t>(r.value) != size) fail_pipelined_writes(r);
  ++records_on_tape_;
  bytes_on_tape_ += size;
  write_bytes_in_flight_ -= size;
  writes_in_flight_.pop_front();
}

void RemotePipeline::fail_pipelined_writes(const rmt::Reply& failed) {
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
    link_.receive("write");
    refused_.add(writes_in_flight_.front());
    write_bytes_in_flight_ -= writes_in_flight_.front();
  }
  write_bytes_in_flight_ = 0;
  server_stopped_ = true;
  acknowledge_stop();
  const Unwritten lost = std::exchange(refused_, {});
  throw UnwrittenRecords(failed.ok ? ENOSPC : failed.errnum, "write " + tape_.name(), lost.records,
                         lost.bytes);
}

void RemotePipeline::settle(const std::string& action) {
  settle_writes(0);
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
RemotePipeline::Unwritten RemotePipeline::settle_writes_on_loss() noexcept {
  // Refused before the loss: they come first, as they were written first.
  Unwritten records = std::exchange(refused_, {});
  if (writes_in_flight_.empty()) return records;
  RemoteStream& s = link_.stream(0);
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

void RemotePipeline::resolve_unconfirmed(
    Unwritten& records, const std::function<std::optional<std::uint64_t>()>& read_back) {
  if (writes_in_flight_.empty()) return;
  std::optional<std::uint64_t> size = read_back();
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

void RemotePipeline::fail_on_connection_loss(
    std::string text, Unwritten unwritten,
    const std::function<std::optional<std::uint64_t>()>& read_back) {
  if (unconfirmed_.records > 0) resolve_unconfirmed(unwritten, read_back);
  if (unwritten.records == 0 && unconfirmed_.records == 0) throw Error(EIO, text);
  text += "; " + std::to_string(records_on_tape_) +
          (records_on_tape_ == 1 ? " record is" : " records are") + " on the tape";
  if (unconfirmed_.records > 0) {
    text += std::string(unconfirmed_.bytes_there ? ": " : ", ") +
            std::to_string(unconfirmed_.records) + " more (" + std::to_string(unconfirmed_.bytes) +
            " bytes) were sent; the server did not confirm them";
    if (unconfirmed_.bytes_there)
      text += ", and a read-back found " + std::to_string(*unconfirmed_.bytes_there) +
              " of those bytes in the file";
  }
  // Even with nothing known to be lost, a LostWrites: the caller's count of
  // what reached the tape has to be looked at again.
  throw UnwrittenRecords(EIO, text, unwritten.records, unwritten.bytes);
}

void RemotePipeline::fail_on_stream_loss(std::string text, std::optional<std::int64_t> written) {
  // What a failed write left off the tape before the loss is known unwritten.
  Unwritten records = std::exchange(refused_, {});
  if (reading_ && writes_in_flight_.empty()) {
    text += "; " + std::to_string(records_read_) +
            (records_read_ == 1 ? " record was" : " records were") + " read";
  } else if (written) {
    // Records reach the tape in order: those in flight up to the count the
    // server gave are there, the rest are not.
    std::uint64_t on_tape = static_cast<std::uint64_t>(*written);
    std::uint64_t index = records_on_tape_;
    for (std::size_t size : writes_in_flight_)
      if (index++ >= on_tape) records.add(size);
    text += "; " + std::to_string(on_tape) + (on_tape == 1 ? " record is" : " records are") +
            " on the tape";
  } else if (!writes_in_flight_.empty()) {
    // No stream could say: the writes in flight are neither on the tape nor
    // lost as far as anyone knows. They stay counted in flight
    // (writes_in_flight()), so that a caller's own count says the same.
    text += "; at least " + std::to_string(records_on_tape_) + " records are on the tape, up to " +
            std::to_string(writes_in_flight_.size()) + " more may be";
    reads_in_flight_ = 0;
    throw StreamLost(text, records.records, records.bytes);
  }
  writes_in_flight_.clear();
  write_bytes_in_flight_ = 0;
  reads_in_flight_ = 0;
  throw StreamLost(text, records.records, records.bytes);
}

}  // namespace tk
