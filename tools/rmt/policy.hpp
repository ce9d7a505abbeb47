// rmt's access policy: which paths a connection may open and how
// (docs/rmt-protocol.md, "Security").
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "sandbox.hpp"

namespace tk::rmt_server {

// The open-time decision for one O request. Under --allow the name is
// resolved and checked here, but what makes the open safe is how it is
// made (opener.hpp): beneath root, which the check cannot be raced out of.
struct OpenDecision {
  std::string path;     // what to open: the name resolved under --allow
  int flags = 0;        // filtered open(2) flags
  std::string root;     // under --allow: the entry's directory, resolved
  std::string beneath;  // path relative to root ("." for root itself)
};

class PathPolicy {
 public:
  // allow: --allow entries (directories, files, or globs). Empty means the
  // bare drop-in mode: anything the calling user can open.
  PathPolicy(const std::vector<std::string>& allow, bool read_only, bool write_once);

  // Checks a requested device and flags; throws Error(EACCES, EROFS,
  // EEXIST, ENAMETOOLONG) when the request is refused.
  OpenDecision decide(const std::string& requested, int flags) const;
  bool restricted() const noexcept { return !entries_.empty(); }
  // What a Landlock sandbox must leave reachable for the allowed entries.
  SandboxRules sandbox_rules() const;

 private:
  struct Entry {
    std::string pattern;  // resolved directory, file, or glob
    std::string literal;  // the same as given (absolute, without // or /./)
    bool glob = false;
    bool directory = false;
  };
  static bool matches(const Entry& e, const std::string& pattern, const std::string& path);
  // A name as the client wrote it may match an entry as given or resolved
  // (an allowed directory reached through a symlink); what it resolves to
  // must match an entry resolved.
  bool allowed_as_written(const std::string& path) const;
  // The entry a resolved name falls under, or nullptr.
  const Entry* allowing(const std::string& resolved) const;
  // The directory an entry confines opens to: the directory itself, a
  // file's directory, or a pattern's fixed directory.
  static std::string root_of(const Entry& e);
  std::vector<Entry> entries_;
  bool read_only_;
  bool write_once_;
};

}  // namespace tk::rmt_server
