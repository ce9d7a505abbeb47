// buffer's ends: opening the input, the output and the tees as 1.19 words
// its failures, and the checks made before anything is opened.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "../../lib/error.hpp"
#include "../../lib/tape/tape.hpp"
#include "options.hpp"

namespace tk::buffer {

bool is_char_device(int fd);
// Grows a pipe so that each side moves whole blocks per wake-up.
void enlarge_pipe(int fd, std::size_t block_size);
// buffer 1.19's -Z: back to offset 0 on a character device after each GiB.
void rewind_offset_if_device(int fd);
std::string strerror_text(int err);
// The line naming which of a remote tape's streams was lost ("" otherwise).
std::string stream_lost_text(const Error& e, const char* role = "writer");
OpenOptions open_options(const Options& o);
// Opens `name` (empty: the inherited descriptor `fd`); `role` is "input"
// or "output", as in 1.19's messages. Failures are ExactExit(255).
std::unique_ptr<Tape> open_end(const std::string& name, int fd, int flags, const char* role,
                               const Options& o);
// Refuses, before anything is opened, two names that reach one file where
// one of them is written: an output over the input, two outputs, a record
// or picture over any end (compared as files, not as spellings).
void refuse_one_file_twice(const Options& o);

// Refuses, before anything is opened, a --record or --plot file that could
// not be written (a missing directory, no permission): the run's picture
// is found missing at the start, not after the backup.
void refuse_unwritable_side_files(const Options& o);
void refuse_unverifiable(const Options& o, const std::string& output, const char* option);
// -i names a local file that is not there (stat fails).
bool input_is_missing(const Options& o);
// Makes an opened input ready for the reader: sequential reads announced
// (a remote tape reads ahead), a pipe enlarged to hold a block.
void prepare_input(Tape& input, const Options& o);
// The input, opened and prepared.
std::unique_ptr<Tape> open_input(const Options& o);
// -o (empty: standard output), or a --tee output `name`, opened for
// writing with its pipe enlarged.
std::unique_ptr<Tape> open_output(const Options& o);
std::unique_ptr<Tape> open_output(const Options& o, const std::string& name);
// Runs body; under --json, turns what it throws into JSON message lines.
int with_json_diagnostics(bool json, const std::string& program, int failure,
                          const std::function<int()>& body);

}  // namespace tk::buffer
