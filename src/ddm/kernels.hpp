#pragma once
// The matchers behind ddm.hpp's entry points. Each calls Collector::emit(s, u) once for every
// intersecting pair (positions in the two sets); the collector turns that into the requested
// output. Serial matchers use one collector; the parallel and GPU matchers their own outputs.
#include <cstdint>
#include <vector>

#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm::detail {

enum class Output { Pairs, Count, PerRegion };

// Where pairs go (Output::Pairs): exactly one of these is set. The serial matchers take only
// `serial` (the entry points wrap a concurrent sink as worker 0 and refuse a device sink).
struct PairSinks {
  const MatchSink* serial = nullptr;
  const ConcurrentSink* concurrent = nullptr;
  const DeviceSink* device = nullptr;
};

class Collector {
 public:
  Collector(Output mode, const MatchSink* sink, std::size_t chunk, std::vector<std::uint64_t>* per_s,
            std::vector<std::uint64_t>* per_u)
      : mode_(mode), sink_(sink), chunk_(chunk == 0 ? 1 : chunk), per_s_(per_s), per_u_(per_u) {}
  void emit(std::uint64_t s, std::uint64_t u) {
    ++count_;
    if (mode_ == Output::Pairs) {
      buffer_.push_back({s, u});
      if (buffer_.size() >= chunk_) flush();
    } else if (mode_ == Output::PerRegion) {
      ++(*per_s_)[s];
      ++(*per_u_)[u];
    }
  }
  void flush() {
    if (!buffer_.empty() && sink_ && *sink_) (*sink_)(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  std::uint64_t count() const { return count_; }
  Output mode() const { return mode_; }

 private:
  Output mode_;
  const MatchSink* sink_;
  std::size_t chunk_;
  std::vector<std::uint64_t>* per_s_;
  std::vector<std::uint64_t>* per_u_;
  std::vector<Match> buffer_;
  std::uint64_t count_ = 0;
};

// Serial matchers (reference backend).
template <class T>
void brute_force(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out);
template <class T>
void sort_based(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out);
template <class T>
void interval_tree(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out);
template <class T>
void grid(const RegionView<T>& s, const RegionView<T>& u, Rule rule, Collector& out);

// The multi-threaded matcher (cpu backend). Pairs go to `sink` in chunks (from one thread at a
// time); per-region counts into per_s/per_u (sized by the caller); returns the pair count.
template <class T>
std::uint64_t parallel(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int threads, Output mode,
                       std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                       std::vector<std::uint64_t>* per_u);

// GPU matchers (cuda backend; without CUDA they throw a UserError). `report` gets the device,
// the upload time and the matching time.
template <class T>
std::uint64_t gpu(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int device, int threads, Output mode,
                  std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                  std::vector<std::uint64_t>* per_u, MatchReport& report);
template <class T>
std::uint64_t bitmatrix(const RegionView<T>& s, const RegionView<T>& u, Rule rule, int device, int threads, Output mode,
                        std::size_t chunk, const PairSinks& sinks, std::vector<std::uint64_t>* per_s,
                        std::vector<std::uint64_t>* per_u, MatchReport& report);

}  // namespace simkit::ddm::detail
