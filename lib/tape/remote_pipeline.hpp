// The rmt client's records: reads and writes over the link, pipelined with
// tapekit's rmt (protocol.hpp, i29805/i29806). The write window and the
// writes in flight (sizes only: the records are the caller's, sent from its
// memory and never copied or kept), read-ahead, settling before any other
// request, the server's stop and its acknowledgement, and what becomes of
// the writes in flight when one fails or the connection is lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "remote_link.hpp"
#include "remote_streams.hpp"
#include "tape.hpp"

namespace tk {

class RemotePipeline {
 public:
  // Writes that did not reach the tape (UnwrittenRecords): how many, and
  // their bytes not on it (the first may be there in part).
  struct Unwritten {
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    void add(std::uint64_t lost) {
      if (lost == 0) return;
      ++records;
      bytes += lost;
    }
  };
  // The writes sent whole that the server never answered before the
  // connection was lost (LinkLoss).
  struct Unconfirmed {
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    std::optional<std::uint64_t> bytes_there;
  };

  // `tape` is the one the records are read from and written to: records
  // read ahead and not taken are given back by spacing it back.
  RemotePipeline(RemoteLink& link, RemoteStreams& streams, Tape& tape);
  RemotePipeline(const RemotePipeline&) = delete;
  RemotePipeline& operator=(const RemotePipeline&) = delete;

  std::size_t read(std::span<std::byte> buf);
  void write(std::span<const std::byte> data);
  // Reads go ahead of the caller once the pipeline is agreed.
  void want_read_ahead() noexcept { read_ahead_wanted_ = true; }
  // O, sent with the pipeline's request (and the streams', when they are
  // joining) right behind it: one round trip for what took three.
  void agree_with_open(const std::string& open_request);

  // Before any other request: the replies to the writes in flight are
  // taken, and records read ahead that the caller did not take are given
  // back (the tape spaces back over them).
  void settle(const std::string& action);
  // The replies to the oldest writes in flight, until `leave` are left.
  void settle_writes(std::size_t leave) {
    while (writes_in_flight_.size() > leave) take_write_reply();
  }
  // Pipelined writes sent whose reply has not come.
  std::size_t writes_in_flight() const noexcept { return writes_in_flight_.size(); }
  std::uint64_t bytes_in_flight() const noexcept { return write_bytes_in_flight_; }
  // Writes answered since the open.
  std::uint64_t records_on_tape() const noexcept { return records_on_tape_; }
  const Unconfirmed& unconfirmed() const noexcept { return unconfirmed_; }
  bool reads_in_flight() const noexcept { return reads_in_flight_ > 0; }

  // When the one connection is lost with writes in flight: takes the answers
  // the server still sends and returns the records it refused or cancelled,
  // which did not reach the tape. Those sent whole and never answered stay
  // in flight, counted as unconfirmed.
  Unwritten settle_writes_on_loss() noexcept;
  // Once the shells are gone: throws for the lost connection (`text` says
  // what and why), with `unwritten` and what the tape holds. `read_back`
  // asks how many bytes the file holds, which may say which unconfirmed
  // writes arrived.
  [[noreturn]] void fail_on_connection_loss(
      std::string text, Unwritten unwritten,
      const std::function<std::optional<std::uint64_t>()>& read_back);
  // Throws StreamLost (`text` says which and why) with the writes a failure
  // left off the tape, and, by the count of records written the server
  // gave (`written`), the writes in flight that did not reach it.
  [[noreturn]] void fail_on_stream_loss(std::string text, std::optional<std::int64_t> written);

 private:
  // Pipelined rmt with tapekit's rmt (protocol.hpp): asked once, at the
  // first read or write, so that nothing else a session does changes; or
  // with O, when the open already says the session will pipeline.
  void agree(const std::string& action);
  static std::string request();
  void take_reply(const std::string& action);
  // Each joined stream carries a channel window a round trip from the start.
  void widen_for_streams();
  void acknowledge_stop();
  void write_pipelined(std::span<const std::byte> data);
  // Takes the reply to the oldest write in flight; a failure there throws
  // UnwrittenRecords after the replies to all later ones.
  void take_write_reply();
  [[noreturn]] void fail_pipelined_writes(const rmt::Reply& failed);
  std::size_t read_ahead(std::span<std::byte> buf);
  // Takes the reply to the oldest read in flight into buf.
  std::size_t take_read_reply(std::span<std::byte> buf);
  void settle_reads(const std::string& action);
  void step_back(std::uint64_t records, std::uint64_t bytes, bool passed_end);
  // Moves the unconfirmed writes, by the file's size, to the tape or to
  // `records`; leaves them in flight when there is none or it cannot be right.
  void resolve_unconfirmed(Unwritten& records,
                           const std::function<std::optional<std::uint64_t>()>& read_back);

  RemoteLink& link_;
  RemoteStreams& streams_;
  Tape& tape_;
  std::string request_;  // reused request buffer

  bool pipeline_asked_ = false;
  bool pipelined_ = false;
  // The server cancels reads or writes until acknowledged (a read ended, a
  // write failed).
  bool server_stopped_ = false;

  std::uint64_t records_on_tape_ = 0;  // writes answered since the open
  std::uint64_t bytes_on_tape_ = 0;    // and their bytes
  Unconfirmed unconfirmed_;
  // Writes in flight: each record's size, until its reply says it is on
  // the tape. The records themselves are the caller's (UnwrittenRecords):
  // nothing is copied to send them or kept.
  std::deque<std::size_t> writes_in_flight_;
  // Records a failed write left off the tape (its unwritten part, and the
  // writes the server cancelled after it), gathered while the replies after
  // the failure are taken. Whatever ends that (the UnwrittenRecords it
  // throws, or a connection lost on the way) reports them first.
  Unwritten refused_;
  std::size_t write_bytes_in_flight_ = 0;
  std::size_t write_window_;  // bytes, grows up to max_window

  std::uint64_t records_read_ = 0;  // records handed to the caller since the open
  bool reading_ = false;            // the last record asked for was a read
  bool read_ahead_wanted_ = false;
  bool reads_ended_ = false;  // a read in flight returned 0 or failed
  std::size_t reads_in_flight_ = 0;
  std::size_t read_size_ = 0;
  std::size_t last_record_ = 0;  // bytes in the last record read ahead
  std::size_t read_window_;      // requests
};

}  // namespace tk
