#pragma once
// Counter-based random numbers: Random123's Philox4x32-10, the same code on host and device.
// A stream is keyed by (seed, 96-bit stream id) and indexed by draw number, so a result depends
// on the seed and the entity that draws (a cell, a tip, a region), never on which thread ran it.
// Layout: Philox key = seed (64 bits); counter = (block index, stream id a, b, c); each block
// gives four 32-bit draws, so draw n is word n % 4 of block n / 4.
#include <Random123/philox.h>

#include <cstdint>

#include "core/hd.hpp"
#include "core/pmath.hpp"

namespace simkit {

struct StreamId {
  std::uint32_t a = 0, b = 0, c = 0;
  SIMKIT_HD static StreamId from64(std::uint64_t id, std::uint32_t tag = 0) {
    return {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(id >> 32), tag};
  }
};

class RngStream {
 public:
  using Block = r123::Philox4x32::ctr_type;

  SIMKIT_HD RngStream(std::uint64_t seed, StreamId id, std::uint64_t first_draw = 0)
      : key_{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}}, id_(id) {
    skip_to(first_draw);
  }

  // The 4 words of block `index` (stateless).
  SIMKIT_HD Block block(std::uint32_t index) const {
    r123::Philox4x32 philox;
    const Block counter = {{index, id_.a, id_.b, id_.c}};
    return philox(counter, key_);
  }

  SIMKIT_HD void skip_to(std::uint64_t draw) {
    next_block_ = static_cast<std::uint32_t>(draw / 4);
    buffer_ = block(next_block_++);
    pos_ = static_cast<unsigned>(draw % 4);
  }

  SIMKIT_HD std::uint32_t next_u32() {
    if (pos_ == 4) {
      buffer_ = block(next_block_++);
      pos_ = 0;
    }
    return buffer_.v[pos_++];
  }

  SIMKIT_HD std::uint64_t next_u64() {
    const std::uint64_t lo = next_u32();
    const std::uint64_t hi = next_u32();
    return lo | (hi << 32);
  }

  // Uniform on the open interval (0, 1): 52 random bits, centred in their cell, so that u and
  // 1 - u are both exact and neither is ever 0 or 1.
  SIMKIT_HD double uniform() { return uniform_from_bits(next_u64()); }

  SIMKIT_HD static double uniform_from_bits(std::uint64_t bits) {
    return (static_cast<double>(bits >> 12) + 0.5) * 2.220446049250313080847e-16;  // 2^-52
  }

  // Standard normal by inversion: one uniform per draw, bit-identical on host and device.
  SIMKIT_HD double normal() {
    const double u = uniform();
    return pmath::normal_quantile(u, 1.0 - u);
  }

 private:
  r123::Philox4x32::key_type key_;
  StreamId id_;
  std::uint32_t next_block_ = 0;
  Block buffer_{};
  unsigned pos_ = 0;
};

}  // namespace simkit
