// SG_IO (the sg version 3 interface, scsi/sg.h), which the st driver passes
// to the SCSI midlayer like sg does.
#include "sg_io.hpp"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <scsi/sg.h>
#include <sys/ioctl.h>

#include "../io.hpp"
#include "pages.hpp"

namespace tk::scsi {
namespace {

std::string hex2(unsigned value) {
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "0x%02x", value & 0xffU);
  return buf.data();
}

constexpr unsigned status_check_condition = 0x02;

}  // namespace

ScsiError::ScsiError(int errnum, Refusal refusal, const std::string& command,
                     const std::string& reason)
    : Error(errnum, command), refusal_(refusal), reason_(reason), text_(command + ": " + reason) {}

Refusal refusal_for_errno(int errnum) noexcept {
  switch (errnum) {
    case ENOTTY:
    case EINVAL: return Refusal::not_scsi;
    case EPERM:
    case EACCES: return Refusal::not_permitted;
    case EOPNOTSUPP: return Refusal::illegal_request;
    case ENOMEDIUM: return Refusal::no_medium;
    case EIO: return Refusal::check_condition;
    default: return Refusal::system;
  }
}

std::vector<std::uint8_t> ScsiDevice::run(const Cdb& cdb, unsigned timeout_ms) const {
  std::vector<std::uint8_t> data(cdb.allocation_length);
  std::array<std::uint8_t, 64> sense{};
  std::array<std::uint8_t, 16> command = cdb.bytes;
  sg_io_hdr_t hdr{};
  hdr.interface_id = 'S';
  hdr.dxfer_direction = data.empty() ? SG_DXFER_NONE : SG_DXFER_FROM_DEV;
  hdr.cmd_len = static_cast<unsigned char>(cdb.size);
  hdr.cmdp = command.data();
  hdr.dxfer_len = static_cast<unsigned>(data.size());
  hdr.dxferp = data.data();
  hdr.mx_sb_len = static_cast<unsigned char>(sense.size());
  hdr.sbp = sense.data();
  hdr.timeout = timeout_ms;
  if (retry_eintr(::ioctl, fd_, SG_IO, &hdr) == -1) {
    int e = errno;
    if (e == ENOTTY || e == EINVAL)
      throw ScsiError(e, Refusal::not_scsi, cdb.what,
                      name_ + " is not a SCSI device (SG_IO: " + std::strerror(e) + ")");
    if (e == EPERM || e == EACCES)
      throw ScsiError(e, Refusal::not_permitted, cdb.what,
                      "SG_IO on " + name_ + " is not permitted (" + std::strerror(e) +
                          "; it needs CAP_SYS_RAWIO or a device opened for writing)");
    throw ScsiError(e, Refusal::system, cdb.what, "SG_IO on " + name_ + ": " + std::strerror(e));
  }
  if (hdr.status == status_check_condition || hdr.sb_len_wr > 0) {
    auto s = parse_sense(std::span(sense.data(), std::min<std::size_t>(hdr.sb_len_wr, sense.size())));
    // RECOVERED ERROR and NO SENSE carry data that is good.
    if (s && s->key != 0x0 && s->key != 0x1) {
      std::string detail = std::string(sense_key_name(s->key)) + ", asc " + hex2(s->asc) +
                           " ascq " + hex2(s->ascq);
      if (s->key == 0x5)
        throw ScsiError(EOPNOTSUPP, Refusal::illegal_request, cdb.what,
                        "the drive does not support it (" + detail + ")");
      // MEDIUM NOT PRESENT: what the cartridge would answer needs one.
      if (s->key == 0x2 && s->asc == 0x3a)
        throw ScsiError(ENOMEDIUM, Refusal::no_medium, cdb.what,
                        "there is no cartridge in the drive (" + detail + ")");
      throw ScsiError(EIO, Refusal::check_condition, cdb.what,
                      "the drive refused it (" + detail + ")");
    }
    if (!s && hdr.status == status_check_condition)
      throw ScsiError(EIO, Refusal::check_condition, cdb.what,
                      "the drive answered CHECK CONDITION without sense data");
  } else if (hdr.status != 0 || hdr.host_status != 0 || (hdr.driver_status & 0x0fU) != 0) {
    throw ScsiError(EIO, Refusal::transport, cdb.what,
                    "the command failed (status " + hex2(hdr.status) + ", host " +
                        hex2(hdr.host_status) + ", driver " + hex2(hdr.driver_status) + ")");
  }
  auto resid = hdr.resid > 0 ? static_cast<std::size_t>(hdr.resid) : 0;
  data.resize(data.size() - std::min(resid, data.size()));
  return data;
}

std::vector<std::uint8_t> ScsiDevice::run_whole(HealthQuery query) const {
  const std::size_t header = reply_header_size(query);
  if (header == 0) return run(health_cdb(query));
  auto length = [](std::size_t n) {
    return static_cast<std::uint32_t>(std::min<std::size_t>(n, max_allocation_length));
  };
  // LOG SENSE goes as sg_logs sends it: the header, then the page at the
  // length the header gives. The others go at their usual allocation
  // length first, as sg_read_attr, sg_inq and stenc send them (some drives
  // refuse a short one), and again only when the header says there is more.
  const bool log_page = query == HealthQuery::tapealert || query == HealthQuery::capacity;
  const Cdb first = log_page ? health_cdb(query, static_cast<std::uint32_t>(header)) : health_cdb(query);
  std::vector<std::uint8_t> data = run(first);
  const std::size_t whole = whole_reply_length(query, data);
  if (data.size() < header || whole <= data.size() || first.allocation_length >= length(whole))
    return data;
  return run(health_cdb(query, length(whole)));
}

}  // namespace tk::scsi
