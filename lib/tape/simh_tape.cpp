// SimhTape: the Linux st driver's behaviour (docs/tape-semantics.md, whose
// headings the quotes below name) emulated over a SIMH image, with the
// drive's state kept in a sidecar file so that the image acts as a no-rewind
// device between opens.
//
// Capacity (docs/tape-semantics.md, "Capacity and early warning"): capacity
// counts image bytes. The early warning point is at 7/8 of it: the write that
// crosses it completes (and sets EOT), the next write fails with ENOSPC (EOD
// bit), the one after succeeds again, as st alternates. The capacity itself is
// the physical end: a record that would not fit entirely fails with ENOSPC and
// every later write with EIO. Filemarks are accepted past early warning and up
// to 64 bytes (16 marks) past the capacity, so a close after a full medium
// still writes its filemark; beyond that they fail with ENOSPC too. So a writer
// that stops at the first ENOSPC has stored between 7/8 of the capacity and
// that plus one record, and one that keeps going stops at the capacity: always
// between half the capacity and the capacity plus a record.
//
// Health: TapeAlert flags are raised where a drive raises
// them (see simh_health.cpp, which also builds the pages the drive answers).
//
// Opening an image and loading the drive's state are in simh_load.cpp,
// checking an image for `mt verify` in simh_verify.cpp, the health pages
// in simh_health.cpp.
#include "simh_tape.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/uio.h>
#include <vector>

#include "../error.hpp"
#include "../io.hpp"
#include "../scsi/page_builder.hpp"
#include "../scsi/pages.hpp"
#include "../scsi/sg_io.hpp"
#include "drive_state.hpp"
#include "image_appender.hpp"
#include "session_recovery.hpp"
#include "simh_format.hpp"
#include "simh_internal.hpp"

namespace tk {
namespace {

using simh::Kind;
using simh::Object;

// Where the drive is, as far as a rollback needs to know; offset (the image's
// size there) is all the appender reads of it.
struct Checkpoint {
  std::uint64_t offset = 0;
  std::int64_t lba = 0, file = 0, block = 0;
  std::uint64_t data = 0;     // record bytes written this session up to here
  std::uint64_t records = 0;  // records written this session up to here
};

class SimhTape final : public Tape {
 public:
  // home: where the drive's state is kept (state_home.hpp).
  SimhTape(const std::string& path, StateHome home, Fd fd, DriveState state, bool readable, bool writable,
           int write_errno, bool file_protected, bool saves_state, mode_t create_mode)
      : Tape(path),
        create_mode_(create_mode),
        home_(std::move(home)),
        fd_(std::move(fd)),
        image_(fd_.get(), file_size(fd_.get(), path), path),
        state_(state),
        readable_(readable),
        writable_(writable),
        fd_writable_(writable || write_errno == EACCES),
        write_errno_(write_errno),
        file_protected_(file_protected),
        saves_state_(saves_state),
        appender_(fd_.get(), path, image_, writable, state.capacity) {}

  ~SimhTape() override {
    try {
      close();
    } catch (const std::exception&) {
      // The destructor closes quietly; close() is where failures are reported.
    }
  }

  std::size_t read(std::span<std::byte> buf) override {
    check_usable("read");
    if (!readable_) throw Error(EBADF, "read " + name());
    request_start_ = here();
    flush_staged();
    last_write_ = false;
    if (buf.empty()) return 0;
    return state_.block_size == 0 ? read_variable(buf) : read_fixed(buf);
  }

  void write(std::span<const std::byte> data) override {
    check_usable("write");
    if (!writable_) {
      note_write_refused();
      throw Error(write_errno_, "write " + name());
    }
    if (data.empty()) return;
    drop_read_ahead();
    const std::uint32_t b = state_.block_size;
    if (b == 0 ? data.size() > simh::max_record : data.size() % b != 0)
      throw Error(EINVAL, "write " + name());
    if (state_.eof == EofState::early_warning) {
      state_.eof = EofState::eod_write;  // st: report ENOSPC once, allow the next
      throw Error(ENOSPC, "write " + name(), 0);
    }
    if (state_.eof == EofState::overflow) throw Error(EIO, "write " + name(), 0);
    request_start_ = here();
    if (!last_write_ && state_.offset == 0 && !state_.compression_set) apply_default_compression();
    if (!last_write_) {
      auto first = data.first(b == 0 ? data.size() : b);
      truncate_here({true, simh::record_word(static_cast<std::uint32_t>(first.size()), false), first});
    }
    last_write_ = true;
    if (b == 0) {
      write_record(data, 0);
    } else {
      for (std::size_t done = 0; done < data.size(); done += b)
        write_record(data.subspan(done, b), done);
    }
    state_.eof = past_early_warning() ? EofState::early_warning : EofState::none;
  }

  void op(MtOp op, int count) override {
    check_open();
    drop_read_ahead();
    request_start_ = here();
    if (!state_.online && !works_offline(op)) throw Error(ENOMEDIUM, op_context(op));
    if (last_write_) {
      switch (op) {
        // st writes the closing filemark before these ("Close"); BSF and BSFM
        // then also space back over it.
        case MtOp::rewind:
        case MtOp::offline:
        case MtOp::unload:
        case MtOp::seek:
        case MtOp::bsf:
        case MtOp::bsfm:
          write_filemarks(1);
          if (op == MtOp::bsf || op == MtOp::bsfm) ++count;
          break;
        case MtOp::nop:
        case MtOp::setblk:
        case MtOp::setdensity:
        case MtOp::wsm:
        case MtOp::setdrvbuffer:
        case MtOp::setpart: break;
        default: last_write_ = false;
      }
    }
    try {
      flush_staged();  // st: every ioctl flushes the driver's buffer first
      run_op(op, count);
      flush_staged();  // filemarks written by the request reach the image now
    } catch (const Error&) {
      try {
        flush_staged();
      } catch (const Error&) {
        // The request's own failure is the one to report; the flush rolled back.
      }
      save_quietly();
      throw;
    }
    save();
  }

  TapeStatus status() override {
    check_open();
    request_start_ = here();
    flush_staged();  // MTIOCGET flushes the driver's buffer too
    TapeStatus s;
    s.drive_type = MT_ISSCSI2;
    s.partition = 0;
    s.soft_errors = 0;
    s.write_protected = state_.write_protect || file_protected_;
    s.immediate_report = true;
    s.compression = state_.compression;
    s.compression_known = true;
    if (!state_.online) {
      s.door_open = true;
      s.file_number = s.block_number = -1;
      return s;
    }
    s.online = true;
    s.block_size = state_.block_size;
    s.density = state_.density;
    s.file_number = state_.file;
    // st does not count a block it has only partly handed out yet.
    s.block_number = state_.block - (ahead_pos_ < ahead_.size() && state_.block > 0 ? 1 : 0);
    s.bot = s.block_number == 0 && s.file_number == 0;
    s.eof = s.block_number == 0 && s.file_number != 0;
    s.eot = state_.eof == EofState::early_warning || state_.eof == EofState::overflow;
    s.eod = state_.eof == EofState::eod_write || state_.eof == EofState::eod;
    return s;
  }

  std::int64_t tell() override {
    check_usable("tell");
    drop_read_ahead();
    request_start_ = here();
    flush_staged();
    return state_.lba;
  }

  // st's llseek is noop_llseek: it moves nothing and reports offset 0.
  std::int64_t seek(std::int64_t, int) override {
    check_open();
    return 0;
  }

  void close() override {
    if (!fd_.valid()) return;
    try {
      request_start_ = here();
      if (last_write_ && state_.online) {
        write_filemarks(1);
        // st_flush leaves the drive just past the mark it wrote (ST_FM), so
        // a read after reopening gets 0 there, then EIO at the end of data.
        state_.eof = EofState::filemark;
      }
      flush_staged();
    } catch (const Error&) {
      // The session stays marked: whatever the image now ends in is checked
      // and completed by the next open.
      appender_.release();
      save_quietly();
      fd_.close("close " + name());
      throw;
    }
    appender_.release();
    // Only the session this open began is finished here; one left by a
    // killed writer stays for the next writer to complete.
    if (own_session_) state_.writing = false;
    save();
    fd_.close("close " + name());
  }

  bool keeps_records() const override { return true; }

  // INQUIRY, TapeAlert, Tape Capacity and the cartridge memory, as an LTO
  // drive encodes them; encryption is a drive feature this one lacks. Of
  // the VPD pages it lists TapeAlert Supported Flags, every flag, since
  // vt-alert raises any, and the Manufacturer-assigned Serial Number page
  // in the spaces SSC-4 asks of a drive that has none; it has no unit
  // serial number page (INVALID FIELD IN CDB, as a drive without one).
  std::vector<std::uint8_t> health_data(scsi::HealthQuery query) override {
    check_open();
    const scsi::Cdb cdb = scsi::health_cdb(query);
    std::vector<std::uint8_t> data;
    switch (query) {
      case scsi::HealthQuery::inquiry:
        data = scsi::build_inquiry("TAPEKIT", "VIRTUAL TAPE", "0001");
        break;
      case scsi::HealthQuery::tapealert:
        data = scsi::build_tapealert_page(state_.tapealert);
        state_.tapealert = 0;  // read clears them; close() saves that
        break;
      case scsi::HealthQuery::capacity:
        need_cartridge(cdb);
        if (state_.capacity != 0) flush_staged();  // the image's size is what is used
        data = simh_capacity_page(state_, state_.capacity == 0 ? 0 : file_size(fd_.get(), name()));
        break;
      case scsi::HealthQuery::attributes:
        need_cartridge(cdb);
        data = simh_attribute_list(state_);
        break;
      case scsi::HealthQuery::supported_vpd_pages:
        data = scsi::build_vpd_page(scsi::supported_vpd_pages_page,
                                    {scsi::supported_vpd_pages_page, scsi::manufacturer_serial_number_page,
                                     scsi::tapealert_supported_page});
        break;
      case scsi::HealthQuery::manufacturer_serial_number:
        data = scsi::build_vpd_page(scsi::manufacturer_serial_number_page,
                                    std::vector<std::uint8_t>(64, ' '));
        break;
      case scsi::HealthQuery::tapealert_supported:
        data = scsi::build_tapealert_supported_page(~std::uint64_t{0});
        break;
      case scsi::HealthQuery::unit_serial_number:
        throw scsi::ScsiError(EOPNOTSUPP, scsi::Refusal::illegal_request, cdb.what,
                              "the drive does not support it (ILLEGAL REQUEST, asc 0x24 ascq 0x00)");
      case scsi::HealthQuery::encryption:
      default:
        throw scsi::ScsiError(EOPNOTSUPP, scsi::Refusal::illegal_request, cdb.what,
                              "the drive does not support it (ILLEGAL REQUEST, asc 0x20 ascq 0x00)");
    }
    if (data.size() > cdb.allocation_length) data.resize(cdb.allocation_length);
    return data;
  }

 private:
  // A write this open may not make: raises Write protect when the reason is
  // the cartridge's protection (an open for writing), not a read-only open.
  void note_write_refused() noexcept {
    if (write_errno_ == EACCES) state_.raise_alert(alert::write_protect);
  }

  void need_cartridge(const scsi::Cdb& cdb) const {
    if (!state_.online)
      throw scsi::ScsiError(ENOMEDIUM, scsi::Refusal::no_medium, cdb.what,
                            "there is no cartridge in the drive (NOT READY, asc 0x3a ascq 0x00)");
  }

  void check_open() const {
    if (!fd_.valid()) throw Error(EBADF, "use of closed tape " + name());
  }

  void check_usable(std::string_view what) const {
    check_open();
    if (!state_.online) throw Error(ENOMEDIUM, std::string(what) + " " + name());
  }

  std::string op_context(MtOp op) const {
    return "tape operation " + std::to_string(static_cast<int>(op)) + " on " + name();
  }

  static bool works_offline(MtOp op) {
    switch (op) {
      case MtOp::load:
      case MtOp::nop:
      case MtOp::setblk:
      case MtOp::setdensity:
      case MtOp::setdrvbuffer:
      case MtOp::lock:
      case MtOp::unlock:
      case MtOp::compression: return true;
      default: return false;
    }
  }

  void apply_default_compression() noexcept {
    if (state_.default_compression >= 0) state_.compression = state_.default_compression == 1;
  }

  bool past_early_warning() const {
    return state_.capacity != 0 && state_.offset >= state_.capacity - state_.capacity / 8;
  }

  // The image's owner and mode, for a state file made anew.
  struct stat image_stat() const {
    struct stat st {};
    if (::fstat(fd_.get(), &st) == -1) throw_errno("stat " + name());
    return st;
  }

  void save() {
    if (!saves_state_) return;
    state_.image_mtime_ns = image_mtime_ns(fd_.get());
    try {
      const struct stat st = image_stat();
      save_drive_state(home_.dir.get(), home_.name, state_, create_mode_, &st);
    } catch (const Error&) {
      // The drive would stay where it was before, and the next read would
      // read the same file again: reported. (A reader in a place where no
      // state can be kept never gets here: saves_state_ is false.)
      throw;
    }
  }

  void save_quietly() noexcept {
    if (!saves_state_) return;
    state_.image_mtime_ns = image_mtime_ns(fd_.get());
    try {
      const struct stat st = image_stat();
      save_drive_state(home_.dir.get(), home_.name, state_, create_mode_, &st);
    } catch (const std::exception&) {
      // Already reporting the failure that got us here.
    }
  }

  void drop_read_ahead() noexcept {
    ahead_.clear();
    ahead_pos_ = 0;
  }

  // --- moving over objects ---

  void pass_record(const Object& o) noexcept {
    state_.offset = o.end;
    ++state_.lba;
    if (state_.block >= 0) ++state_.block;
  }

  void pass_mark_forward(const Object& o) noexcept {
    state_.offset = o.end;
    ++state_.lba;
    if (state_.file >= 0) ++state_.file;
    state_.block = 0;
  }

  void back_over(const Object& o) noexcept {
    state_.offset = o.start;
    --state_.lba;
    if (o.kind == Kind::tape_mark) {
      if (state_.file > 0) --state_.file;
      state_.block = -1;
    } else if (state_.block > 0) {
      --state_.block;
    } else {
      state_.block = -1;
    }
  }

  [[noreturn]] void fail_at_invalid(const Object& o, const std::string& what) {
    if (what == "read") raise_read_failure();
    state_.offset = o.start;
    state_.block = -1;
    state_.eof = EofState::none;
    throw DamagedImage(what + " " + name(), o.problem + " at offset " + std::to_string(o.start));
  }

  void hit_bot(const std::string& what) {
    state_.rewind();
    throw Error(EIO, what + " " + name());
  }

  void hit_eod(const Object& o, const std::string& what) {
    state_.offset = o.start;
    state_.block = -1;
    state_.eof = EofState::eod;
    throw Error(EIO, what + " " + name());
  }

  // --- reading ---

  std::size_t end_of_data_read() {
    // Right after a filemark st returns 0 once more, then EIO ("Reading").
    bool after_mark = state_.eof == EofState::filemark;
    state_.eof = EofState::eod;
    if (after_mark) {
      state_.block = -1;
      return 0;
    }
    throw Error(EIO, "read " + name());
  }

  std::size_t read_mark(const Object& o) {
    pass_mark_forward(o);
    state_.eof = EofState::filemark;
    return 0;
  }

  void raise_read_failure() noexcept {
    state_.raise_alert(alert::hard_error);
    state_.raise_alert(alert::read_failure);
  }

  [[noreturn]] void read_bad_record(const Object& o) {
    raise_read_failure();
    Object framed = image_.next(o.start, true);
    if (framed.kind == Kind::invalid) fail_at_invalid(framed, "read");
    pass_record(framed);
    state_.block = -1;  // st: a medium error leaves the block number unknown
    state_.eof = EofState::none;
    throw Error(EIO, "read " + name() + " (record flagged bad)");
  }

  std::size_t read_variable(std::span<std::byte> buf) {
    Object o = image_.next(state_.offset, false);
    switch (o.kind) {
      case Kind::tape_mark: return read_mark(o);
      case Kind::end_of_data: return end_of_data_read();
      case Kind::bad_record: read_bad_record(o);
      case Kind::record: break;
      default: fail_at_invalid(o, "read");
    }
    if (o.length > buf.size()) {
      // st: the block is consumed and its data lost ("Reading").
      Object framed = image_.next(o.start, true);
      if (framed.kind == Kind::invalid) fail_at_invalid(framed, "read");
      pass_record(framed);
      state_.eof = EofState::none;
      throw RecordTooLarge("read " + name() + " (" + std::to_string(o.length) + "-byte record, " +
                               std::to_string(buf.size()) + "-byte buffer)",
                           o.length);
    }
    if (!image_.read_data(o, buf.first(o.length))) fail_at_invalid(o, "read");
    pass_record(o);
    state_.bytes_read += o.length;
    state_.eof = EofState::none;
    return o.length;
  }

  // Fixed blocks: consecutive blocks fill the buffer; a filemark ends the
  // read after the data before it. A partly used block waits in ahead_, as in
  // st's read-ahead buffer.
  std::size_t read_fixed(std::span<std::byte> buf) {
    const std::uint32_t b = state_.block_size;
    std::size_t done = 0;
    if (ahead_pos_ < ahead_.size()) {
      done = std::min(buf.size(), ahead_.size() - ahead_pos_);
      std::copy_n(ahead_.begin() + static_cast<std::ptrdiff_t>(ahead_pos_), done, buf.begin());
      ahead_pos_ += done;
      if (ahead_pos_ == ahead_.size()) drop_read_ahead();
    }
    while (done < buf.size()) {
      Object o = image_.next(state_.offset, false);
      if (o.kind != Kind::record || o.length != b) {
        if (done > 0) return done;
        switch (o.kind) {
          case Kind::tape_mark: return read_mark(o);
          case Kind::end_of_data: return end_of_data_read();
          case Kind::bad_record: read_bad_record(o);
          case Kind::record:
            throw Error(EIO, "read " + name() + " (incorrect block size " +
                                 std::to_string(o.length) + ")");
          default: fail_at_invalid(o, "read");
        }
      }
      std::size_t want = buf.size() - done;
      if (want >= b) {
        if (!image_.read_data(o, buf.subspan(done, b))) fail_at_invalid(o, "read");
        done += b;
      } else {
        ahead_.resize(b);
        if (!image_.read_data(o, ahead_)) fail_at_invalid(o, "read");
        std::copy_n(ahead_.begin(), want, buf.begin() + static_cast<std::ptrdiff_t>(done));
        ahead_pos_ = want;
        done += want;
      }
      pass_record(o);
      state_.bytes_read += b;
      state_.eof = EofState::none;
    }
    return done;
  }

  // --- writing ---

  // Before the image changes, the state says a write session is under way
  // from this boundary on and what it will find there, so that a writer
  // killed before its close is told apart from an image changed elsewhere,
  // and its close completed by the next writer (session_recovery.hpp). A
  // session marked here or further on is marked again from here: everything
  // from its start must chain from what it wrote, and a burst that begins at the
  // start again replaces the first object recorded.
  void mark_write_session(const FirstObject& first) {
    if (own_session_ && state_.offset > state_.session.start) return;
    const DriveState before = state_;
    try {
      const struct stat st = image_stat();
      begin_write_session(fd_.get(), static_cast<std::uint64_t>(st.st_ino), first, state_, name());
      save_drive_state(home_.dir.get(), home_.name, state_, create_mode_, &st);
    } catch (const Error& e) {
      // Nothing may be written that a crash could not account for; and the
      // bytes the state file took are none of the caller's record.
      state_ = before;
      throw Error(e.errnum(), "write " + name() + " (saving its drive state: " + e.context() + ")");
    }
    own_session_ = true;
  }

  // A write ends the tape where it happens ("Writing and the end of the tape").
  void truncate_here(const FirstObject& first) {
    mark_write_session(first);
    appender_.truncate(state_.offset);
  }

  // Filemarks may pass the capacity by this much, so a close still fits one.
  static constexpr std::uint64_t filemark_overshoot = 64;
  static constexpr int max_filemarks_per_request = 1 << 20;

  // --- the drive's write buffer ---
  //
  // Appends reach the image through appender_ (image_appender.hpp), staged as
  // st's buffered writes are, and reach it before any other request (every
  // ioctl, read, status, tell) and at close. Should staged records fail to
  // reach it, the drive's position goes back with the image to the last
  // whole object that did, and the failure is reported by the request in
  // progress: with its own errno when only that request's records were
  // lost, as EIO naming the loss when records already acknowledged were. A
  // record cut short by a writer killed outright is reported by reading and
  // `mt verify` with its offset.

  Checkpoint here() const noexcept {
    return {state_.offset, state_.lba, state_.file, state_.block, data_written_, records_written_};
  }

  void append(std::span<const iovec> iov, std::size_t total, std::size_t done_before) {
    try {
      appender_.append(iov, total, done_before, here());
    } catch (const StagedLoss<Checkpoint>& loss) {
      roll_back(loss);
    }
    state_.offset += total;
  }

  // Called after the counters moved past whole objects.
  void mark_boundary() {
    try {
      appender_.mark_boundary(here());
    } catch (const StagedLoss<Checkpoint>& loss) {
      roll_back(loss);
    }
  }

  void flush_staged() {
    try {
      appender_.flush();
    } catch (const StagedLoss<Checkpoint>& loss) {
      roll_back(loss);
    }
  }

  [[noreturn]] void roll_back(const StagedLoss<Checkpoint>& loss) {
    const Checkpoint& keep = loss.kept;
    state_.offset = keep.offset;
    state_.lba = keep.lba;
    state_.file = keep.file;
    state_.block = keep.block;
    state_.eof = past_early_warning() ? EofState::early_warning : EofState::none;
    state_.bytes_written -= data_written_ - keep.data;  // what the medium never got
    data_written_ = keep.data;
    records_written_ = keep.records;
    // If even the cut failed, the next write truncates first (last_write_ off).
    if (!loss.cut) last_write_ = false;
    if (keep.offset >= request_start_.offset) {
      // Only this request's records are gone: it fails as a write that met
      // the trouble itself would have.
      throw Error(loss.errnum, "write " + name(),
                  static_cast<std::size_t>(keep.data - request_start_.data));
    }
    last_write_ = false;
    std::uint64_t lost = request_start_.data - keep.data;
    throw LostWrites("write " + name() + " (" + std::to_string(lost) +
                         " bytes of records already accepted were lost: " +
                         std::strerror(loss.errnum) + ")",
                     lost, request_start_.records - keep.records, loss.errnum);
  }

  void write_record(std::span<const std::byte> data, std::size_t done_before) {
    auto length = static_cast<std::uint32_t>(data.size());
    std::uint64_t span = simh::record_span(length);
    if (state_.capacity != 0 && state_.offset + span > state_.capacity) {
      state_.eof = EofState::overflow;
      throw Error(ENOSPC, "write " + name(), done_before);
    }
    std::uint32_t word = simh::record_word(length, false);
    std::byte head[4];
    std::byte tail[5] = {};
    std::size_t pad = length & 1u;
    simh::store_le32(head, word);
    simh::store_le32(tail + pad, word);
    // One system call per record: header, data, pad and trailer together.
    iovec iov[3] = {{head, 4},
                    {const_cast<std::byte*>(data.data()), data.size()},
                    {tail, pad + 4}};
    append(iov, span, done_before);
    data_written_ += length;
    state_.bytes_written += length;
    ++records_written_;
    ++state_.lba;
    if (state_.block >= 0) ++state_.block;
    mark_boundary();
  }

  void write_filemarks(int count) {
    if (!writable_) note_write_refused();
    if (!writable_) throw Error(write_errno_ == EBADF ? EACCES : write_errno_, "weof " + name());
    truncate_here(count > 0 ? FirstObject{true, simh::mark_word, {}} : FirstObject{});
    last_write_ = false;
    if (count <= 0) return;
    // One request cannot fill the disk: a drive would need hours for this
    // many marks, and over rmt it would be a way to exhaust the server.
    if (count > max_filemarks_per_request) throw Error(EINVAL, "weof " + name());
    // In slices, so that a large count costs time (as on a drive), not memory.
    constexpr int slice = 16384;
    std::vector<std::byte> marks(4 * static_cast<std::size_t>(std::min(count, slice)));
    for (int left = count; left > 0;) {
      int now = std::min(left, slice);
      if (state_.capacity != 0) {
        std::uint64_t limit = state_.capacity + filemark_overshoot;
        std::uint64_t room = limit > state_.offset ? (limit - state_.offset) / 4 : 0;
        if (room == 0) {
          state_.eof = EofState::overflow;
          throw Error(ENOSPC, "weof " + name());
        }
        now = static_cast<int>(std::min<std::uint64_t>(room, static_cast<std::uint64_t>(now)));
      }
      iovec iov{marks.data(), 4 * static_cast<std::size_t>(now)};
      append({&iov, 1}, iov.iov_len, 0);
      state_.lba += now;
      if (state_.file >= 0) state_.file += now;
      state_.block = 0;
      mark_boundary();
      left -= now;
    }
    state_.eof = past_early_warning() ? EofState::early_warning : EofState::none;
  }

  // --- spacing ---

  void forward_files(std::int64_t n, const std::string& what) {
    for (std::int64_t crossed = 0; crossed < n;) {
      Object o = image_.next(state_.offset);
      switch (o.kind) {
        case Kind::record:
        case Kind::bad_record:
          state_.offset = o.end;
          ++state_.lba;
          break;
        case Kind::tape_mark:
          pass_mark_forward(o);
          ++crossed;
          break;
        case Kind::end_of_data: hit_eod(o, what); return;
        default: fail_at_invalid(o, what);
      }
    }
    state_.block = 0;
    state_.eof = EofState::filemark;
  }

  void back_files(std::int64_t n, const std::string& what) {
    for (std::int64_t crossed = 0; crossed < n;) {
      Object o = image_.previous(state_.offset);
      switch (o.kind) {
        case Kind::record:
        case Kind::bad_record: back_over(o); break;
        case Kind::tape_mark:
          back_over(o);
          ++crossed;
          break;
        case Kind::bot: hit_bot(what); return;
        default: fail_at_invalid(o, what);
      }
    }
    state_.block = -1;  // st cannot know where in the file it landed
    state_.eof = EofState::none;
  }

  void forward_records(std::int64_t n, const std::string& what) {
    for (std::int64_t i = 0; i < n; ++i) {
      Object o = image_.next(state_.offset);
      switch (o.kind) {
        case Kind::record:
        case Kind::bad_record: pass_record(o); break;
        case Kind::tape_mark:
          pass_mark_forward(o);
          state_.eof = EofState::none;
          throw Error(EIO, what + " " + name());
        case Kind::end_of_data: hit_eod(o, what); return;
        default: fail_at_invalid(o, what);
      }
    }
    state_.eof = EofState::none;
  }

  void back_records(std::int64_t n, const std::string& what) {
    for (std::int64_t i = 0; i < n; ++i) {
      Object o = image_.previous(state_.offset);
      switch (o.kind) {
        case Kind::record:
        case Kind::bad_record: back_over(o); break;
        case Kind::tape_mark:
          // Spacing stops on the BOT side of the filemark it met.
          back_over(o);
          state_.eof = EofState::none;
          throw Error(EIO, what + " " + name());
        case Kind::bot: hit_bot(what); return;
        default: fail_at_invalid(o, what);
      }
    }
    state_.eof = EofState::none;
  }

  // st's MTEOM. Damage on the way (a record cut short by a writer that died
  // before this drive could complete its session, an image from elsewhere)
  // is where the data ends: the drive stops there, and a write from there on
  // replaces it, so an operator can always append after what is sound.
  void end_of_data() {
    for (;;) {
      Object o = image_.next(state_.offset);
      if (o.is_record()) {
        state_.offset = o.end;
        ++state_.lba;
      } else if (o.kind == Kind::tape_mark) {
        pass_mark_forward(o);
      } else {
        state_.offset = o.start;
        break;
      }
    }
    state_.block = -1;
    state_.eof = EofState::eod;
  }

  // MTSEEK: to the logical block address counting records and filemarks.
  void locate(std::int64_t target, const std::string& what) {
    if (target < 0) throw Error(EINVAL, what + " " + name());
    if (target == 0) {
      state_.rewind();
      return;
    }
    while (state_.lba > target) {
      Object o = image_.previous(state_.offset);
      if (o.kind == Kind::bot) {
        state_.rewind();
        break;
      }
      if (o.kind == Kind::invalid) fail_at_invalid(o, what);
      state_.offset = o.start;
      --state_.lba;
    }
    while (state_.lba < target) {
      Object o = image_.next(state_.offset);
      if (o.kind == Kind::end_of_data) {
        state_.offset = o.start;
        state_.file = state_.block = -1;
        state_.eof = EofState::eod;
        throw Error(EIO, what + " " + name());
      }
      if (o.kind == Kind::invalid) fail_at_invalid(o, what);
      state_.offset = o.end;
      ++state_.lba;
    }
    state_.file = state_.block = -1;
    state_.eof = EofState::none;
  }

  // --- the operations, one each ---

  void run_op(MtOp op, int count) {
    const std::string what = op_context(op);
    switch (op) {
      case MtOp::fsf: return op_fsf(count, what);
      case MtOp::bsf: return op_bsf(count, what);
      case MtOp::fsr: return op_fsr(count, what);
      case MtOp::bsr: return op_bsr(count, what);
      case MtOp::fsfm: return op_fsfm(count, what);
      case MtOp::bsfm: return op_bsfm(count, what);
      case MtOp::weof:
      case MtOp::weofi: return op_weof(count, what);
      case MtOp::rewind:
      case MtOp::retension: return state_.rewind();
      case MtOp::offline:
      case MtOp::unload: return op_offline();
      case MtOp::load: return op_load();
      case MtOp::nop: return;
      case MtOp::eom: return end_of_data();
      case MtOp::erase: return op_erase(what);
      case MtOp::seek: return locate(count, what);
      case MtOp::setblk: return op_setblk(count, what);
      case MtOp::setdensity: return op_setdensity(count);
      case MtOp::compression: return op_compression(count);
      case MtOp::setdrvbuffer: return op_setdrvbuffer(count, what);
      case MtOp::lock: return lock_door(true);
      case MtOp::unlock: return lock_door(false);
      case MtOp::fss:
      case MtOp::bss: throw Error(EIO, what);  // images hold no setmarks
      case MtOp::wsm: return op_wsm(count, what);
      case MtOp::setpart:
      case MtOp::mkpart: throw Error(EINVAL, what);  // st without can-partitions
      default: throw Error(ENOSYS, what);
    }
  }

  // Counts widen to 64 bits before they are negated, so INT_MIN spaces too.
  void op_fsf(int count, const std::string& what) {
    const std::int64_t n = count;
    if (n < 0) {  // a negative SPACE goes the other way; st's counts follow
      back_files(-n, what);
      state_.block = 0;
    } else {
      forward_files(n, what);
    }
  }

  void op_bsf(int count, const std::string& what) {
    const std::int64_t n = count;
    if (n < 0) {
      forward_files(-n, what);
      state_.block = -1;
    } else {
      back_files(n, what);
    }
  }

  void op_fsr(int count, const std::string& what) {
    const std::int64_t n = count;
    if (n < 0) back_records(-n, what);
    else forward_records(n, what);
  }

  void op_bsr(int count, const std::string& what) {
    const std::int64_t n = count;
    if (n < 0) forward_records(-n, what);
    else back_records(n, what);
  }

  void op_fsfm(int count, const std::string& what) {
    forward_files(count, what);
    back_files(1, what);
  }

  void op_bsfm(int count, const std::string& what) {
    back_files(count, what);
    forward_files(1, what);
  }

  void op_weof(int count, const std::string& what) {
    if (count < 0) throw Error(EINVAL, what);
    write_filemarks(count);
  }

  void op_offline() {
    state_.rewind();
    state_.online = false;
    state_.locked = false;
  }

  void op_load() {
    if (!state_.online) ++state_.load_count;  // a load of a loaded cartridge loads nothing
    state_.rewind();  // a newly loaded cartridge is at BOT
    state_.online = true;
    state_.compression_set = false;
    apply_default_compression();
  }

  void op_erase(const std::string& what) {
    if (!writable_) note_write_refused();
    if (!writable_) throw Error(write_errno_ == EBADF ? EACCES : write_errno_, what);
    truncate_here({});
    state_.eof = EofState::none;
  }

  void op_setblk(int count, const std::string& what) {
    const std::int64_t n = count;
    if (n < 0 || n > simh::max_record) throw Error(EINVAL, what);
    state_.block_size = static_cast<std::uint32_t>(n);
  }

  void op_setdensity(int count) {
    state_.density = static_cast<std::uint32_t>(count) & 0xFFu;
  }

  void op_compression(int count) {
    state_.compression = (count & 1) != 0;
    state_.compression_set = true;
  }

  void op_setdrvbuffer(int count, const std::string& what) {
    // Driver options mean nothing to an image; st only rejects an unknown
    // sub-command ("MTSETDRVBUFFER"). The default compression and density are
    // applied at once, as st does when a tape is loaded (mt defcompression).
    auto word = static_cast<unsigned>(count);
    if ((word >> 28) > 8) throw Error(EIO, what);
    unsigned value = word & 0xFFFFFu;
    if ((word & 0xFFF00000u) == 0x60200000u && value == 0xFFFFFu)
      state_.default_compression = -1;  // defcompression -1: no default any more
    if ((word & 0xFFF00000u) == 0x60200000u && value != 0xFFFFFu && (value & 0xFFu) != 0xFFu) {
      state_.default_compression = static_cast<int>(value & 1u);
      state_.compression = (value & 1u) != 0;
    }
    if ((word & 0xFFF00000u) == 0x60100000u && value != 0xFFFFFu) state_.density = value & 0xFFu;
  }

  void lock_door(bool on) { state_.locked = on; }

  void op_wsm(int count, const std::string& what) {
    if (count != 0) throw Error(EIO, what);
  }

  mode_t create_mode_;  // for a new state file, as for the image
  StateHome home_;
  Fd fd_;
  simh::ImageReader image_;
  DriveState state_;
  bool readable_;
  bool writable_;
  bool fd_writable_;
  int write_errno_;
  bool file_protected_;
  // Whether this open may replace the state file: one that may not write
  // the image (another user's, a read-only place) never takes the drive's
  // memory from its owner.
  bool saves_state_;
  bool own_session_ = false;  // this open marked the write session in state_
  bool last_write_ = false;  // st's "rw == ST_WRITING": close adds a filemark
  std::vector<std::byte> ahead_;
  std::size_t ahead_pos_ = 0;
  ImageAppender<Checkpoint> appender_;  // the image's size and the writes that move it
  Checkpoint request_start_;            // where the current request began
  std::uint64_t data_written_ = 0;      // record bytes written this session
  std::uint64_t records_written_ = 0;   // records written this session
};

}  // namespace

std::unique_ptr<Tape> make_simh_tape(const std::string& path, StateHome home, Fd fd, DriveState state,
                                     bool readable, bool writable, int write_errno,
                                     bool file_protected, bool saves_state, mode_t create_mode) {
  return std::make_unique<SimhTape>(path, std::move(home), std::move(fd), state, readable, writable,
                                    write_errno, file_protected, saves_state, create_mode);
}

}  // namespace tk
