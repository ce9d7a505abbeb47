// rmt's request loop: each decoded request mapped onto a tk::Tape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "../../lib/rmt/fd_source.hpp"
#include "../../lib/rmt/protocol.hpp"

namespace tk::rmt_server {

// Exit statuses of rmt (documented in rmt.8).
enum class Exit : int {
  ok = 0,          // end of input between requests
  usage = 1,       // bad command line
  protocol = 2,    // unknown command, end of input inside a request, endless line
  connection = 3,  // timeout or failure of the control connection
  close = 4,       // the tape left open at the end could not be closed
};

struct ServerOptions {
  std::vector<std::string> allow;  // empty: bare drop-in mode
  bool read_only = false;
  bool write_once = false;
  // Under --allow a regular file with more than one hard link is not
  // opened for writing unless this is set (--allow-hard-links).
  bool allow_hard_links = false;
  mode_t create_mode = 0600;
  // --virtual-tapes: the names served as virtual tapes besides those made
  // one (lib/tape/virtual_tapes.hpp); unset: $TAPEKIT_VIRTUAL_TAPES's, else
  // none, so that as the system's rmt every other name is the plain file
  // rmt-tar serves.
  std::optional<std::vector<std::string>> virtual_tapes;
  std::size_t max_record = std::size_t{16} << 20;  // the largest SIMH or LTO record
  int idle_timeout = 0;        // seconds; 0 = none
  int payload_timeout = 120;   // seconds without progress inside W; 0 = none
  std::vector<int> extra_ioctls;  // Linux op codes added to the allow-list
  bool all_ioctls = false;
  rmt::SeekOrder seek_order = rmt::SeekOrder::automatic;
  std::string log = "syslog";  // "syslog", "none", or a file
  bool log_given = false;       // --log was on the command line
  std::string debug_log;       // empty: none
  std::string login_command;   // -c COMMAND (when rmt is a login shell), logged only
  bool sandbox = true;         // Landlock under --allow
  bool show_version = false;   // --version: print it and serve nothing
  bool show_help = false;      // --help: the usage and options on stdout
  // Watch for the next request this long before sleeping (fd_source.hpp).
  std::chrono::microseconds busy_poll = rmt::default_busy_poll();
};

// Serves requests from in_fd, replying on out_fd, until end of input or a
// fatal frame; returns the exit status.
int serve(const ServerOptions& options, int in_fd, int out_fd);

// The Linux op code for an mt command word ("erase", "setblk"), or -1.
int op_from_name(const std::string& name);

}  // namespace tk::rmt_server
