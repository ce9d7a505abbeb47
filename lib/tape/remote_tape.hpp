// The remote backend: "[user@]host:path" reached through rsh/ssh and an rmt
// server on the far side, speaking the codec of lib/rmt (docs/rmt-protocol.md,
// "The client's rules": bounded replies, symbolic flags, S as one byte but to
// GNU rmt, v1 ops after I-1). RemoteTape is the Tape; its parts have headers
// of their own: the link (remote_link.hpp), the parallel streams
// (remote_streams.hpp) and the records' pipeline (remote_pipeline.hpp).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "remote_link.hpp"
#include "remote_pipeline.hpp"
#include "remote_streams.hpp"
#include "tape.hpp"

namespace tk {

// One connection per open, as GNU clients do: the remote shell starts
// "rmt" on the host, O opens the device, C (at close) ends it, so a server
// that hangs up after C (GNU rmt) costs nothing.
class RemoteTape final : public Tape, private RemoteLink::Owner {
 public:
  // Runs RSH HOST [-l USER] RMT, where RSH is options.rsh_command, else
  // $RSH, else "ssh" (split at blanks, so "ssh -p 2222" works), and RMT is
  // options.rmt_command, else $RMT, else "/etc/rmt"; then opens the path.
  // A path ending in ".tap" is a virtual tape only to tapekit's rmt: unless
  // options.plain_remote, any other server is refused (EMEDIUMTYPE) before
  // the open request that would create the file there. No answer within the
  // connect timeout (see OpenOptions) ends the remote shell (ETIMEDOUT).
  RemoteTape(const std::string& name, int flags, const OpenOptions& options);
  ~RemoteTape() override;

  std::size_t read(std::span<std::byte> buf) override { return pipeline_.read(buf); }
  void write(std::span<const std::byte> data) override { pipeline_.write(data); }
  void op(MtOp op, int count) override;
  TapeStatus status() override;
  std::int64_t tell() override;
  std::int64_t seek(std::int64_t offset, int whence) override;
  void close() override;
  bool keeps_records() const override { return true; }
  void expect_sequential_reads() override { pipeline_.want_read_ahead(); }
  // Asked of tapekit's rmt (i29811), which sends its drive the command; any
  // other server is asked nothing: scsi::Refusal::other_server, naming it.
  std::vector<std::uint8_t> health_data(scsi::HealthQuery query) override;

  // Pipelined writes sent whose reply has not come.
  Unacknowledged unacknowledged() const noexcept override {
    return {pipeline_.bytes_in_flight(), pipeline_.writes_in_flight()};
  }
  bool settle_before_close() noexcept override;
  void settle_writes(std::size_t leave = 0) override {
    if (open_ && !link_.broken()) pipeline_.settle_writes(leave);
  }
  LinkLoss link_loss() const override {
    const RemotePipeline::Unconfirmed& u = pipeline_.unconfirmed();
    return {lost_reason_, u.records, u.bytes, u.bytes_there};
  }

 private:
  // RemoteLink::Owner. A lost connection: the writes in flight are settled
  // as far as the server still answers, the shells hung up, and the records
  // that did not reach the tape reported (UnwrittenRecords). With parallel
  // streams, a lost stream: a stream still up is asked how many records
  // the tape holds, and StreamLost says which did not reach it.
  [[noreturn]] void lose_connection(const std::string& action, const std::string& why,
                                    std::size_t stream) override;
  [[noreturn]] void lose_stream(int stream, const std::string& action,
                                const std::string& why) override;
  // The link's hang-up, and the streams still joining ended first.
  int hang_up(bool at_once = false, std::size_t which = 0) noexcept override;

  // O, and with it the pipeline and the streams when the session is known
  // to want them.
  void open_request(const std::string& request, bool agree_now);
  // C, with the links closed behind it; throws when the close failed.
  void send_close();
  // Once the shells are gone: how many bytes the file holds, asked through
  // a new connection, when that says which unconfirmed writes arrived (a
  // plain file the open truncated; a device or a virtual tape says nothing).
  std::optional<std::uint64_t> read_back_size() const noexcept;

  RemoteLink link_;
  RemoteStreams streams_;
  RemotePipeline pipeline_;
  OpenOptions options_;  // the open's, for a read-back
  int flags_ = 0;        // the open's
  std::string request_;  // reused request buffer
  std::string lost_reason_;
  bool open_ = false;
  std::exception_ptr settle_failure_;  // settle_before_close()'s, for close()
};

}  // namespace tk
