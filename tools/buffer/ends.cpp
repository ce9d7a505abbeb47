// Opening buffer's ends (input, output, tees) with 1.19's messages, and
// what --json makes of a stop's last words.
#include "ends.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/path.hpp"
#include "../common/run_main.hpp"
#include "../common/same_file.hpp"
#include "buffer.hpp"
#include "report.hpp"

namespace tk::buffer {

bool is_char_device(int fd) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
}

// A 64 KiB pipe makes producer and consumer take turns in small steps. A
// pipe of 1 MiB (the default pipe-max-size), or two blocks if larger and
// allowed, lets each side move whole blocks per wake-up (bench/README.md,
// "Measurements behind the code").
void enlarge_pipe(int fd, std::size_t block_size) {
  constexpr std::size_t kPreferred = std::size_t{1} << 20;
  if (fd < 0) return;
  if (grow_pipe(fd, std::max(kPreferred, block_size * 2)) < kPreferred) grow_pipe(fd, kPreferred);
}

// buffer 1.19's -Z: rewind a character device after each GiB, for old tape
// drivers with 2 GiB offset limits. Harmless on Linux st, so failures are ignored.
void rewind_offset_if_device(int fd) {
  if (is_char_device(fd)) ::lseek(fd, 0, SEEK_SET);
}

std::string strerror_text(int err) { return std::strerror(err); }

// For a host:path name, "cannot open" is followed by what the remote backend
// saw (how the remote shell ended; the error itself is on the line before).
// The way out for a local file whose name has a colon (backup-10:00.tar) is
// offered only when such a file could exist here: its directory does.
std::string remote_detail(const std::string& name, const Error& e, const Options& o) {
  OpenOptions how;
  how.force_local = o.force_local;
  if (!opens_remote(name, how)) return "";
  std::string text = "buffer: " + e.context();
  std::size_t slash = name.rfind('/');
  std::string directory = slash == std::string::npos ? "." : name.substr(0, slash + 1);
  struct stat st {};
  if (::stat(directory.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    text += " (--force-local makes " + name + " a local file)";
  // The remote rmt's own error ("open h:/x") adds nothing to 1.19's lines.
  else if (e.context() == "open " + name)
    return "";
  return text + "\n";
}

// Which of a remote tape's streams was lost, how, and what the tape holds:
// the line after 1.19's, which has only strerror's words.
std::string stream_lost_text(const Error& e, const char* role) {
  if (dynamic_cast<const StreamLost*>(&e) == nullptr) return "";
  return std::string("buffer (") + role + "): " + e.context() + "\n";
}

OpenOptions open_options(const Options& o) {
  OpenOptions oo;
  oo.rsh_command = o.rsh_command;
  oo.rmt_command = o.rmt_command;
  oo.force_local = o.force_local;
  oo.connect_timeout = o.connect_timeout;
  oo.open_timeout = o.open_timeout;
  oo.plain_remote = o.plain_remote;
  oo.streams = o.streams;
  // --streams auto aims at no more than --output-rate lets through.
  oo.stream_rate = o.output_rate;
  oo.warn = [](const std::string& text) { print_stderr("buffer: warning: " + text + "\n"); };
  return oo;
}

// Opens one end: `name` (empty: the inherited descriptor `fd`) with `flags`;
// `role` is "input" or "output", as in buffer 1.19's messages.
std::unique_ptr<Tape> open_end(const std::string& name, int fd, int flags, const char* role,
                               const Options& o) {
  if (name.empty()) {
    try {
      return tape_from_fd(fd, fd == 0 ? "standard input" : "standard output");
    } catch (const Error& e) {
      throw ExactExit(kExitSetup, std::string("buffer: can't stat ") + role +
                                      " file: " + strerror_text(e.errnum()) + "\n");
    }
  }
  // A stop that came just before would not interrupt an open that blocks
  // (a FIFO no one has opened yet): it is honoured here.
  if (stop_requested()) throw Interrupted(std::string("open ") + name);
  try {
    return open_tape(name, flags, open_options(o));
  } catch (const Interrupted&) {
    throw;  // a signal while opening: quiet, as any stop
  } catch (const Error& e) {
    // 1.19's two lines, then why where the tape layer knows more: a file
    // named *.tap that is no image, the remote shell that ended.
    const auto* damaged = dynamic_cast<const DamagedImage*>(&e);
    std::string detail = damaged ? "buffer: " + name + ": " + damaged->damage() + "\n"
                                 : remote_detail(name, e, o);
    // A local drive that did not open within --open-timeout: which limit.
    if (detail.empty() && e.errnum() == ETIMEDOUT && e.context() != "open " + name)
      detail = "buffer: " + e.context() + "\n";
    throw ExactExit(kExitSetup, std::string("buffer: cannot open ") + role + " file: " +
                                    strerror_text(e.errnum()) + "\nfilename: " + name + "\n" +
                                    detail);
  }
}

namespace {

// One of the names a run was given, and what it is.
struct NamedEnd {
  std::string label;  // as the refusal names it: "-o x.tap", "standard output"
  FileIdentity identity;
  bool written = false;
  bool data = false;  // -i, -o or a --tee: the pipeline's own ends
};

NamedEnd named_end(const std::string& option, const std::string& name, int standard_fd,
                   bool written, bool data, const Options& o) {
  std::string label = name.empty() || name == "-"
                          ? std::string(standard_fd == 0 ? "standard input" : "standard output")
                          : option + " " + name;
  return {label, identify_name(name, standard_fd, open_options(o)), written, data};
}

}  // namespace

void refuse_one_file_twice(const Options& o) {
  std::vector<NamedEnd> ends;
  const bool runs_pipeline = o.plot_from.empty();
  if (runs_pipeline) {
    ends.push_back(named_end("-i", o.input, 0, false, true, o));
    ends.push_back(named_end("-o", o.output, 1, true, true, o));
    for (const std::string& tee : o.tees) ends.push_back(named_end("--tee", tee, 1, true, true, o));
  } else {
    ends.push_back(named_end("--plot-from", o.plot_from, 0, false, false, o));
  }
  if (!o.record_file.empty()) ends.push_back(named_end("--record", o.record_file, 1, true, false, o));
  if (!o.plot_file.empty()) ends.push_back(named_end("--plot", o.plot_file, 1, true, false, o));
  for (std::size_t i = 0; i < ends.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const NamedEnd& a = ends[j];
      const NamedEnd& b = ends[i];
      if (!(a.written || b.written) || !same_file(a.identity, b.identity) ||
          a.identity.null_device())
        continue;
      // The pipeline reading and writing one terminal or pipe is no
      // clash; an output opened over the input file would empty it
      // (buffer 1.19 emptied it silently).
      if (a.data && b.data && !a.written) {
        if (!b.identity.regular()) continue;
        throw ExactExit(kExitSetup, output_is_input_text("buffer", b.label));
      }
      throw ExactExit(kExitSetup, "buffer: " + b.label + " and " + a.label +
                                      " are one file; nothing was opened or written\n");
    }
}

namespace {

// Why a file could not be opened for writing ("" if, as far as access(2)
// tells before anything is opened, it could).
std::string why_not_writable(const std::string& name) {
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return strerror_text(EISDIR);
    return ::access(name.c_str(), W_OK) == 0 ? "" : strerror_text(errno);
  }
  if (errno != ENOENT) return strerror_text(errno);
  return ::access(directory_of(after_symlinks(name)).c_str(), W_OK | X_OK) == 0 ? ""
                                                                                : strerror_text(errno);
}

}  // namespace

void refuse_unwritable_side_files(const Options& o) {
  auto refuse = [](const std::string& name, const char* option) {
    if (name.empty()) return;
    std::string why = why_not_writable(name);
    if (!why.empty())
      throw ExactExit(kExitSetup, std::string("buffer: ") + option + " " + name +
                                      ": cannot be written: " + why + "; nothing was run\n");
  };
  refuse(o.record_file, "--record");
  refuse(o.plot_file, "--plot");
}

// --verify reads each output back by opening it again. A FIFO's second
// open waits for a writer that never comes, and a socket cannot be opened
// at all: refused before anything is opened or read. A name that does not
// exist yet becomes a file; a remote one is the rmt server's to open.
void refuse_unverifiable(const Options& o, const std::string& output, const char* option) {
  if (!o.verify || output.empty() || output == "-") return;
  if (opens_remote(output, open_options(o))) return;
  struct stat st {};
  if (::stat(output.c_str(), &st) != 0) return;
  const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : nullptr;
  if (what == nullptr) return;
  throw ExactExit(kExitSetup, std::string("buffer: --verify cannot read back ") + option + " " +
                                  output + ": it is " + what + "\n");
}

bool input_is_missing(const Options& o) {
  if (o.input.empty() || o.input == "-" || opens_remote(o.input, open_options(o))) return false;
  struct stat st {};
  return ::stat(o.input.c_str(), &st) != 0;
}

void prepare_input(Tape& input, const Options& o) {
  input.expect_sequential_reads();
  enlarge_pipe(input.poll_fd(), o.block_size);
}

std::unique_ptr<Tape> open_input(const Options& o) {
  std::unique_ptr<Tape> input = open_end(o.input, 0, O_RDONLY, "input", o);
  prepare_input(*input, o);
  return input;
}

std::unique_ptr<Tape> open_output(const Options& o, const std::string& name) {
  std::unique_ptr<Tape> output = open_end(name, 1, O_WRONLY | O_CREAT | O_TRUNC, "output", o);
  enlarge_pipe(output->poll_fd(), o.block_size);
  return output;
}

std::unique_ptr<Tape> open_output(const Options& o) { return open_output(o, o.output); }

// Under --json a stop's last words are "message" objects too: run_main
// prints what reaches it as text, so what body throws is turned into an
// ExactExit of JSON lines first. Without --json, body runs as it is.
int with_json_diagnostics(bool json, const std::string& program, int failure,
                          const std::function<int()>& body) {
  if (!json) return body();
  try {
    return body();
  } catch (const ExactExit& e) {
    throw ExactExit(e.status(), json_message_lines(e.what()));
  } catch (const UsageError& e) {
    throw ExactExit(failure, json_message_lines(program + ": " + e.what() + "\n" + kUsageText));
  } catch (const Interrupted&) {
    throw;  // quiet, as any stop
  } catch (const Error& e) {
    if (e.errnum() == EPIPE) throw;
    throw ExactExit(failure, json_message_lines(program + ": " + e.what() + "\n"));
  } catch (const std::exception& e) {
    throw ExactExit(failure, json_message_lines(program + ": internal error: " + e.what() + "\n"));
  }
}

}  // namespace tk::buffer
