/* preempted.c: an LD_PRELOAD shim for a client on a loaded machine, where a
 * thread that gives its CPU away waits, runnable, behind the others before it
 * runs again: after each short write to a pipe (a request, which wakes the
 * process reading it, and that one takes the CPU) and at each sched_yield(),
 * the calling thread sleeps 60 ms, and its /proc/thread-self/schedstat
 * counts those 60 ms as time waited for a CPU (added to the real second
 * field), as the kernel would count such a wait. For tests that --streams
 * auto does not take its own waits while a request was on its way for the
 * host's delay: they did not make the reply any later.
 * Only the process it is preloaded into is affected: it takes itself out
 * of LD_PRELOAD for the processes that one starts (the remote shell, rmt).
 *   LD_PRELOAD=preempted.so buffer --streams auto ... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "schedstat_answer.h"

#define PREEMPTED_NS 60000000LL
#define SHORT_WRITE 64

static _Thread_local long long preempted_ns;

__attribute__((constructor)) static void only_this_process(void) { unsetenv("LD_PRELOAD"); }

static void lose_cpu(void) {
  struct timespec pause = {0, PREEMPTED_NS};
  while (nanosleep(&pause, &pause) == -1) {
  }
  preempted_ns += PREEMPTED_NS;
}

int sched_yield(void) {
  lose_cpu();
  return 0;
}

ssize_t write(int fd, const void* bytes, size_t count) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t (*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  ssize_t n = real(fd, bytes, count);
  struct stat st;
  if (n > 0 && count < SHORT_WRITE && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) lose_cpu();
  return n;
}

static int answers(const char* path) { return strcmp(path, "/proc/thread-self/schedstat") == 0; }

/* The real schedstat of this thread, with the waits above added. */
static int answer(int (*real_open)(const char*, int, ...)) {
  int in = real_open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  char text[128];
  ssize_t got = read(in, text, sizeof text - 1);
  close(in);
  if (got <= 0) return -1;
  text[got] = '\0';
  unsigned long long on_cpu = 0, waited = 0, slices = 0;
  if (sscanf(text, "%llu %llu %llu", &on_cpu, &waited, &slices) != 3) return -1;
  return schedstat_text(on_cpu, waited + (unsigned long long)preempted_ns, slices);
}
