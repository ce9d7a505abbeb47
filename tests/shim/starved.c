/* starved.c: an LD_PRELOAD shim for a client whose remote shell is starved
 * of CPU: /proc/PID/schedstat of any other process says it has waited,
 * runnable, for a CPU all the time since the machine started (its second
 * field is CLOCK_MONOTONIC now), so every delay in an exchange with it
 * reads as CPU delay. For tests that --streams auto does not count that
 * time as the link's. The process's own schedstat is the real one.
 *   LD_PRELOAD=starved.so buffer --streams auto ... */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "schedstat_answer.h"

static int answers(const char* path) {
  int pid = 0, end = 0;
  if (sscanf(path, "/proc/%d/schedstat%n", &pid, &end) != 1 || path[end] != '\0') return 0;
  return pid != getpid();
}

static int answer(int (*real_open)(const char*, int, ...)) {
  (void)real_open;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  unsigned long long since_boot =
      (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec;
  return schedstat_text(1000, since_boot, 1);
}
