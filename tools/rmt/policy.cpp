// Path and flag checks for O requests: allow-list, read-only, write-once.
#include "policy.hpp"

#include <cerrno>
#include <climits>
#include <string_view>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/error.hpp"
#include "../../lib/tape/tape.hpp"

namespace tk::rmt_server {
namespace {

// Flags a client may ask for; everything else (O_DIRECTORY, O_PATH,
// O_TMPFILE, ...) is dropped (docs/rmt-protocol.md, "The server's rules").
constexpr int client_flags =
    O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DSYNC | O_SYNC | O_NONBLOCK;

bool has_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

bool has_dotdot(const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (path.compare(start, slash - start, "..") == 0 && slash - start == 2) return true;
    start = slash + 1;
  }
  return false;
}

// The absolute path with empty and "." components dropped (lexically: a
// script's "dir//file" or "dir/./file" names the same file).
std::string tidy(const std::string& absolute_path) {
  std::string out;
  std::size_t start = 0;
  while (start < absolute_path.size()) {
    std::size_t slash = absolute_path.find('/', start);
    if (slash == std::string::npos) slash = absolute_path.size();
    std::string_view part(absolute_path.data() + start, slash - start);
    if (!part.empty() && part != ".") out.append("/").append(part);
    start = slash + 1;
  }
  return out.empty() ? "/" : out;
}

// The path resolved, or empty with errno set (ENAMETOOLONG for a link to a
// directory whose real path is longer than PATH_MAX).
std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) throw_errno("getcwd");
  return std::string(cwd) + "/" + path;
}

// The path with every symlink resolved; for a file about to be created, its
// directory resolved and the last component kept. Empty with errno set when
// neither resolves.
std::string resolve(const std::string& path) {
  std::string r = real_path(path);
  if (!r.empty()) return r;
  if (errno != ENOENT) return {};
  auto slash = path.rfind('/');
  std::string dir = path.substr(0, slash == 0 ? 1 : slash);
  std::string base = path.substr(slash + 1);
  if (base.empty() || base == ".") return {};
  std::string d = real_path(dir);
  if (d.empty()) return {};
  return d == "/" ? "/" + base : d + "/" + base;
}

// A name whose last component is empty or "." ("dir/", "dir/.") names a
// directory: open(2) opens nothing else by it.
bool names_directory(const std::string& path) {
  return path.ends_with('/') || path == "." || path.ends_with("/.");
}

// What open(2) answers for such a name, checked here because the name is
// opened without its trailing "/" under --allow (resolved, then confined).
void check_directory_name(const std::string& requested, const std::string& path, int flags) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw Error(ENOTDIR, "open " + requested);
    return;  // the opener refuses a directory (EISDIR)
  }
  if (errno == ENOENT && (flags & O_CREAT) != 0) throw Error(EISDIR, "open " + requested);
  throw_errno("open " + requested);
}

// An --allow entry names something there, or a file to be created in a
// directory that is there (the one new file of a --write-once server); a
// pattern's fixed directory, and an entry ending in "/", must be directories.
// A mistyped entry would otherwise refuse every open of the session, long
// after the command line that caused it.
void check_entry(const std::string& entry) {
  auto fail = [&entry](int errnum) {
    throw UsageError("--allow " + entry + ": " + std::strerror(errnum));
  };
  const bool glob = has_glob(entry);
  const bool directory = glob || entry.ends_with('/');
  std::string must_exist = entry;
  if (glob) {
    auto slash = entry.rfind('/', entry.find_first_of("*?["));
    must_exist = slash == std::string::npos ? "." : entry.substr(0, slash == 0 ? 1 : slash);
  }
  struct stat st {};
  if (::stat(must_exist.c_str(), &st) == 0) {
    if (directory && !S_ISDIR(st.st_mode)) fail(ENOTDIR);
    return;
  }
  if (errno != ENOENT || directory) fail(errno);
  auto slash = entry.rfind('/');
  std::string parent = slash == std::string::npos ? "." : entry.substr(0, slash == 0 ? 1 : slash);
  if (::stat(parent.c_str(), &st) != 0) fail(errno);
  if (!S_ISDIR(st.st_mode)) fail(ENOTDIR);
}

}  // namespace

PathPolicy::PathPolicy(const std::vector<std::string>& allow, bool read_only, bool write_once)
    : read_only_(read_only), write_once_(write_once) {
  for (const auto& a : allow) {
    check_entry(a);
    Entry e;
    std::string abs = absolute(a);
    e.literal = tidy(abs);
    if (has_glob(abs)) {
      // Resolve the fixed directory part so that globs compare with real paths.
      auto slash = abs.rfind('/', abs.find_first_of("*?["));
      std::string dir = real_path(abs.substr(0, slash == 0 ? 1 : slash));
      e.pattern = dir.empty() ? abs : (dir == "/" ? "" : dir) + abs.substr(slash);
      e.glob = true;
    } else {
      std::string r = real_path(abs);
      e.pattern = r.empty() ? abs : r;
      struct stat st {};
      e.directory = (::stat(e.pattern.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) ||
                    (!abs.empty() && abs.back() == '/');
      while (e.pattern.size() > 1 && e.pattern.back() == '/') e.pattern.pop_back();
    }
    entries_.push_back(std::move(e));
  }
}

bool PathPolicy::matches(const Entry& e, const std::string& pattern, const std::string& path) {
  if (e.glob) return ::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0;
  if (!e.directory) return path == pattern;
  return pattern == "/" || (path.compare(0, pattern.size(), pattern) == 0 &&
                            (path.size() == pattern.size() || path[pattern.size()] == '/'));
}

bool PathPolicy::allowed_as_written(const std::string& path) const {
  for (const auto& e : entries_)
    if (matches(e, e.pattern, path) || matches(e, e.literal, path)) return true;
  return false;
}

const PathPolicy::Entry* PathPolicy::allowing(const std::string& resolved) const {
  for (const auto& e : entries_)
    if (matches(e, e.pattern, resolved)) return &e;
  return nullptr;
}

std::string PathPolicy::root_of(const Entry& e) {
  if (e.directory) return e.pattern;
  auto slash = e.glob ? e.pattern.rfind('/', e.pattern.find_first_of("*?[")) : e.pattern.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : e.pattern.substr(0, slash);
}

SandboxRules PathPolicy::sandbox_rules() const {
  SandboxRules rules;
  for (const auto& e : entries_) {
    if (e.glob || e.directory) {
      rules.trees.push_back(root_of(e));
    } else {
      rules.files.push_back(e.pattern);
      rules.file_parents.push_back(root_of(e));
    }
  }
  return rules;
}

OpenDecision PathPolicy::decide(const std::string& requested, int flags) const {
  // open(2) would stop at a NUL and open another name than the one checked
  // and logged; no client can mean one, its names are C strings.
  if (requested.find('\0') != std::string::npos) throw Error(EACCES, "open: NUL in name");
  if (requested.empty()) throw Error(ENOENT, "open: empty name");

  OpenDecision d;
  d.flags = (flags & client_flags) | O_NOCTTY;
  if ((d.flags & O_ACCMODE) == O_RDONLY) d.flags &= ~(O_TRUNC | O_CREAT | O_EXCL | O_APPEND);
  bool writing = (d.flags & O_ACCMODE) != O_RDONLY;
  if (read_only_ && writing) throw Error(EROFS, "open " + requested + ": read-only server");

  if (!restricted()) {
    // A name that open_tape would take for "host:path" or standard I/O is a
    // local file here: the server never opens a connection or its own stdio.
    d.path = requested;
    if (requested == "-" || is_remote_name(requested)) d.path = "./" + requested;
  } else {
    // Without a tree to leave, ".." is harmless; under --allow it is refused
    // before anything is resolved. So are control characters: GNU rmt and
    // rmt-dump open a name with a tab or a carriage return, and tar sends
    // one if the user typed it, but an allowed tree has no use for them.
    if (has_dotdot(requested)) throw Error(EACCES, "open " + requested + ": \"..\" refused");
    for (char c : requested)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw Error(EACCES, "open: control character in name");
    std::string abs = tidy(absolute(requested));
    if (!allowed_as_written(abs)) throw Error(EACCES, "open " + requested + ": not allowed");
    d.path = resolve(abs);
    if (d.path.empty()) {
      // Nothing checked can be opened: a missing directory is reported as
      // such, any other name that does not resolve (a link to a directory
      // deeper than PATH_MAX) is refused, never opened unresolved.
      if (errno == ENOENT || errno == ENOTDIR) throw Error(errno, "open " + requested);
      throw Error(EACCES, "open " + requested + ": cannot be resolved");
    }
    const Entry* e = allowing(d.path);
    if (e == nullptr) throw Error(EACCES, "open " + requested + ": leaves the allowed tree");
    d.root = root_of(*e);
    d.beneath = d.path == d.root ? "." : d.path.substr(d.root == "/" ? 1 : d.root.size() + 1);
    // Every link is resolved now, so a link swapped in later is refused.
    d.flags |= O_NOFOLLOW;
  }

  if (names_directory(requested)) check_directory_name(requested, d.path, d.flags);

  if (write_once_ && writing) {
    struct stat st {};
    if (::stat(d.path.c_str(), &st) == 0) {
      if (!S_ISCHR(st.st_mode)) throw Error(EEXIST, "open " + requested + ": write-once");
    } else {
      d.flags |= O_CREAT | O_EXCL;
    }
  }
  return d;
}

}  // namespace tk::rmt_server
