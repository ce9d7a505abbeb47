// The writer's digests, carried to the reader for the summary.
//
// The message is lines of words: "algorithm NAME", then for -o "volume HEX"
// per volume and "total HEX", then "tee INDEX HEX" per --tee output, and
// "end", without which the message was cut (a writer that died mid-write).
#include "digest_channel.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"

namespace tk::buffer {

namespace {
// Room for the lines of some ten thousand volumes, where the kernel allows it.
constexpr std::size_t kPipeBytes = std::size_t{1} << 20;
}  // namespace

DigestChannel::DigestChannel() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1) throw_errno("pipe");
  read_end_ = Fd(fds[0]);
  write_end_ = Fd(fds[1]);
  grow_pipe(write_end_.get(), kPipeBytes);
}

void DigestChannel::keep_write_end() noexcept { read_end_ = Fd(); }
void DigestChannel::keep_read_end() noexcept { write_end_ = Fd(); }

void DigestChannel::send(const std::string& message) noexcept {
  if (!write_end_.valid()) return;
  // One write: a pipe takes all of it or, when full, a part the reader
  // finds cut (no "end") and ignores.
  // The digests are promised to the summary: a stop must not cut them.
  retry_eintr_always([&] { return ::write(write_end_.get(), message.data(), message.size()); });
}

std::string DigestChannel::receive() {
  std::string message;
  if (!read_end_.valid()) return message;
  char chunk[4096];
  for (;;) {
    ssize_t got = retry_eintr_always([&] { return ::read(read_end_.get(), chunk, sizeof chunk); });
    if (got > 0) {
      message.append(chunk, static_cast<std::size_t>(got));
      continue;
    }
    return message;  // end of file, or nothing more (EAGAIN): the writer is gone
  }
}

std::string digest_message(DigestKind kind, const std::vector<Output>& outputs) {
  std::string message = std::string("algorithm ") + digest_name(kind) + "\n";
  const Output& primary = outputs.front();
  if (primary.working() && primary.digest) {
    for (const std::string& hex : primary.digest->volume_hexes()) message += "volume " + hex + "\n";
    message += "total " + primary.digest->total_hex() + "\n";
  }
  for (std::size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i].working() && outputs[i].digest)
      message += "tee " + std::to_string(i - 1) + " " + outputs[i].digest->total_hex() + "\n";
  return message + "end\n";
}

std::optional<DigestReport> read_digest_message(const std::string& message,
                                                const std::vector<std::string>& tee_names) {
  DigestReport report;
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string key, hex;
    words >> key;
    if (key == "end") return report;
    if (key == "algorithm") {
      words >> report.algorithm;
    } else if (key == "volume" && words >> hex) {
      report.per_volume.push_back(hex);
    } else if (key == "total") {
      words >> report.total;
    } else if (std::size_t index = 0; key == "tee" && words >> index >> hex) {
      if (index < tee_names.size()) report.tees.push_back({tee_names[index], hex});
    }
  }
  return std::nullopt;
}

}  // namespace tk::buffer
