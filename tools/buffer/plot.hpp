// buffer --plot: a recorded run as one self-contained SVG picture: the
// ring's fill over time, the input and output rates, the output's waits,
// long writes, volume changes and stop signals, and a caption.
#pragma once

#include <string>

#include "advice.hpp"
#include "record.hpp"

namespace tk::buffer {

// The picture's size and the fill panel's axes (documented in buffer(1),
// and relied on by tests/buffer-record.bats): a tick that ends at t seconds
// with `fill` blocks queued is drawn at
//   x = kPlotLeft + kPlotWidth * t / T   (T: the last tick's t)
//   y = kFillTop + kFillHeight * (1 - fill / blocks)
inline constexpr int kSvgWidth = 1200;
inline constexpr int kSvgHeight = 760;
inline constexpr int kPlotLeft = 80;
inline constexpr int kPlotWidth = 1090;
inline constexpr int kFillTop = 60;
inline constexpr int kFillHeight = 220;

// The SVG text. Curves have a point per tick while the run has no more
// ticks than the plot has pixel columns; beyond, each column gets the
// lowest and the highest fill of its ticks and their average rates.
// Events are never thinned out: each wait, long write and volume change is
// drawn. The caption gives the advice's count of the output's waits and
// the ring's peak, and its text (a line or two).
std::string plot_svg(const RunRecord& record, const Advice& advice);

// Writes the picture to `path`; throws Error naming it.
void write_plot(const std::string& path, const std::string& svg);

}  // namespace tk::buffer
