// What would have kept the output streaming: a recorded run's input and
// output replayed through the ring model (lib/ring/replay.hpp) at other
// sizes, said in a line or two at the end of a recorded run.
#pragma once

#include <cstdint>
#include <string>

#include "record.hpp"

namespace tk::buffer {

struct Advice {
  enum class Verdict { no_data, no_waits, bigger_ring, input_too_slow };
  Verdict verdict = Verdict::no_data;
  std::uint64_t ring_bytes = 0;     // the run's ring: blocks x block size
  std::uint64_t waits = 0;          // the output's waits for data, as recorded
  double wait_s = 0;                // and their time
  double peak_fill = 0;             // the ring's highest fill, 0 to 1
  std::uint64_t advised_ring_bytes = 0;  // bigger_ring: the ring -m advised_m gives
  std::string advised_m;            // bigger_ring: the -m value, "384m"
  // The rates the advice compares, as the caption counts the input's: what
  // it delivered over the whole run, against what the output wrote while
  // it had data, at most its --output-rate (the limit's burst after a wait
  // would otherwise show it faster than the limit).
  double in_rate = 0;               // bytes/s the input delivered over the run
  double out_rate = 0;              // bytes/s the output wrote while busy
  bool out_rate_is_limit = false;   // out_rate is the --output-rate
  double idle_share = 0;            // of the output's time from its first write to its last
  std::string text;                 // "buffer: advice: ...", one or two lines
};

// The advice for a run; the margin over the model's smallest ring is a
// quarter, and at least two ticks of the output's rate.
Advice advise(const RunRecord& record);

// The same as one JSON object, "event":"advice".
std::string advice_json(const Advice& advice);

}  // namespace tk::buffer
