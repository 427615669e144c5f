// The cuda backend's resident index for IncrementalMatcher (resident_device.hpp has the outline).
// One warp per changed region: for each non-empty level of the other side's grid, each row of
// cells its query range covers is one contiguous run of the sorted keys (key = level | x | y, y
// lowest), found by two binary searches and tested by the 32 lanes in step; then the side's
// changed list. Hits are written with one atomic per warp step. All work runs on one stream.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/cuda_check.cuh"
#include "ddm/candidates.hpp"
#include "ddm/model.hpp"
#include "ddm/resident_device.hpp"

namespace simkit::ddm::detail {

namespace {

using Clock = std::chrono::steady_clock;
using Key = unsigned long long;  // what CUB and atomicAdd take for 64-bit values
constexpr unsigned kFullMask = 0xffffffffu;
constexpr Key kAbsentKey = ~Key{0};
constexpr int kBlock = 256;

unsigned blocks_for(std::size_t n, int per_block = kBlock) {
  return static_cast<unsigned>(
      std::max<std::size_t>(1, (n + static_cast<std::size_t>(per_block) - 1) / static_cast<std::size_t>(per_block)));
}

// What a query kernel reads of one index of the side it matches against: the main index (built
// now and then, entries of slots changed since skipped) or the delta index (the changed slots,
// rebuilt with every batch).
template <class T>
struct IndexView {
  GridGeometry geometry;
  int dims = 1;
  const Key* keys = nullptr;             // sorted, `indexed` entries
  const std::uint32_t* slots = nullptr;  // slot of each entry
  const T* boxes = nullptr;              // bounds of each entry, in index order
  std::uint32_t indexed = 0;
  const std::uint32_t* level_count = nullptr;  // entries per level
  const std::uint8_t* skip = nullptr;          // main: per slot, changed since it was built; delta: null
};

struct QueryOutput {
  Key* pairs = nullptr;
  Key* counter = nullptr;  // pairs found (may exceed capacity: then the kernel runs again)
  Key* tested = nullptr;
  std::size_t capacity = 0;
};

__global__ void set_flags(const std::uint32_t* slots, std::uint32_t n, std::uint8_t* flags, std::uint8_t value) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[slots[i]] = value;
}

// Keys of slots which[0..n) (which = null: slots 0..n), absent ones last.
template <class T>
__global__ void make_keys(GridGeometry geometry, int dims, const T* boxes, const std::uint8_t* present,
                          const std::uint32_t* which, std::uint32_t n, Key* keys, std::uint32_t* values) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::uint32_t slot = which != nullptr ? which[i] : i;
  const T* b = boxes + static_cast<std::size_t>(slot) * 2 * dims;
  keys[i] = present[slot] ? geometry.key_of(b, b + dims) : kAbsentKey;
  values[i] = slot;
}

// Entries in index order: their bounds, and the count per level (a block histogram first).
template <class T>
__global__ void gather_entries(int dims, const Key* keys, const std::uint32_t* slots, std::uint32_t indexed,
                               const T* slot_boxes, T* boxes, std::uint32_t* level_count) {
  __shared__ std::uint32_t histogram[GridGeometry::kLevels];
  if (threadIdx.x < GridGeometry::kLevels) histogram[threadIdx.x] = 0;
  __syncthreads();
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < indexed) {
    const T* from = slot_boxes + static_cast<std::size_t>(slots[i]) * 2 * dims;
    T* to = boxes + static_cast<std::size_t>(i) * 2 * dims;
    for (int k = 0; k < 2 * dims; ++k) to[k] = from[k];
    atomicAdd(&histogram[GridGeometry::level_of_key(keys[i])], 1u);
  }
  __syncthreads();
  if (threadIdx.x < GridGeometry::kLevels && histogram[threadIdx.x] > 0)
    atomicAdd(&level_count[threadIdx.x], histogram[threadIdx.x]);
}

// Copies the bounds of slots[k] into out[k] (the old bounds of changed regions, before the scatter).
template <class T>
__global__ void gather_boxes(int dims, const std::uint32_t* slots, std::uint32_t n, const T* slot_boxes, T* out) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  for (int j = 0; j < 2 * dims; ++j)
    out[static_cast<std::size_t>(k) * 2 * dims + j] = slot_boxes[static_cast<std::size_t>(slots[k]) * 2 * dims + j];
}

// New bounds into the slots (present again), removed slots marked absent, newly changed slots
// appended to the changed list.
template <class T>
__global__ void scatter(int dims, const std::uint32_t* slots, std::uint32_t n, const T* new_boxes, T* slot_boxes,
                        std::uint8_t* present) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  present[slots[k]] = 1;
  for (int j = 0; j < 2 * dims; ++j)
    slot_boxes[static_cast<std::size_t>(slots[k]) * 2 * dims + j] =
        new_boxes[static_cast<std::size_t>(k) * 2 * dims + j];
}

__global__ void mark_dirty(const std::uint32_t* slots, std::uint32_t n, std::uint32_t offset, std::uint8_t* dirty,
                           std::uint32_t* dirty_list) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  dirty[slots[k]] = 1;
  dirty_list[offset + k] = slots[k];
}

__device__ std::uint32_t lower_bound(const Key* keys, std::uint32_t n, Key key) {
  return static_cast<std::uint32_t>(lower_bound_of(keys, 0, n, key));
}

// Writes the warp's hits of this step (one atomic per step); lanes without a hit pass hit = false.
__device__ void emit(bool hit, Key key, const QueryOutput& out) {
  const unsigned mask = __ballot_sync(kFullMask, hit);
  if (mask == 0) return;
  const unsigned lane = threadIdx.x % 32;
  Key base = 0;
  if (lane == 0) base = atomicAdd(out.counter, static_cast<Key>(__popc(mask)));
  base = __shfl_sync(kFullMask, base, 0);
  if (hit) {
    const Key at = base + static_cast<Key>(__popc(mask & ((1u << lane) - 1)));
    if (at < out.capacity) out.pairs[at] = key;
  }
}

template <class T>
__device__ bool box_intersects(Rule rule, int dims, const T* qlo, const T* qhi, const T* b) {
  for (int d = 0; d < dims; ++d)
    if (!overlaps(rule, qlo[d], qhi[d], b[d], b[dims + d])) return false;
  return true;
}

// One warp per query q: the regions of the two indexes that intersect query box q (bounds 2 x dims
// values at query_boxes + q 2 dims), leaving out partners whose `partner_skip` flag is set (when
// not null).
template <class T>
__global__ void query(Rule rule, IndexView<T> main, IndexView<T> delta, const T* query_boxes,
                      const std::uint32_t* groups, std::uint32_t queries, const std::uint8_t* partner_skip,
                      QueryOutput out) {
  const std::uint32_t q = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (q >= queries) return;  // whole warps
  const unsigned lane = threadIdx.x % 32;
  const int dims = main.dims;
  T qlo[kMaxDims], qhi[kMaxDims];
  for (int d = 0; d < dims; ++d) {
    qlo[d] = query_boxes[static_cast<std::size_t>(q) * 2 * dims + d];
    qhi[d] = query_boxes[static_cast<std::size_t>(q) * 2 * dims + dims + d];
  }
  const Key group = static_cast<Key>(groups[q]) << 32;
  Key tested = 0;
  const GridGeometry& g = main.geometry;
  std::uint64_t first[2] = {0, 0}, last[2] = {0, 0};
  for (int d = 0; d < g.grid_dims; ++d) first[d] = g.cell(qlo[d], d), last[d] = g.cell(qhi[d], d);
  for (int v = 0; v < 2; ++v) {
    const IndexView<T>& index = v == 0 ? main : delta;
    if (index.indexed == 0) continue;
    const auto test_run = [&](std::uint32_t begin, std::uint32_t end) {
      for (std::uint32_t i0 = begin; i0 < end; i0 += 32) {
        const std::uint32_t i = i0 + lane;
        bool hit = false;
        std::uint32_t slot = 0;
        if (i < end) {
          slot = index.slots[i];
          if (index.skip == nullptr || !index.skip[slot]) {
            ++tested;
            hit = box_intersects(rule, dims, qlo, qhi, index.boxes + static_cast<std::size_t>(i) * 2 * dims) &&
                  !(partner_skip != nullptr && partner_skip[slot]);
          }
        }
        emit(hit, group | slot, out);
      }
    };
    double visits = 0;
    for (int l = 0; l < GridGeometry::kLevels; ++l) {
      if (index.level_count[l] == 0) continue;
      double cells = 1;
      for (int d = 0; d < g.grid_dims; ++d)
        cells *= static_cast<double>((last[d] >> l) - GridGeometry::first_cell(first[d], l) + 1);
      visits += cells;
    }
    if (visits > fmax(64.0, static_cast<double>(index.indexed) / 8)) {
      test_run(0, index.indexed);  // a query far larger than the cells: every entry
      continue;
    }
    for (int l = 0; l < GridGeometry::kLevels; ++l) {
      if (index.level_count[l] == 0) continue;
      const std::uint64_t y0 = g.grid_dims > 1 ? GridGeometry::first_cell(first[1], l) : 0;
      const std::uint64_t y1 = g.grid_dims > 1 ? last[1] >> l : 0;
      // The rows' bounds found by 2 x 16 lanes at once (one binary search each: the searches'
      // latency, not their work, is what a query waits for), then the rows tested in turn.
      const std::uint64_t x0 = GridGeometry::first_cell(first[0], l), x1 = last[0] >> l;
      for (std::uint64_t xs = x0; xs <= x1; xs += 16) {
        const std::uint64_t x = xs + lane / 2;
        std::uint32_t bound = 0;
        if (x <= x1) {
          bound = lane % 2 == 0 ? lower_bound(index.keys, index.indexed, GridGeometry::make_key(l, x, y0))
                                : lower_bound(index.keys, index.indexed, GridGeometry::make_key(l, x, y1) + 1);
        }
        const std::uint64_t rows = x1 - xs + 1 < 16 ? x1 - xs + 1 : 16;
        for (unsigned row = 0; row < rows; ++row) {
          const std::uint32_t begin = __shfl_sync(kFullMask, bound, 2 * row);
          const std::uint32_t end = __shfl_sync(kFullMask, bound, 2 * row + 1);
          test_run(begin, end);
        }
      }
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) tested += __shfl_down_sync(kFullMask, tested, offset);
  if (lane == 0) atomicAdd(out.tested, tested);
}

// flags[i] = 1 when a[i] is not in sorted b.
__global__ void missing_from(const Key* a, std::uint32_t na, const Key* b, std::uint32_t nb, std::uint8_t* flags) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= na) return;
  const std::uint32_t at = lower_bound(b, nb, a[i]);
  flags[i] = at < nb && b[at] == a[i] ? 0 : 1;
}

// Grows a device buffer to at least n (contents discarded).
template <class U>
void reserve(cuda::DeviceBuffer<U>& buffer, std::size_t n) {
  if (buffer.size() < n) buffer.resize(std::max(n, buffer.size() + buffer.size() / 2));
}

// Copies `host` into `buffer`, grown as needed (no reallocation per batch: cudaFree synchronises).
template <class U>
void upload_into(cuda::DeviceBuffer<U>& buffer, const std::vector<U>& host, cudaStream_t stream) {
  reserve(buffer, std::max<std::size_t>(1, host.size()));
  if (!host.empty())
    SIMKIT_CUDA_CHECK(
        cudaMemcpyAsync(buffer.data(), host.data(), host.size() * sizeof(U), cudaMemcpyHostToDevice, stream));
}

}  // namespace

template <class T>
struct DeviceResident<T>::State {
  // A sorted grid index over some of a side's slots.
  struct Index {
    cuda::DeviceBuffer<Key> keys, keys_sorted;
    cuda::DeviceBuffer<std::uint32_t> values, slots;
    cuda::DeviceBuffer<T> boxes;
    cuda::DeviceBuffer<std::uint32_t> level_count;
    std::uint32_t indexed = 0;  // entries (present slots)
  };
  struct Side {
    GridGeometry geometry;
    std::size_t capacity = 0;
    cuda::DeviceBuffer<T> slot_boxes;
    cuda::DeviceBuffer<std::uint8_t> present, dirty, touched;
    std::vector<std::uint8_t> present_host, dirty_host;  // mirrors
    cuda::DeviceBuffer<std::uint32_t> dirty_list;
    std::vector<std::uint32_t> dirty_slots;  // mirror of dirty_list
    std::uint32_t live = 0;
    Index main, delta;  // every present slot as of the last build; the slots changed since
  };
  int device = 0;
  int dims = 1;
  Side s, u;
  cuda::Stream stream;
  cuda::DeviceBuffer<char> temp;
  cuda::DeviceBuffer<std::uint32_t> upload_u32;
  cuda::DeviceBuffer<T> upload_t;
  cuda::DeviceBuffer<T> old_boxes;
  cuda::DeviceBuffer<Key> pairs[2], sorted[2], selected;
  cuda::DeviceBuffer<Key> counters;  // pairs found, tested by each side's queries, kept lost and gained
  cuda::DeviceBuffer<std::uint8_t> flags;
  cuda::PinnedBuffer<Key> staging;
  std::size_t capacity_hint = 1 << 16;

  void sort_keys(const Key* in, Key* out, std::size_t n) {
    std::size_t bytes = 0;
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, n, 0, 64, stream));
    reserve(temp, bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp.data(), bytes, in, out, n, 0, 64, stream));
  }

  // Indexes slots which[0..n) (null: all n slots), `live` of them present.
  void build_index(const Side& side, Index& index, const std::uint32_t* which, std::uint32_t n, std::uint32_t live) {
    index.indexed = 0;
    reserve(index.level_count, GridGeometry::kLevels);
    index.level_count.fill_zero(stream);
    if (n == 0) return;
    for (auto* buffer : {&index.keys, &index.keys_sorted}) reserve(*buffer, n);
    for (auto* buffer : {&index.values, &index.slots}) reserve(*buffer, n);
    make_keys<T><<<blocks_for(n), kBlock, 0, stream>>>(side.geometry, dims, side.slot_boxes.data(), side.present.data(),
                                                       which, n, index.keys.data(), index.values.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, index.keys.data(), index.keys_sorted.data(),
                                                      index.values.data(), index.slots.data(), n, 0, 64, stream));
    reserve(temp, bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, index.keys.data(), index.keys_sorted.data(),
                                                      index.values.data(), index.slots.data(), n, 0, 64, stream));
    index.indexed = live;
    reserve(index.boxes, std::max<std::size_t>(1, static_cast<std::size_t>(live) * 2 * dims));
    if (live == 0) return;
    gather_entries<T><<<blocks_for(live), kBlock, 0, stream>>>(dims, index.keys_sorted.data(), index.slots.data(), live,
                                                               side.slot_boxes.data(), index.boxes.data(),
                                                               index.level_count.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
  }

  // The main index over every slot; the changed lists emptied.
  void build_main(Side& side) {
    build_index(side, side.main, nullptr, static_cast<std::uint32_t>(side.capacity), side.live);
    side.dirty.fill_zero(stream);
    std::fill(side.dirty_host.begin(), side.dirty_host.end(), 0);
    side.dirty_slots.clear();
    build_index(side, side.delta, nullptr, 0, 0);
  }

  // The delta index over the slots changed since the main one was built.
  void build_delta(Side& side) {
    std::uint32_t live = 0;
    for (const std::uint32_t slot : side.dirty_slots) live += side.present_host[slot];
    build_index(side, side.delta, side.dirty_list.data(), static_cast<std::uint32_t>(side.dirty_slots.size()), live);
  }

  IndexView<T> view(const Side& side, const Index& index, bool main) const {
    IndexView<T> v;
    v.geometry = side.geometry;
    v.dims = dims;
    v.keys = index.keys_sorted.data();
    v.slots = index.slots.data();
    v.boxes = index.boxes.data();
    v.indexed = index.indexed;
    v.level_count = index.level_count.data();
    v.skip = main ? side.dirty.data() : nullptr;
    return v;
  }

  // One phase's queries (old bounds, or new): the changed subscriptions against the updates, then
  // the changed updates against the subscriptions (leaving out changed subscriptions), appended
  // to pairs[phase]. Runs again with room for all when the buffer was short. Returns the count.
  struct Queries {
    const T* boxes = nullptr;
    const std::uint32_t* groups = nullptr;
    std::uint32_t count = 0;
  };
  std::size_t run_phase(Rule rule, int phase, const Queries (&q)[2], std::size_t (&tested)[2]) {
    if (q[0].count == 0 && q[1].count == 0) return 0;
    reserve(pairs[phase], capacity_hint);
    for (int attempt = 0; attempt < 2; ++attempt) {
      SIMKIT_CUDA_CHECK(cudaMemsetAsync(counters.data(), 0, 3 * sizeof(Key), stream));
      for (int w = 0; w < 2; ++w) {
        if (q[w].count == 0) continue;
        QueryOutput out{pairs[phase].data(), counters.data(), counters.data() + 1 + w, pairs[phase].size()};
        const Side& other = w == 0 ? u : s;
        query<T><<<blocks_for(static_cast<std::size_t>(q[w].count) * 32), kBlock, 0, stream>>>(
            rule, view(other, other.main, true), view(other, other.delta, false), q[w].boxes, q[w].groups, q[w].count,
            w == 0 ? nullptr : s.touched.data(), out);
        SIMKIT_CUDA_CHECK_LAUNCH();
      }
      Key found[3] = {0, 0, 0};
      SIMKIT_CUDA_CHECK(cudaMemcpyAsync(found, counters.data(), sizeof found, cudaMemcpyDeviceToHost, stream));
      stream.synchronize();
      if (found[0] <= pairs[phase].size()) {
        tested[0] += found[1];
        tested[1] += found[2];
        capacity_hint = std::max<std::size_t>(capacity_hint, found[0] + found[0] / 4);
        return found[0];
      }
      pairs[phase].resize(found[0] + found[0] / 4);
    }
    throw InternalError("ddm incremental (cuda): the pair count changed between two identical queries");
  }
};

template <class T>
DeviceResident<T>::DeviceResident(int device, const GridGeometry& geometry_s, const GridGeometry& geometry_u,
                                  const std::vector<std::uint8_t>& present_s, const std::vector<T>& boxes_s,
                                  const std::vector<std::uint8_t>& present_u, const std::vector<T>& boxes_u) {
  cuda::DeviceGuard guard(device);
  state_ = std::make_unique<State>();
  State& st = *state_;
  st.device = device;
  st.dims = geometry_s.dims;
  const std::size_t stride = 2 * static_cast<std::size_t>(st.dims);
  for (auto [side, geometry, present, boxes] :
       {std::tuple{&st.s, &geometry_s, &present_s, &boxes_s}, std::tuple{&st.u, &geometry_u, &present_u, &boxes_u}}) {
    // Room for growth, so that batches that add regions rarely need a new object.
    side->geometry = *geometry;
    side->capacity = present->size() + present->size() / 4 + 1024;
    std::vector<std::uint8_t> p(side->capacity, 0);
    std::copy(present->begin(), present->end(), p.begin());
    std::vector<T> b(side->capacity * stride, T{});
    std::copy(boxes->begin(), boxes->end(), b.begin());
    side->slot_boxes.upload(b, st.stream);
    side->present.upload(p, st.stream);
    side->dirty.resize(side->capacity);
    side->touched.resize(side->capacity);
    side->touched.fill_zero(st.stream);
    side->dirty_list.resize(side->capacity);
    side->dirty_host.assign(side->capacity, 0);
    side->present_host = std::move(p);
    side->live = static_cast<std::uint32_t>(std::count(present->begin(), present->end(), std::uint8_t{1}));
    st.build_main(*side);
  }
  st.counters.resize(5);  // pairs found, tested by each side's queries, kept lost and gained
  st.stream.synchronize();
}

template <class T>
DeviceResident<T>::~DeviceResident() = default;

template <class T>
std::size_t DeviceResident<T>::capacity_s() const {
  return state_->s.capacity;
}
template <class T>
std::size_t DeviceResident<T>::capacity_u() const {
  return state_->u.capacity;
}

template <class T>
void DeviceResident<T>::apply(Rule rule, const DeviceBatchSide<T>& bs, const DeviceBatchSide<T>& bu,
                              std::vector<std::uint64_t>& gained, std::vector<std::uint64_t>& lost,
                              DeviceApplyReport& report) {
  const auto start = Clock::now();
  State& st = *state_;
  cuda::DeviceGuard guard(st.device);
  const int dims = st.dims;
  const std::size_t stride = 2 * static_cast<std::size_t>(dims);
  using Side = typename State::Side;
  const DeviceBatchSide<T>* batch[2] = {&bs, &bu};
  Side* sides[2] = {&st.s, &st.u};

  // Rebuild a main index whose changed list would outgrow a 16th of its entries (the delta index,
  // rebuilt with every batch, then costs as much as a 16th of a rebuild of the main one).
  bool rebuild[2] = {false, false};
  for (int w = 0; w < 2; ++w) {
    std::size_t fresh = 0;
    for (const std::uint32_t slot : batch[w]->slot) fresh += sides[w]->dirty_host[slot] ? 0 : 1;
    rebuild[w] = sides[w]->dirty_slots.size() + fresh > std::max<std::size_t>(4096, sides[w]->main.indexed / 16);
  }
  for (int w = 0; w < 2; ++w)
    if (rebuild[w]) st.build_main(*sides[w]);  // the slots as they were before this batch
  report.rebuilt = rebuild[0] || rebuild[1];

  // The batch's lists, packed into one upload of 32-bit values and one of bounds. Per side:
  // touched slots, old-query slots and groups, new-query slots and groups, removed slots, slots
  // changed for the first time since their index was built.
  enum { kTouched, kOldSlots, kOldGroups, kNewSlots, kNewGroups, kRemoved, kFresh, kLists };
  std::vector<std::uint32_t> lists[2][kLists];
  std::vector<T> new_boxes;
  std::size_t new_at[2] = {0, 0};
  std::uint32_t group = 0;
  for (int w = 0; w < 2; ++w) {
    const DeviceBatchSide<T>& b = *batch[w];
    auto& l = lists[w];
    new_at[w] = new_boxes.size() / stride;
    for (std::size_t k = 0; k < b.slot.size(); ++k, ++group) {
      const std::uint32_t slot = b.slot[k];
      l[kTouched].push_back(slot);
      if (b.was_present[k]) l[kOldSlots].push_back(slot), l[kOldGroups].push_back(group);
      if (b.present[k]) {
        l[kNewSlots].push_back(slot), l[kNewGroups].push_back(group);
        new_boxes.insert(new_boxes.end(), b.box.begin() + static_cast<std::ptrdiff_t>(k * stride),
                         b.box.begin() + static_cast<std::ptrdiff_t>((k + 1) * stride));
      }
      if (b.was_present[k] && !b.present[k]) l[kRemoved].push_back(slot);
      if (!sides[w]->dirty_host[slot]) l[kFresh].push_back(slot);
    }
  }
  std::vector<std::uint32_t> packed;
  std::size_t at[2][kLists];
  for (int w = 0; w < 2; ++w)
    for (int p = 0; p < kLists; ++p) {
      at[w][p] = packed.size();
      packed.insert(packed.end(), lists[w][p].begin(), lists[w][p].end());
    }
  upload_into(st.upload_u32, packed, st.stream);
  upload_into(st.upload_t, new_boxes, st.stream);
  const std::uint32_t* up = st.upload_u32.data();
  const auto size = [&](int w, int p) { return static_cast<std::uint32_t>(lists[w][p].size()); };

  // The touched subscriptions, flagged: the updates' queries leave them out.
  if (size(0, kTouched) > 0) {
    set_flags<<<blocks_for(size(0, kTouched)), kBlock, 0, st.stream>>>(up + at[0][kTouched], size(0, kTouched),
                                                                       st.s.touched.data(), 1);
    SIMKIT_CUDA_CHECK_LAUNCH();
  }

  // Old bounds against the sides as they were.
  std::size_t tested[2] = {0, 0};
  reserve(st.old_boxes, std::max<std::size_t>(1, (size(0, kOldSlots) + size(1, kOldSlots)) * stride));
  typename State::Queries old_q[2], new_q[2];
  std::size_t old_at = 0;
  for (int w = 0; w < 2; ++w) {
    const std::uint32_t n = size(w, kOldSlots);
    old_q[w] = {st.old_boxes.data() + old_at * stride, up + at[w][kOldGroups], n};
    if (n == 0) continue;
    gather_boxes<T><<<blocks_for(n), kBlock, 0, st.stream>>>(
        dims, up + at[w][kOldSlots], n, sides[w]->slot_boxes.data(), st.old_boxes.data() + old_at * stride);
    SIMKIT_CUDA_CHECK_LAUNCH();
    old_at += n;
  }
  const std::size_t old_total = st.run_phase(rule, 0, old_q, tested);

  // New bounds into the slots, removed slots absent, first changes onto the changed lists.
  for (int w = 0; w < 2; ++w) {
    Side& side = *sides[w];
    if (const std::uint32_t n = size(w, kNewSlots); n > 0) {
      scatter<T><<<blocks_for(n), kBlock, 0, st.stream>>>(dims, up + at[w][kNewSlots], n,
                                                          st.upload_t.data() + new_at[w] * stride,
                                                          side.slot_boxes.data(), side.present.data());
      SIMKIT_CUDA_CHECK_LAUNCH();
    }
    if (const std::uint32_t n = size(w, kRemoved); n > 0) {
      set_flags<<<blocks_for(n), kBlock, 0, st.stream>>>(up + at[w][kRemoved], n, side.present.data(), 0);
      SIMKIT_CUDA_CHECK_LAUNCH();
    }
    if (const std::uint32_t n = size(w, kFresh); n > 0) {
      mark_dirty<<<blocks_for(n), kBlock, 0, st.stream>>>(up + at[w][kFresh], n,
                                                          static_cast<std::uint32_t>(side.dirty_slots.size()),
                                                          side.dirty.data(), side.dirty_list.data());
      SIMKIT_CUDA_CHECK_LAUNCH();
      for (const std::uint32_t slot : lists[w][kFresh]) side.dirty_host[slot] = 1, side.dirty_slots.push_back(slot);
    }
    for (const std::uint32_t slot : lists[w][kRemoved]) side.present_host[slot] = 0;
    for (const std::uint32_t slot : lists[w][kNewSlots]) side.present_host[slot] = 1;
    side.live += size(w, kNewSlots);
    side.live -= size(w, kOldSlots);
    if (size(w, kTouched) > 0) st.build_delta(side);
  }

  // New bounds against the sides as they are now.
  for (int w = 0; w < 2; ++w)
    new_q[w] = {st.upload_t.data() + new_at[w] * stride, up + at[w][kNewGroups], size(w, kNewSlots)};
  const std::size_t new_total = st.run_phase(rule, 1, new_q, tested);
  if (size(0, kTouched) > 0) {
    set_flags<<<blocks_for(size(0, kTouched)), kBlock, 0, st.stream>>>(up + at[0][kTouched], size(0, kTouched),
                                                                       st.s.touched.data(), 0);
    SIMKIT_CUDA_CHECK_LAUNCH();
  }

  // Both lists sorted; the keys of each missing from the other: lost (old) and gained (new).
  const std::size_t totals[2] = {old_total, new_total};
  for (int phase = 0; phase < 2; ++phase) {
    reserve(st.sorted[phase], std::max<std::size_t>(1, totals[phase]));
    if (totals[phase] > 0) st.sort_keys(st.pairs[phase].data(), st.sorted[phase].data(), totals[phase]);
  }
  // Lost keys at the start of `selected`, gained ones after them; one readback of both counts and
  // one of both lists.
  std::vector<std::uint64_t>* outs[2] = {&lost, &gained};
  const std::size_t at_out[2] = {0, old_total};
  reserve(st.flags, std::max<std::size_t>(1, std::max(old_total, new_total)));
  reserve(st.selected, std::max<std::size_t>(1, old_total + new_total));
  SIMKIT_CUDA_CHECK(cudaMemsetAsync(st.counters.data() + 3, 0, 2 * sizeof(Key), st.stream));
  for (int phase = 0; phase < 2; ++phase) {
    const std::size_t n = totals[phase], m = totals[1 - phase];
    if (n == 0) continue;
    missing_from<<<blocks_for(n), kBlock, 0, st.stream>>>(st.sorted[phase].data(), static_cast<std::uint32_t>(n),
                                                          st.sorted[1 - phase].data(), static_cast<std::uint32_t>(m),
                                                          st.flags.data());
    SIMKIT_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    Key* count = st.counters.data() + 3 + phase;
    Key* into = st.selected.data() + at_out[phase];
    SIMKIT_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, st.sorted[phase].data(), st.flags.data(), into, count,
                                                 n, st.stream));
    reserve(st.temp, bytes);
    SIMKIT_CUDA_CHECK(cub::DeviceSelect::Flagged(st.temp.data(), bytes, st.sorted[phase].data(), st.flags.data(), into,
                                                 count, n, st.stream));
  }
  Key kept[2] = {0, 0};
  SIMKIT_CUDA_CHECK(cudaMemcpyAsync(kept, st.counters.data() + 3, sizeof kept, cudaMemcpyDeviceToHost, st.stream));
  st.stream.synchronize();
  const auto all = static_cast<std::size_t>(kept[0] + kept[1]);
  if (all > 0) {
    if (st.staging.size() < all) st.staging.resize(all + all / 4);
    for (int phase = 0; phase < 2; ++phase) {
      if (kept[phase] == 0) continue;
      SIMKIT_CUDA_CHECK(cudaMemcpyAsync(st.staging.data() + (phase == 0 ? 0 : kept[0]),
                                        st.selected.data() + at_out[phase], kept[phase] * sizeof(Key),
                                        cudaMemcpyDeviceToHost, st.stream));
    }
    st.stream.synchronize();
  }
  for (int phase = 0; phase < 2; ++phase) {
    outs[phase]->resize(static_cast<std::size_t>(kept[phase]));
    if (kept[phase] > 0)
      std::memcpy(outs[phase]->data(), st.staging.data() + (phase == 0 ? 0 : kept[0]),
                  static_cast<std::size_t>(kept[phase]) * sizeof(Key));
  }
  report.tested_u = tested[0];
  report.tested_s = tested[1];
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
}

template class DeviceResident<std::uint32_t>;
template class DeviceResident<std::uint64_t>;
template class DeviceResident<double>;

}  // namespace simkit::ddm::detail
