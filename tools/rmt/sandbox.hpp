// rmt's second line of defence under --allow: a Landlock ruleset that leaves
// the process only the allowed trees, so a flaw in the path checks cannot
// reach the rest of the file system: whatever the session needs is acquired
// first, then the process narrows itself.
#pragma once

#include <string>
#include <vector>

namespace tk::rmt_server {

struct SandboxRules {
  std::vector<std::string> trees;        // everything beneath
  std::vector<std::string> files;        // read, write, execute nothing else
  std::vector<std::string> file_parents; // create and use files directly inside
};

// Confines the process to the rules, irreversibly. Returns a word for the
// session log: "landlock", or why it was not applied ("no landlock: ...");
// a kernel without Landlock is not an error.
std::string confine(const SandboxRules& rules);

}  // namespace tk::rmt_server
