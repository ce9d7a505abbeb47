// buffer's advice: the ring model run over a record, then put in words.
#include "advice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "../../lib/ring/replay.hpp"
#include "options.hpp"
#include "report.hpp"

namespace tk::buffer {

namespace {

// A rate as the caption writes one.
std::string rate_text(double bytes_per_s) { return human_bytes(bytes_per_s) + "/s"; }

std::string seconds_of(double s) {
  char text[32];
  std::snprintf(text, sizeof text, s < 10 ? "%.1f s" : "%.0f s", s);
  return text;
}

// -m for a ring of at least `bytes` of `block_size` blocks, as one would
// type it: whole MiB (k below one).
std::string m_value_for(std::uint64_t bytes, std::uint64_t block_size, std::uint64_t& m_bytes) {
  const std::uint64_t blocks = (bytes + block_size - 1) / block_size;
  const std::uint64_t needed = kLegacyQueueHeader + blocks * block_size;
  const std::uint64_t mib = std::uint64_t{1} << 20, kib = 1024;
  if (needed >= mib) {
    m_bytes = (needed + mib - 1) / mib * mib;
    return std::to_string(m_bytes / mib) + "m";
  }
  m_bytes = (needed + kib - 1) / kib * kib;
  return std::to_string(m_bytes / kib) + "k";
}

}  // namespace

Advice advise(const RunRecord& record) {
  Advice a;
  const RecordHeader& h = record.header;
  a.ring_bytes = h.block_size * h.blocks;
  double total_in = 0, total_out = 0;
  double first_out = -1, last_out = 0, output_waits_in_run = 0;
  std::uint64_t wait_stretches = 0;
  bool waiting = false;
  std::vector<ObservedStep> observed;
  observed.reserve(record.ticks.size());
  for (const Tick& k : record.ticks) {
    total_in += static_cast<double>(k.bytes_in);
    total_out += static_cast<double>(k.bytes_out);
    a.waits += k.underruns;
    a.wait_s += k.out_wait_s;
    if (k.out_wait_s > 0.001 && !waiting) ++wait_stretches;
    waiting = k.out_wait_s > 0.001;
    if (k.bytes_out > 0) {
      if (first_out < 0) first_out = k.t - k.span;
      last_out = k.t;
    }
    // parse_record refuses a header of no blocks, and a ring has some.
    a.peak_fill = std::max(a.peak_fill, static_cast<double>(k.fill_hi) / static_cast<double>(h.blocks));
    observed.push_back({k.span, static_cast<double>(k.bytes_in), static_cast<double>(k.bytes_out),
                        k.in_wait_s, k.out_wait_s});
  }
  // -p and --high-water waits are no underruns, but waits all the same.
  if (a.waits == 0) a.waits = wait_stretches;
  if (total_out <= 0 || first_out < 0) {
    a.text = "buffer: advice: nothing was written, so there is nothing to advise\n";
    return a;
  }
  double output_span = std::max(1e-9, last_out - first_out);
  for (const Tick& k : record.ticks)
    if (k.t > first_out && k.t <= last_out) output_waits_in_run += k.out_wait_s;
  double output_busy = std::max(1e-9, output_span - output_waits_in_run);
  a.out_rate = total_out / output_busy;
  if (h.output_rate > 0 && a.out_rate > static_cast<double>(h.output_rate)) {
    a.out_rate = static_cast<double>(h.output_rate);
    a.out_rate_is_limit = true;
  }
  const double run_s = record.ticks.empty() ? 0 : record.ticks.back().t;
  a.in_rate = run_s > 0 ? total_in / run_s : 0;
  a.idle_share = std::min(1.0, a.wait_s / output_span);

  const std::string ring_text = human_bytes(static_cast<double>(a.ring_bytes));
  if (a.wait_s < 0.001 && a.waits == 0) {
    a.verdict = Advice::Verdict::no_waits;
    char peak[32];
    std::snprintf(peak, sizeof peak, "%.0f %%", a.peak_fill * 100);
    a.text = "buffer: advice: the output never waited for input: the ring of " + ring_text +
             " was enough (at most " + peak + " full)\n";
    return a;
  }
  // Steps of a fifth of a tick, fewer on a run of days: a bisection
  // replays the run some twenty times.
  const double step = std::max(h.tick_s / 5, run_s / 2e6);
  const double block = static_cast<double>(h.block_size);
  auto needed = smallest_queue_without_waits(
      observed, block, static_cast<double>(a.ring_bytes),
      std::max(total_in, static_cast<double>(a.ring_bytes)) + block, step, h.tick_s);
  const std::string waited = "it waited " + std::to_string(a.waits) +
                             (a.waits == 1 ? " time, " : " times, ") + seconds_of(a.wait_s) +
                             " in all";
  if (needed && *needed <= static_cast<double>(a.ring_bytes)) {
    // The waits were moments inside ticks (the start, a hiccup of the
    // machine): the model sees none at this size, so no size would help.
    a.verdict = Advice::Verdict::no_waits;
    a.text = "buffer: advice: the ring of " + ring_text + " was enough: " + waited +
             ", each too brief for a larger ring to change\n";
    return a;
  }
  if (needed) {
    a.verdict = Advice::Verdict::bigger_ring;
    // The model sees ticks, not the moments inside them: a quarter more,
    // and at least two ticks of the output's rate more.
    double margin = std::max(*needed * 0.25, 2 * h.tick_s * a.out_rate);
    std::uint64_t m_bytes = 0;
    a.advised_m = m_value_for(static_cast<std::uint64_t>(*needed + margin), h.block_size, m_bytes);
    a.advised_ring_bytes = (m_bytes - kLegacyQueueHeader) / h.block_size * h.block_size;
    a.text = "buffer: advice: a ring of " + human_bytes(static_cast<double>(a.advised_ring_bytes)) +
             " (-m " + a.advised_m + ") would have kept the output busy for this run; with its " +
             ring_text + " " + waited + "\n";
    // A queue that memory cannot hold fits on a disk (--queue-file).
    long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0 &&
        static_cast<double>(a.advised_ring_bytes) >
            static_cast<double>(pages) * static_cast<double>(page_size) / 2)
      a.text += "buffer: advice: that is more than half this machine's memory: give it with "
                "--queue-file DIR, on a disk faster than the output\n";
    return a;
  }
  a.verdict = Advice::Verdict::input_too_slow;
  char idle[32];
  std::snprintf(idle, sizeof idle, "%.0f %%", a.idle_share * 100);
  const std::string in_text = "it delivered " + rate_text(a.in_rate) + " over the run";
  const std::string out_text = "the output wrote " + rate_text(a.out_rate) + " while it had data" +
                               (a.out_rate_is_limit ? " (its --output-rate)" : "");
  if (a.in_rate < a.out_rate)
    a.text = "buffer: advice: the input was slower than the output: " + in_text + ", " + out_text +
             "; no ring size helps; the output idled " + idle + " (" + waited + ")\n";
  else
    a.text = "buffer: advice: no ring size removes the output's waits: the input fell behind it "
             "for longer than any queue can cover, though " + in_text + " and " + out_text +
             "; the output idled " + idle + " (" + waited + ")\n";
  return a;
}

std::string advice_json(const Advice& a) {
  static const char* const verdicts[] = {"no_data", "no_waits", "bigger_ring", "input_too_slow"};
  std::string text = a.text;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  JsonObject json;
  json.string("event", "advice")
      .string("verdict", verdicts[static_cast<int>(a.verdict)])
      .integer("ring_bytes", a.ring_bytes)
      .integer("waits", a.waits)
      .fixed("wait_s", a.wait_s, 3);
  if (a.verdict == Advice::Verdict::bigger_ring)
    json.integer("advised_ring_bytes", a.advised_ring_bytes).string("advised_m", a.advised_m);
  json.fixed("in_rate", a.in_rate, 0)
      .fixed("out_rate", a.out_rate, 0)
      .fixed("idle_share", a.idle_share, 4)
      .string("text", text);
  return json.line();
}

}  // namespace tk::buffer
