// The end of a recorded run, and --plot-from.
#include "picture.hpp"

#include <cerrno>
#include <fstream>

#include "../../lib/error.hpp"
#include "advice.hpp"
#include "buffer.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace tk::buffer {

namespace {
void say_advice(const Advice& advice, const Options& options) {
  if (options.json)
    print_stderr_as_is(advice_json(advice));
  else
    print_stderr(advice.text);
}
}  // namespace

void finish_recorded_run(const RunRecord& record, const Options& options) {
  Advice advice = advise(record);
  // A run that wrote nothing failed for reasons of its own, already said;
  // a line about queues would only be noise under them (JSON keeps it).
  if (advice.verdict != Advice::Verdict::no_data || options.json) say_advice(advice, options);
  if (options.plot_file.empty()) return;
  try {
    write_plot(options.plot_file, plot_svg(record, advice));
  } catch (const Error& e) {
    print_stderr("buffer: --plot: " + std::string(e.what()) + "; no picture was drawn\n");
  }
}

int draw_record(const Options& options) {
  errno = 0;  // what the failed open leaves, not an earlier call's
  std::ifstream in(options.plot_from);
  if (!in) throw Error(errno ? errno : ENOENT, "open record " + options.plot_from);
  RunRecord record = parse_record(in, options.plot_from);
  if (in.bad()) throw Error(EIO, "read record " + options.plot_from);
  Advice advice = advise(record);
  say_advice(advice, options);
  write_plot(options.plot_file, plot_svg(record, advice));
  return kExitOk;
}

}  // namespace tk::buffer
