// buffer --plot: the SVG picture of a record. Plain SVG 1.1 with a generic
// font family: no script, no external font, image or style sheet.
#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <vector>

#include "../../lib/error.hpp"
#include "../../lib/io.hpp"
#include "report.hpp"

namespace tk::buffer {

namespace {

constexpr int kLanesTop = kFillTop + kFillHeight + 18;  // the waits' and long writes' lanes
constexpr int kLaneHeight = 14;
constexpr int kRateTop = kLanesTop + 2 * kLaneHeight + 40;
constexpr int kRateHeight = 200;
constexpr int kCaptionTop = kRateTop + kRateHeight + 40;

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  std::string s = text;
  // 12.50 -> 12.5, 12.00 -> 12: shorter files for long runs.
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string xml_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\n': out += ' '; break;
      default:
        // Other control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20) out += ' ';
        else out += c;
    }
  }
  return out;
}

// A run's length as one reads it: "42.1 s", "12 min 5 s", "5 h 33 min", "2 d 4 h".
std::string duration_text(double s) {
  char text[48];
  auto whole = static_cast<long long>(s);
  if (s < 120)
    std::snprintf(text, sizeof text, "%.1f s", s);
  else if (s < 7200)
    std::snprintf(text, sizeof text, "%lld min %lld s", whole / 60, whole % 60);
  else if (s < 172800)
    std::snprintf(text, sizeof text, "%lld h %lld min", whole / 3600, whole % 3600 / 60);
  else
    std::snprintf(text, sizeof text, "%lld d %lld h", whole / 86400, whole % 86400 / 3600);
  return text;
}

std::string time_label(double s, double step) {
  char text[32];
  if (step < 1)
    std::snprintf(text, sizeof text, "%.1f s", s);
  else if (step < 60)
    std::snprintf(text, sizeof text, "%.0f s", s);
  else if (step < 3600)
    std::snprintf(text, sizeof text, "%.0f min", s / 60);
  else
    std::snprintf(text, sizeof text, "%.0f h", s / 3600);
  return text;
}

// A step giving at most ten labels on an axis of `span` seconds.
double time_step(double span) {
  static const double steps[] = {0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
                                 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  for (double s : steps)
    if (span / s <= 10) return s;
  return std::ceil(span / 10 / 604800) * 604800;
}

// 1, 2 or 5 times a power of ten, at or above `v`.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

struct Column {
  bool used = false;
  double x = 0;
  std::uint64_t fill_lo = 0, fill_hi = 0;
  double in = 0, out = 0, span = 0, out_wait = 0;
};

// Where a time, a fill and a rate go in the picture.
struct Scales {
  double T = 1;          // the time axis' length: the run's, at least a second's nothing
  double blocks = 1;     // the ring's blocks: the fill axis' top
  double rate_axis = 1;  // MiB/s at the rate axis' top
  double x_of(double t) const { return kPlotLeft + kPlotWidth * std::clamp(t / T, 0.0, 1.0); }
  double fill_y(double fill) const { return kFillTop + kFillHeight * (1 - fill / blocks); }
  double rate_y(double bytes, double span) const {
    double mib_s = span > 0 ? bytes / span / 1048576 : 0;
    return kRateTop + kRateHeight * (1 - std::min(mib_s / rate_axis, 1.0));
  }
};

// One point a tick while they fit, else a column a pixel.
std::vector<Column> columns_of(const RunRecord& record, const Scales& at, bool per_tick) {
  std::vector<Column> columns;
  if (per_tick) {
    for (const Tick& k : record.ticks)
      columns.push_back({true, at.x_of(k.t), k.fill_lo, k.fill_hi, static_cast<double>(k.bytes_in),
                         static_cast<double>(k.bytes_out), k.span, k.out_wait_s});
    return columns;
  }
  columns.resize(static_cast<std::size_t>(kPlotWidth) + 1);
  for (const Tick& k : record.ticks) {
    auto c = static_cast<std::size_t>(std::lround(at.x_of(k.t) - kPlotLeft));
    Column& col = columns[c];
    if (!col.used) {
      col = {true, kPlotLeft + static_cast<double>(c), k.fill_lo, k.fill_hi, 0, 0, 0, 0};
    }
    col.fill_lo = std::min(col.fill_lo, k.fill_lo);
    col.fill_hi = std::max(col.fill_hi, k.fill_hi);
    col.in += static_cast<double>(k.bytes_in);
    col.out += static_cast<double>(k.bytes_out);
    col.span += k.span;
    col.out_wait += k.out_wait_s;
  }
  std::erase_if(columns, [](const Column& c) { return !c.used; });
  return columns;
}

// The title line, the two frames and their grids with the axes' labels.
void draw_frames(std::string& svg, const RecordHeader& h, const Scales& at, double end) {
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
         std::to_string(kSvgWidth) + "\" height=\"" + std::to_string(kSvgHeight) +
         "\" viewBox=\"0 0 " + std::to_string(kSvgWidth) + " " + std::to_string(kSvgHeight) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<title>buffer run: " + xml_text(h.input) + " to " + xml_text(h.output) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(kSvgWidth) + "\" height=\"" +
         std::to_string(kSvgHeight) + "\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"" + std::to_string(kPlotLeft) + "\" y=\"30\" font-size=\"16\">buffer: " +
         xml_text(h.input) + " \u2192 " + xml_text(h.output) + ", " + duration_text(end) +
         ", tick " + num(h.tick_s * 1000) + " ms</text>\n";

  auto frame = [&](int top, int height, const std::string& label) {
    svg += "<rect x=\"" + std::to_string(kPlotLeft) + "\" y=\"" + std::to_string(top) +
           "\" width=\"" + std::to_string(kPlotWidth) + "\" height=\"" + std::to_string(height) +
           "\" fill=\"#f7f7f7\" stroke=\"#999999\"/>\n";
    svg += "<text x=\"" + std::to_string(kPlotLeft) + "\" y=\"" + std::to_string(top - 6) +
           "\" font-weight=\"bold\">" + label + "</text>\n";
  };
  frame(kFillTop, kFillHeight, "ring fill (% of " + xml_text(human_bytes(at.blocks * static_cast<double>(h.block_size))) + ")");
  frame(kRateTop, kRateHeight, "rates (MiB/s): input (blue), output (green)");
  auto grid_line = [&](double y, const std::string& label) {
    svg += "<line x1=\"" + std::to_string(kPlotLeft) + "\" x2=\"" + std::to_string(kPlotLeft + kPlotWidth) +
           "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\" stroke=\"#dddddd\"/>";
    svg += "<text x=\"" + std::to_string(kPlotLeft - 6) + "\" y=\"" + num(y + 4) +
           "\" text-anchor=\"end\">" + label + "</text>\n";
  };
  for (int pct = 0; pct <= 100; pct += 25)
    grid_line(at.fill_y(at.blocks * pct / 100), std::to_string(pct) + " %");
  for (int i = 0; i <= 4; ++i)
    grid_line(kRateTop + kRateHeight * (1 - static_cast<double>(i) / 4), num(at.rate_axis * i / 4));
  const double step = time_step(at.T);
  for (double t = 0; t <= at.T + 1e-9; t += step) {
    double x = at.x_of(t);
    for (int top : {kFillTop, kRateTop}) {
      int height = top == kFillTop ? kFillHeight : kRateHeight;
      svg += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + std::to_string(top) +
             "\" y2=\"" + std::to_string(top + height) + "\" stroke=\"#e4e4e4\"/>";
      svg += "<text x=\"" + num(x) + "\" y=\"" + std::to_string(top + height + 14) +
             "\" text-anchor=\"middle\" font-size=\"10\">" + time_label(t, step) + "</text>\n";
    }
  }
}

// The fill (a point a tick, or a column's lowest and highest) and the rates.
void draw_series(std::string& svg, const std::vector<Column>& columns, const Scales& at) {
  svg += "<polyline id=\"fill\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"1.5\" points=\"";
  for (const Column& c : columns) {
    svg += num(c.x) + "," + num(at.fill_y(static_cast<double>(c.fill_lo))) + " ";
    if (c.fill_hi != c.fill_lo) svg += num(c.x) + "," + num(at.fill_y(static_cast<double>(c.fill_hi))) + " ";
  }
  svg += "\"/>\n";
  auto rate_line = [&](const char* id, const char* colour, bool input) {
    svg += std::string("<polyline id=\"") + id + "\" fill=\"none\" stroke=\"" + colour +
           "\" stroke-width=\"1.2\" points=\"";
    for (const Column& c : columns)
      svg += num(c.x) + "," + num(at.rate_y(input ? c.in : c.out, c.span)) + " ";
    svg += "\"/>\n";
  };
  rate_line("rate-in", "#3a7bd5", true);
  rate_line("rate-out", "#2e9e44", false);
}

// The lanes: every wait and every long write, at least a pixel or two wide;
// then the volumes' and signals' marks across both frames.
void draw_events(std::string& svg, const RunRecord& record, const std::vector<Column>& columns,
                 const Scales& at, double column_width) {
  const int waits_y = kLanesTop, long_y = kLanesTop + kLaneHeight + 4;
  svg += "<text x=\"" + std::to_string(kPlotLeft - 6) + "\" y=\"" + std::to_string(waits_y + 11) +
         "\" text-anchor=\"end\" font-size=\"10\">waits</text>";
  svg += "<text x=\"" + std::to_string(kPlotLeft - 6) + "\" y=\"" + std::to_string(long_y + 11) +
         "\" text-anchor=\"end\" font-size=\"10\">long writes</text>\n";
  svg += "<g id=\"waits\" fill=\"#d62728\">";
  for (const Column& c : columns)
    if (c.out_wait > 0)
      svg += "<rect x=\"" + num(c.x - column_width) + "\" y=\"" + std::to_string(waits_y) +
             "\" width=\"" + num(column_width) + "\" height=\"" + std::to_string(kLaneHeight) +
             "\"><title>output waited " + num(c.out_wait * 1000) + " ms</title></rect>";
  svg += "</g>\n<g id=\"long-writes\" fill=\"#ff7f0e\">";
  for (const RunEvent& e : record.events) {
    if (e.kind != RunEvent::Kind::long_write) continue;
    double x0 = at.x_of(e.t), x1 = std::max(at.x_of(e.t + e.seconds), x0 + 2);
    svg += "<rect x=\"" + num(x0) + "\" y=\"" + std::to_string(long_y) + "\" width=\"" +
           num(x1 - x0) + "\" height=\"" + std::to_string(kLaneHeight) + "\"><title>a write blocked " +
           num(e.seconds) + " s at " + num(e.t) + " s</title></rect>";
  }
  svg += "</g>\n<g id=\"marks\">";
  for (const RunEvent& e : record.events) {
    if (e.kind != RunEvent::Kind::volume && e.kind != RunEvent::Kind::signal) continue;
    bool volume = e.kind == RunEvent::Kind::volume;
    double x = at.x_of(e.t);
    std::string label = volume ? "volume " + std::to_string(e.volume) : xml_text(e.signal);
    const char* colour = volume ? "#6a3d9a" : "#b15928";
    svg += "<line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + std::to_string(kFillTop) +
           "\" y2=\"" + std::to_string(kRateTop + kRateHeight) + "\" stroke=\"" + colour +
           "\" stroke-dasharray=\"4 3\"><title>" + label + " at " + num(e.t) + " s</title></line>";
    svg += "<text x=\"" + num(x + 3) + "\" y=\"" + std::to_string(kFillTop + 12) + "\" fill=\"" +
           colour + "\" font-size=\"10\">" + label + "</text>";
  }
  svg += "</g>\n";
}

// The caption's lines: the totals, then the advice's. The waits and the
// peak are the advice's, so that the caption and the advice beneath it
// count alike.
std::vector<std::string> caption_lines(const RunRecord& record, const Advice& advice, double end) {
  const RecordHeader& h = record.header;
  double total_in = 0, total_out = 0;
  std::uint64_t long_writes = 0, volumes = 1;
  double long_write_s = 0;
  for (const Tick& k : record.ticks) {
    total_in += static_cast<double>(k.bytes_in);
    total_out += static_cast<double>(k.bytes_out);
  }
  for (const RunEvent& e : record.events) {
    if (e.kind == RunEvent::Kind::long_write) {
      ++long_writes;
      long_write_s += e.seconds;
    }
    if (e.kind == RunEvent::Kind::volume) volumes = std::max(volumes, e.volume);
  }
  long_writes += record.long_writes_lost;
  const double blocks = static_cast<double>(std::max<std::uint64_t>(h.blocks, 1));
  auto rate_text = [&](double bytes) {
    return end > 0 ? human_bytes(bytes / end) + "/s" : std::string("-");
  };
  std::vector<std::string> caption{
      "in " + human_bytes(total_in) + " (" + rate_text(total_in) + "), out " +
          human_bytes(total_out) + " (" + rate_text(total_out) + ") in " + duration_text(end) + "; ring " +
          human_bytes(blocks * static_cast<double>(h.block_size)) + " (" +
          std::to_string(h.blocks) + " blocks of " + std::to_string(h.block_size) +
          " bytes), at most " + num(100 * advice.peak_fill) + " % full",
      "the output waited for data " + std::to_string(advice.waits) + " times, " + num(advice.wait_s) +
          " s in all; " + std::to_string(long_writes) + " writes blocked " +
          num(h.long_write_s) + " s or longer, " + num(long_write_s) + " s in all" +
          (volumes > 1 ? "; " + std::to_string(volumes) + " volumes" : "")};
  const std::string& advice_text = advice.text;
  std::size_t from = 0;
  while (from < advice_text.size()) {
    std::size_t nl = advice_text.find('\n', from);
    if (nl == std::string::npos) nl = advice_text.size();
    if (nl > from) caption.push_back(advice_text.substr(from, nl - from));
    from = nl + 1;
  }
  return caption;
}

}  // namespace

std::string plot_svg(const RunRecord& record, const Advice& advice) {
  const RecordHeader& h = record.header;
  const double end = record.ticks.empty() ? 0 : record.ticks.back().t;
  Scales at;
  at.T = end > 0 ? end : 1;
  at.blocks = static_cast<double>(std::max<std::uint64_t>(h.blocks, 1));
  const bool per_tick = record.ticks.size() <= static_cast<std::size_t>(kPlotWidth);
  const std::vector<Column> columns = columns_of(record, at, per_tick);
  double top_rate = 0;
  for (const Column& c : columns)
    if (c.span > 0) top_rate = std::max({top_rate, c.in / c.span, c.out / c.span});
  at.rate_axis = nice_ceiling(top_rate / 1048576);

  std::string svg;
  svg.reserve(64 * columns.size() + 8192);
  draw_frames(svg, h, at, end);
  draw_series(svg, columns, at);
  const double column_width =
      per_tick && !record.ticks.empty() ? std::max(1.0, kPlotWidth * h.tick_s / at.T) : 1.0;
  draw_events(svg, record, columns, at, column_width);
  svg += "<g id=\"caption\">";
  int y = kCaptionTop;
  for (const std::string& line : caption_lines(record, advice, end)) {
    svg += "<text x=\"" + std::to_string(kPlotLeft) + "\" y=\"" + std::to_string(y) + "\">" +
           xml_text(line) + "</text>\n";
    y += 17;
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

void write_plot(const std::string& path, const std::string& svg) {
  Fd fd = open_file(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
  write_all(fd.get(), std::as_bytes(std::span(svg.data(), svg.size())), path);
}

}  // namespace tk::buffer
