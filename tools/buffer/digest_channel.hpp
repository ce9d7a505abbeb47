// The writer's digests (--hash), carried to the reader, which prints the
// run's summary (--progress, --interval, --json) after the writer has ended.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../../lib/io.hpp"
#include "outputs.hpp"
#include "report.hpp"

namespace tk::buffer {

// A pipe made before the fork, written once by the writer at its end and
// read by the reader after it waited for the writer. Both ends are
// non-blocking: a writer that dies leaves the reader an empty or cut
// message (no summary digest), never a wait, and a writer never waits for
// a reader that reads only after it has ended.
class DigestChannel {
 public:
  DigestChannel();
  // After the fork, each process keeps the end it uses.
  void keep_write_end() noexcept;
  void keep_read_end() noexcept;
  // The writer: one message; one that does not fit the pipe is dropped.
  void send(const std::string& message) noexcept;
  // The reader: everything sent so far.
  std::string receive();

 private:
  Fd read_end_;
  Fd write_end_;
};

// The digests of what reached each output still working, -o (outputs[0])
// and each --tee, as one message for DigestChannel.
std::string digest_message(DigestKind kind, const std::vector<Output>& outputs);
// The report in a whole message, naming the tees as the --tee options do;
// nullopt for nothing or a message cut short.
std::optional<DigestReport> read_digest_message(const std::string& message,
                                                const std::vector<std::string>& tee_names);

}  // namespace tk::buffer
