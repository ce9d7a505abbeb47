// The bookkeeping of the WAN emulator (wanrelay) that needs no sockets: the
// link's token bucket and a connection's bytes in flight, both on a clock the
// caller passes in, so unit tests drive them with made-up times.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>

namespace tk::wan {

// Nanoseconds on some monotonic clock.
using Nanos = std::int64_t;
inline constexpr Nanos nanos_per_second = 1'000'000'000;
// A time that never comes: nothing is due.
inline constexpr Nanos never = std::numeric_limits<Nanos>::max();

// The link's rate in one direction, shared by every connection: a token
// bucket (one token per byte, refilled at rate, at most depth tokens) that
// may go into debt. A transfer is never refused: it is told when its last
// byte has passed the link, which is later the deeper the debt, as bytes
// queued behind others at a bottleneck are. rate 0 means no limit.
class TokenBucket {
 public:
  TokenBucket(std::uint64_t bytes_per_second, std::uint64_t depth, Nanos now)
      : rate_(bytes_per_second), depth_(static_cast<double>(depth)), tokens_(depth_), last_(now) {}

  // Takes bytes from the bucket at now; returns when they have passed.
  Nanos pass(std::uint64_t bytes, Nanos now) {
    if (rate_ == 0) return now;
    refill(now);
    tokens_ -= static_cast<double>(bytes);
    if (tokens_ >= 0) return now;
    return now + static_cast<Nanos>(-tokens_ * nanos_per_second / static_cast<double>(rate_));
  }

 private:
  void refill(Nanos now) {
    if (now <= last_) return;
    tokens_ = std::min(depth_, tokens_ + static_cast<double>(now - last_) *
                                             static_cast<double>(rate_) / nanos_per_second);
    last_ = now;
  }

  std::uint64_t rate_;
  double depth_;
  double tokens_;
  Nanos last_;
};

// One direction of one connection: at most window bytes taken from the
// sender and not yet acknowledged. Bytes count from the moment the relay
// reads them until ack_delay after they were delivered to the receiver,
// the time a TCP acknowledgement takes to travel back.
class FlightWindow {
 public:
  FlightWindow(std::uint64_t window, Nanos ack_delay) : window_(window), ack_delay_(ack_delay) {}

  // How many more bytes the sender may have in flight.
  std::uint64_t room() const { return window_ - in_flight_; }
  std::uint64_t in_flight() const { return in_flight_; }

  // bytes (at most room()) were read from the sender.
  void sent(std::uint64_t bytes) { in_flight_ += std::min(bytes, room()); }

  // bytes reached the receiver at now; they are acknowledged ack_delay later.
  void delivered(std::uint64_t bytes, Nanos now) {
    if (!acks_.empty() && acks_.back().at == now + ack_delay_) {
      acks_.back().bytes += bytes;
    } else {
      acks_.push_back({now + ack_delay_, bytes});
    }
  }

  // Releases the acknowledgements due at now; returns whether any was.
  bool acknowledge(Nanos now) {
    bool released = false;
    while (!acks_.empty() && acks_.front().at <= now) {
      in_flight_ -= std::min(acks_.front().bytes, in_flight_);
      acks_.pop_front();
      released = true;
    }
    return released;
  }

  // When the next acknowledgement is due; never when none is on its way.
  Nanos next_ack() const { return acks_.empty() ? never : acks_.front().at; }

 private:
  struct Ack {
    Nanos at;
    std::uint64_t bytes;
  };
  std::uint64_t window_;
  Nanos ack_delay_;
  std::uint64_t in_flight_ = 0;
  std::deque<Ack> acks_;
};

}  // namespace tk::wan
