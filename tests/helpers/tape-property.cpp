// tape-property: random sequences of what happens to a virtual tape and its
// drive state (write sessions closed or killed at any byte, positioning,
// another image copied over or put in its place, a truncation by hand, a
// foreign file, readers, the state file removed, emptied or cut short, a
// hard link made or removed), each step reaching the image by one of its
// names (its path, a symlink, relative spellings, the hard link), each
// followed by the checks an administrator relies on: no byte of a cleanly
// closed file is lost, every name finds the drive where the last step left
// it, the image opens or is refused naming the file (only when its state
// cannot be used), nothing a reader does changes it, a foreign file is
// never written, and verify is clean or names the damage.
//
//   tape-property [--seed S] [--sequences N] [--steps M] [--dir D] [--verbose]
//
// Sequence i runs with seed S + i; a failure prints the sequence's seed and
// the command that replays it alone, and exits 1. Exit 0: all held.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "../../lib/tape/simh_format.hpp"
#include "../../lib/tape/simh_tape.hpp"
#include "../../lib/tape/tape.hpp"

namespace {

namespace fs = std::filesystem;
using tk::MtOp;

// One object of an image as the checks compare them.
struct Obj {
  bool mark = false;
  std::uint32_t length = 0;
  std::uint64_t digest = 0;
  bool operator==(const Obj&) const = default;
};

std::uint64_t digest(std::span<const std::byte> bytes) {
  return std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The image's objects from BOT, read raw (no drive, no state), up to the
// first that is not whole.
std::vector<Obj> objects_of(const std::string& path) {
  std::vector<Obj> out;
  tk::Fd fd = tk::open_file(path, O_RDONLY);
  struct stat st {};
  if (::fstat(fd.get(), &st) == -1) tk::throw_errno("stat " + path);
  tk::simh::ImageReader image(fd.get(), static_cast<std::uint64_t>(st.st_size));
  std::uint64_t pos = 0;
  std::vector<std::byte> buf;
  for (;;) {
    tk::simh::Object o = image.next(pos, false);
    if (o.kind == tk::simh::Kind::tape_mark) {
      out.push_back({true, 0, 0});
    } else if (o.kind == tk::simh::Kind::record) {
      buf.resize(o.length);
      if (!image.read_data(o, buf)) break;
      out.push_back({false, o.length, digest(buf)});
    } else {
      break;
    }
    pos = o.end;
  }
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::byte> record_data(std::uint64_t seed, std::uint32_t length) {
  std::vector<std::byte> data(length);
  std::mt19937_64 gen(seed);
  for (std::size_t i = 0; i < data.size(); i += 8) {
    std::uint64_t word = gen();
    std::memcpy(data.data() + i, &word, std::min<std::size_t>(8, data.size() - i));
  }
  return data;
}

struct Failure {
  std::string what;
};

[[noreturn]] void fail(const std::string& what) { throw Failure{what}; }

// What a writer child reports to the parent through a pipe.
struct Report {
  std::int64_t burst_at = -1;  // lba where its latest write burst began
  std::int64_t first_burst_at = -1;
};

// The plan of one write session, drawn by the parent.
struct Plan {
  std::vector<int> moves;  // 0 rewind, 1 seek, 2 fsf, 3 eom, 4 bsf
  std::vector<std::int64_t> move_args;
  std::vector<std::uint32_t> sizes;
  std::uint64_t record_seed = 0;
  int kill_after = -1;           // SIGKILL after this many records (-1: none)
  std::uint64_t size_limit = 0;  // RLIMIT_FSIZE in bytes (0: none)
  int rewind_after = -1;         // rewind and write a second burst after this many
};

void apply_move(tk::Tape& tape, int move, std::int64_t arg) {
  try {
    switch (move) {
      case 0: tape.op(MtOp::rewind, 1); break;
      case 1: tape.op(MtOp::seek, static_cast<int>(arg)); break;
      case 2: tape.op(MtOp::fsf, 1); break;
      case 3: tape.op(MtOp::eom, 1); break;
      default: tape.op(MtOp::bsf, 1); break;
    }
  } catch (const tk::Error&) {
    // Spacing into the end of data or BOT fails as on st; the drive is
    // somewhere all the same, and that is where the write goes.
  }
}

void send(int fd, std::int64_t value) {
  (void)!::write(fd, &value, sizeof value);
}

// An open refused because the drive state cannot be used (unreadable, or
// kept beside no name of a hard-linked image): allowed, when it names the
// file, and when the model says the state is so.
bool refused_for_state(const tk::Error& e, const std::string& name) {
  return (e.errnum() == EINVAL || e.errnum() == EMLINK) &&
         std::string(e.what()).find("open " + name + " (") != std::string::npos;
}

// The writer: runs in a child, which ends with _exit(0) after a clean close,
// 3 when its open failed, 5 when it was refused for its state
// (refused_for_state), 4 when a write or close failed, or by a signal. It
// reports the position it found at the open, then where each burst began.
[[noreturn]] void run_writer(const std::string& path, const Plan& plan, int report_fd) {
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  std::unique_ptr<tk::Tape> tape;
  try {
    tape = tk::open_tape(path, O_RDWR | O_CREAT, {});
  } catch (const tk::Error& e) {
    _exit(refused_for_state(e, path) ? 5 : 3);
  }
  try {
    send(report_fd, tape->tell());
    for (std::size_t i = 0; i < plan.moves.size(); ++i) apply_move(*tape, plan.moves[i], plan.move_args[i]);
    if (plan.size_limit != 0) {
      struct rlimit lim {plan.size_limit, plan.size_limit};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    send(report_fd, tape->tell());
    for (std::size_t i = 0; i < plan.sizes.size(); ++i) {
      if (static_cast<int>(i) == plan.kill_after) ::raise(SIGKILL);
      if (static_cast<int>(i) == plan.rewind_after) {
        tape->op(MtOp::rewind, 1);
        send(report_fd, tape->tell());
      }
      std::vector<std::byte> data = record_data(plan.record_seed + i, plan.sizes[i]);
      tape->write(data);
    }
    if (plan.kill_after == static_cast<int>(plan.sizes.size())) ::raise(SIGKILL);
    tape->close();
  } catch (const tk::Error&) {
    _exit(4);
  }
  _exit(0);
}

class Sequence {
 public:
  Sequence(std::uint64_t seed, const std::string& dir, bool verbose)
      : gen_(seed), dir_(dir), path_(dir + "/t.tap"), state_(path_ + ".state"), verbose_(verbose) {
    // Every name the image is reached by: a symlink, relative spellings
    // from another directory, and (while it exists) a hard link beside it.
    fs::create_directory(dir_ + "/sub");
    fs::create_symlink("t.tap", dir_ + "/link.tap");
    fs::create_symlink("../link.tap", dir_ + "/sub/up.tap");
  }

  void run(int steps) {
    make_other_image();
    for (int step = 0; step < steps; ++step) {
      step_ = step;
      int kind = step == 0 ? 0 : pick(0, 109);
      if (kind < 40) write_session(step == 0);
      else if (kind < 52) reader();
      else if (kind < 58) copy_over(false);
      else if (kind < 63) copy_over(true);
      else if (kind < 68) truncate_by_hand();
      else if (kind < 72) foreign_file();
      else if (kind < 84) mt_like_move();
      else if (kind < 94) damage_state();
      else if (kind < 100) toggle_hard_link();
      else write_session(false);
      if (verbose_) describe_drive();
      check_always();
    }
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

  void note(const std::string& text) {
    if (verbose_) std::fprintf(stderr, "  step %d: %s\n", step_, text.c_str());
  }

  std::string at() const { return "step " + std::to_string(step_) + ": "; }

  // The name this step reaches the image by.
  std::string some_name() {
    std::vector<std::string> names{path_, dir_ + "/./t.tap", dir_ + "/link.tap",
                                   dir_ + "/sub/../t.tap", dir_ + "/sub/up.tap"};
    if (alias_) names.push_back(alias_name_);
    const std::string& name = names[static_cast<std::size_t>(pick(0, static_cast<int>(names.size()) - 1))];
    note("through " + name.substr(dir_.size() + 1));
    return name;
  }

  // Whether the model says an open must be refused for the drive state:
  // one that is there and cannot be read, or none beside any name of an
  // image with another hard link that holds data.
  bool state_refusal_expected() {
    if (fs::exists(state_)) {
      // Whole: as the drive writes it, from its header to its end line (the
      // steps here only remove, empty or cut the file).
      const std::string text = file_bytes(state_);
      return !(text.starts_with("# tapekit virtual tape drive state, format 2") && text.ends_with("\nend\n"));
    }
    return alias_ && image_size() > 0;
  }

  // An open that failed: allowed only as the refusal the model expects.
  void refused(const tk::Error& e, const std::string& name, const std::string& who) {
    if (!state_refusal_expected() || !refused_for_state(e, name))
      fail(at() + who + " failed: " + e.what());
    note(std::string("refused: ") + e.what());
  }

  // Where every name must find the drive: what the last step left. A
  // session left unfinished is the exception: a writer's open completes it
  // and finds the drive after it, where a reader saw it at its start.
  void check_position(std::int64_t found, const std::string& who) {
    if (known_lba_ && !pending_session_ && found != *known_lba_)
      fail(at() + who + " found the drive at " + std::to_string(found) + ", where the last step left it at " +
           std::to_string(*known_lba_));
  }

  // Another cartridge, written cleanly, to copy over the tape.
  void make_other_image() {
    other_ = dir_ + "/other.tap";
    auto tape = tk::open_tape(other_, O_RDWR | O_CREAT, {});
    int files = pick(1, 3);
    for (int f = 0; f < files; ++f) {
      int records = pick(1, 5);
      for (int r = 0; r < records; ++r)
        tape->write(record_data(gen_(), static_cast<std::uint32_t>(pick(1, 30000))));
      tape->op(MtOp::weof, 1);
    }
    tape->close();
    other_objects_ = objects_of(other_);
  }

  std::uint32_t record_size() {
    int r = pick(0, 24);
    if (r < 16) return static_cast<std::uint32_t>(pick(1, 12000));
    if (r < 24) return static_cast<std::uint32_t>(pick(12000, 70000));
    return static_cast<std::uint32_t>(pick(200000, 600000));  // crosses staging windows
  }

  std::uint64_t image_size() {
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  }

  // The protected prefix must still be there.
  void check_protected(const std::vector<Obj>& now, std::size_t upto, const std::string& when) {
    std::size_t n = std::min(upto, protected_.size());
    if (now.size() < n || !std::equal(protected_.begin(), protected_.begin() + static_cast<std::ptrdiff_t>(n), now.begin())) {
      std::size_t first = 0;
      while (first < n && first < now.size() && now[first] == protected_[first]) ++first;
      fail(at() + when + ": object " + std::to_string(first) + " of a cleanly closed file is lost or changed (" +
           std::to_string(now.size()) + " objects now, " + std::to_string(n) + " protected)");
    }
  }

  // first: the session that makes the tape, closed cleanly.
  void write_session(bool first) {
    Plan plan;
    int moves = pick(0, 2);
    for (int m = 0; m < moves; ++m) {
      plan.moves.push_back(pick(0, 4));
      plan.move_args.push_back(pick(0, static_cast<int>(protected_.size()) + 3));
    }
    int records = pick(1, 8);
    std::uint64_t planned = 0;
    for (int r = 0; r < records; ++r) {
      plan.sizes.push_back(record_size());
      planned += plan.sizes.back() + 12;
    }
    plan.record_seed = gen_();
    int ending = first ? 0 : pick(0, 9);
    if (ending < 4) {
      // closed cleanly
    } else if (ending < 7) {
      plan.kill_after = pick(0, records);
    } else {
      plan.size_limit = image_size() + static_cast<std::uint64_t>(pick(0, static_cast<int>(planned)));
      if (plan.size_limit == 0) plan.size_limit = 1;
    }
    if (pick(0, 5) == 0 && records > 1) plan.rewind_after = pick(1, records - 1);

    int pipe_fds[2];
    if (::pipe(pipe_fds) == -1) fail("pipe");
    const std::string name = some_name();
    const std::string before = file_bytes(path_);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == -1) fail("fork");
    if (pid == 0) {
      ::close(pipe_fds[0]);
      run_writer(name, plan, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    std::vector<std::int64_t> bursts;
    std::int64_t v = 0;
    while (::read(pipe_fds[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) bursts.push_back(v);
    ::close(pipe_fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) == -1 && errno == EINTR) {
    }
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const bool signalled = WIFSIGNALED(status);
    note(std::string("write session of ") + std::to_string(records) + " records, " +
         (clean ? "closed" : signalled ? "killed by signal " + std::to_string(WTERMSIG(status))
                                       : "exit " + std::to_string(WEXITSTATUS(status))) +
         ", bursts at " + (bursts.empty() ? "-" : std::to_string(bursts.front())));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
      fail(at() + "a writer could not open the image");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 5) {
      if (!state_refusal_expected()) fail(at() + "a writer was refused for a drive state that is sound");
      if (file_bytes(path_) != before) fail(at() + "a writer refused at its open changed the image");
      return;
    }
    if (!bursts.empty()) {
      check_position(bursts.front(), "a writer");
      bursts.erase(bursts.begin());
    }
    std::vector<Obj> now = objects_of(path_);
    if (bursts.empty()) {
      check_protected(now, protected_.size(), "a writer that never wrote");
      return;
    }
    const auto lowest = static_cast<std::size_t>(*std::min_element(bursts.begin(), bursts.end()));
    check_protected(now, lowest, "before a writer's position");
    if (protected_.size() > lowest) protected_.resize(lowest);
    if (!clean) return;
    // Closed: the last burst's records and one filemark are on the tape.
    const auto last = static_cast<std::size_t>(bursts.back());
    const std::size_t first_record = plan.rewind_after > 0 ? static_cast<std::size_t>(plan.rewind_after) : 0;
    std::vector<Obj> expect;
    for (std::size_t i = first_record; i < plan.sizes.size(); ++i) {
      std::vector<std::byte> data = record_data(plan.record_seed + i, plan.sizes[i]);
      expect.push_back({false, plan.sizes[i], digest(data)});
    }
    expect.push_back({true, 0, 0});
    if (now.size() != last + expect.size() ||
        !std::equal(expect.begin(), expect.end(), now.begin() + static_cast<std::ptrdiff_t>(last)))
      fail(at() + "a cleanly closed session's records are not on the tape at " + std::to_string(last) +
           " (" + std::to_string(now.size()) + " objects)");
    protected_ = now;
  }

  // A reader changes no byte of the image (and so never cuts).
  void reader() {
    std::string before = file_bytes(path_);
    note("reader");
    const std::string name = some_name();
    try {
      auto tape = tk::open_tape(name, O_RDONLY, {});
      check_position(tape->tell(), "a reader");
      int reads = pick(0, 4);
      std::vector<std::byte> buf(1 << 20);
      for (int r = 0; r < reads; ++r) {
        try {
          (void)tape->read(buf);
        } catch (const tk::Error&) {
        }
      }
      if (pick(0, 1) == 0) {
        try {
          tape->op(MtOp::rewind, 1);
        } catch (const tk::Error&) {
        }
      }
      tape->close();
    } catch (const tk::Error& e) {
      refused(e, name, "a reader's open");
    }
    try {
      (void)tk::validate_simh_image(path_);
    } catch (const tk::Error& e) {
      refused(e, path_, "verify");
    }
    if (file_bytes(path_) != before) fail(at() + "a reader or verify changed the image");
  }

  void copy_over(bool replace) {
    note(replace ? "another image put in the tape's place" : "another image copied over the tape");
    if (replace) {
      fs::remove(path_);
      fs::copy_file(other_, path_);
      // The hard link still names the image that was there: another cartridge.
      if (alias_) fs::remove(alias_name_);
      alias_ = false;
    } else {
      std::string bytes = file_bytes(other_);
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    protected_ = other_objects_;
  }

  // The user cuts the image somewhere past its first object: what lies
  // wholly before the cut stays protected.
  void truncate_by_hand() {
    std::vector<Obj> now = objects_of(path_);
    std::uint64_t size = image_size();
    if (now.empty() || size < 16) return;
    std::uint64_t first_end = now[0].mark ? 4 : 8 + now[0].length + (now[0].length & 1);
    if (size <= first_end) return;
    auto cut = first_end + static_cast<std::uint64_t>(pick(0, static_cast<int>(std::min<std::uint64_t>(size - first_end, 1u << 30))));
    note("truncated by hand at " + std::to_string(cut));
    if (::truncate(path_.c_str(), static_cast<off_t>(cut)) == -1) fail("truncate");
    std::vector<Obj> after = objects_of(path_);
    if (protected_.size() > after.size()) protected_.resize(after.size());
  }

  // A gzip archive under the image's name: no open may write it. Then the
  // tape comes back.
  void foreign_file() {
    std::string saved = path_ + ".saved";
    fs::copy_file(path_, saved, fs::copy_options::overwrite_existing);
    std::string gz("\x1f\x8b\x08\x00", 4);  // gzip, deflate: a 560 927-byte record
    for (int i = pick(10, 400); i > 0; --i) gz += static_cast<char>(pick(0, 255));
    {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out.write(gz.data(), static_cast<std::streamsize>(gz.size()));
    }
    note("a gzip archive in the tape's place");
    try {
      auto tape = tk::open_tape(path_, O_RDWR | O_CREAT, {});
      std::vector<std::byte> hi(3, std::byte{'h'});
      tape->write(hi);
      tape->close();
      fail(at() + "a gzip archive was opened for writing as a tape");
    } catch (const tk::Error& e) {
      if (e.errnum() != EMEDIUMTYPE && !(state_refusal_expected() && refused_for_state(e, path_)))
        fail(at() + "a gzip archive was refused with " + e.what());
    }
    if (file_bytes(path_) != gz) fail(at() + "a gzip archive was changed");
    fs::copy_file(saved, path_, fs::copy_options::overwrite_existing);
    fs::remove(saved);
    protected_.clear();  // the image came back as bytes, the drive's view of it is new
    protected_ = objects_of(path_);
  }

  // mt rewind, seek or fsf: a reader's open that moves the drive.
  void mt_like_move() {
    std::string before = file_bytes(path_);
    note("a positioning command");
    const int move = pick(0, 4);
    // As mt's rewind and eod do, those two start a drive afresh whose
    // state cannot be read.
    tk::OpenOptions how;
    how.replace_unusable_state = move == 0 || move == 3;
    const bool damaged = fs::exists(state_) && state_refusal_expected();
    const std::string name = some_name();
    try {
      auto tape = tk::open_tape(name, O_RDONLY, how);
      if (!(how.replace_unusable_state && damaged)) check_position(tape->tell(), "a positioning command");
      apply_move(*tape, move, pick(0, static_cast<int>(protected_.size()) + 3));
      tape->close();
    } catch (const tk::Error& e) {
      if (how.replace_unusable_state && damaged) fail(at() + "rewind or eod did not take up an unreadable state: " + e.what());
      refused(e, name, "a positioning open");
    }
    if (file_bytes(path_) != before) fail(at() + "a positioning command changed the image");
  }

  // The state file removed, emptied or cut short by hand (or a power loss
  // on a file system that lost its data).
  void damage_state() {
    if (!fs::exists(state_)) return;
    const int how = pick(0, 2);
    if (how == 0) {
      note("state removed");
      fs::remove(state_);
    } else {
      const auto size = static_cast<int>(fs::file_size(state_));
      if (size == 0) return;
      const int keep = how == 1 ? 0 : pick(0, size - 1);
      note("state cut to " + std::to_string(keep) + " bytes");
      fs::resize_file(state_, static_cast<std::uintmax_t>(keep));
    }
  }

  // A hard link of the image made (beside it or in another directory), or
  // removed.
  void toggle_hard_link() {
    if (alias_) {
      note("hard link removed");
      fs::remove(alias_name_);
    } else {
      if (!fs::exists(path_)) return;
      alias_name_ = pick(0, 1) == 0 ? dir_ + "/alias.tap" : dir_ + "/sub/alias.tap";
      note("hard link made: " + alias_name_.substr(dir_.size() + 1));
      fs::create_hard_link(path_, alias_name_);
    }
    alias_ = !alias_;
  }

  // The image's size and what its state says of a write session, for a replay.
  void describe_drive() {
    std::string state = file_bytes(state_);
    std::string said;
    for (const char* key : {"\nwriting ", "\nsession-start ", "\nsession-first-word ", "\noffset "}) {
      auto at_key = state.find(key);
      if (at_key == std::string::npos) continue;
      auto end = state.find('\n', at_key + 1);
      said += " " + state.substr(at_key + 1, end - at_key - 1);
    }
    std::fprintf(stderr, "    image %llu bytes;%s\n", static_cast<unsigned long long>(image_size()), said.c_str());
  }

  void check_always() {
    if (!fs::exists(path_)) return;
    std::vector<Obj> now = objects_of(path_);
    check_protected(now, protected_.size(), "after the step");
    known_lba_.reset();
    pending_session_ = file_bytes(state_).find("\nwriting 1\n") != std::string::npos;
    const bool refusal_expected = state_refusal_expected();
    try {
      auto tape = tk::open_tape(path_, O_RDONLY, {});
      if (refusal_expected) fail(at() + "an image whose drive state cannot be used was opened");
      (void)tape->status();
      const std::int64_t at_open = tape->tell();
      tape->close();
      known_lba_ = at_open;
    } catch (const tk::Error& e) {
      refused(e, path_, "the image's open");
    }
    try {
      auto defect = tk::validate_simh_image(path_);
      if (defect && defect->what.empty()) fail(at() + "verify found damage and named none");
    } catch (const tk::Error& e) {
      refused(e, path_, "verify");
    }
  }

  std::mt19937_64 gen_;
  std::string dir_;
  std::string path_;
  std::string state_;
  bool alias_ = false;      // alias_name_ is a hard link of the image
  std::string alias_name_;
  std::optional<std::int64_t> known_lba_;  // where the last step left the drive
  bool pending_session_ = false;           // ... with a write session unfinished
  std::string other_;
  std::vector<Obj> other_objects_;
  std::vector<Obj> protected_;  // objects no step may lose, from BOT
  bool verbose_;
  int step_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  long sequences = 100;
  int steps = 12;
  std::string base;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tape-property: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") seed = std::stoull(value());
    else if (a == "--sequences") sequences = std::stol(value());
    else if (a == "--steps") steps = std::stoi(value());
    else if (a == "--dir") base = value();
    else if (a == "--verbose") verbose = true;
    else {
      std::fprintf(stderr, "tape-property: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (base.empty()) base = fs::temp_directory_path().string();
  std::string tmpl = base + "/tape-property.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("tape-property: mkdtemp");
    return 2;
  }
  const std::string root = tmpl;
  long done = 0;
  for (long i = 0; i < sequences; ++i) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(i);
    const std::string dir = root + "/" + std::to_string(s);
    fs::create_directory(dir);
    if (verbose) std::fprintf(stderr, "sequence seed %llu\n", static_cast<unsigned long long>(s));
    try {
      Sequence(s, dir, verbose).run(steps);
    } catch (const Failure& f) {
      std::printf("FAILED sequence seed %llu: %s\n", static_cast<unsigned long long>(s), f.what.c_str());
      std::printf("replay: tape-property --seed %llu --sequences 1 --steps %d --verbose\n",
                  static_cast<unsigned long long>(s), steps);
      std::printf("left in %s\n", dir.c_str());
      return 1;
    } catch (const std::exception& e) {
      std::printf("FAILED sequence seed %llu: unexpected %s\n", static_cast<unsigned long long>(s), e.what());
      std::printf("replay: tape-property --seed %llu --sequences 1 --steps %d --verbose\n",
                  static_cast<unsigned long long>(s), steps);
      std::printf("left in %s\n", dir.c_str());
      return 1;
    }
    fs::remove_all(dir);
    ++done;
  }
  fs::remove_all(root);
  std::printf("%ld sequences of %d steps held (seeds %llu to %llu)\n", done, steps,
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed + static_cast<std::uint64_t>(sequences) - 1));
  return 0;
}
