// The seeded draws of pacer's --burst N:M and --pause A:B, shared with
// queue-sim, which must replay exactly the schedule pacer makes.
#pragma once

#include <cstdint>
#include <random>

namespace tk::test {

class SeededDraw {
 public:
  explicit SeededDraw(std::uint64_t seed) : random_(seed) {}
  // Uniform in [low, high]; no draw is taken when they are equal.
  template <class T>
  T operator()(T low, T high) {
    if (high == low) return low;
    auto span = static_cast<std::uint64_t>(high - low) + 1;
    return static_cast<T>(static_cast<std::uint64_t>(low) + random_() % span);
  }

 private:
  std::mt19937_64 random_;
};

}  // namespace tk::test
