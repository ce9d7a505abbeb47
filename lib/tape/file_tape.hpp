// The plain-file backend: bytes on a file, pipe or terminal. Tape operations
// fail with ENOTTY, as rmt answers for a file that is not a tape.
#pragma once

#include <fcntl.h>
#include <memory>
#include <string>

#include "../io.hpp"
#include "tape.hpp"

namespace tk {

class FileTape final : public Tape {
 public:
  // owned: close the descriptor on close(); records: one write is one record.
  FileTape(Fd fd, std::string name, bool owned, bool records);
  ~FileTape() override;

  std::size_t read(std::span<std::byte> buf) override;
  void write(std::span<const std::byte> data) override;
  void op(MtOp op, int count) override;
  TapeStatus status() override;
  std::int64_t tell() override;
  std::int64_t seek(std::int64_t offset, int whence) override;
  void close() override;
  bool keeps_records() const override { return records_; }
  int poll_fd() const override { return fd_.get(); }

 private:
  Fd fd_;
  bool owned_;
  bool records_;
};

// path is relative to options.dir_fd (openat(2)), created with
// options.create_mode; options.single_link_writes is honoured.
std::unique_ptr<Tape> open_file_tape(const std::string& path, int flags, const OpenOptions& options);

// EMLINK naming path when st is a regular file with another hard link.
void refuse_linked_write(const struct stat& st, const std::string& path);

}  // namespace tk
