// The hybrid model's cuda backend: an ensemble of realisations, one warp each, all in one launch.
//
// With D_c = 0, c and f at a node are closed forms of how long it has been occupied
// (hybrid_model.hpp), so a realisation's whole state is its tips and its occupied nodes: a small
// open-addressing hash table (node -> step it was occupied in), a tip table and a segment log.
// The initial fields are read from one shared copy. Per step, the warp's lanes draw the moves of
// the active tips in parallel (the costly part: 7 nodes of c and f per tip); lane 0 then applies
// the moves and the branching serially in ascending tip id, exactly as the reference does, so a
// realisation is bitwise the reference's (same double operations, --fmad=false, same Philox
// draws). A realisation that outgrows its capacities is flagged and run again with more.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "angio/hybrid_cuda.hpp"
#include "angio/hybrid_model.hpp"
#include "core/cuda_check.cuh"
#include "core/error.hpp"
#include "core/rng.hpp"

namespace simkit::angio::detail::hybrid_cuda {

namespace {

enum Draw : std::uint32_t { kDrawMove = 0, kDrawBranch = 1, kDrawBranchDirection = 2 };  // = HybridPurpose
enum Kind : unsigned char { kSprout = 0, kMove = 1, kAnastomosis = 2, kBranch = 3 };     // = SegmentKind
constexpr unsigned kFull = 0xffffffffu;

struct Params {
  ModelParams model;
  int nx, ny, nz, dims;
  double h, dt, a, psi, reach_front;
  long long last_step;
  long long max_tips;
  int rules;
  double rule_c[kMaxRules], rule_p[kMaxRules];
  int sprouts;
  const long long* sprout_node;
  const long long* sprout_previous;
  const double* c0;
  const double* f0;
  unsigned long long seed;
  int first;         // realisation index of warp 0 (seed + first + warp)
  const int* which;  // realisations of this launch (indices), or null: first + warp
  // capacities per realisation
  long long log_capacity;
  int tip_capacity;
  int hash_bits;
};

struct Summary {
  long long steps, moves, clipped, log_size, tips;
  int overflow, pad;
};

struct Work {
  long long* hash_key;  // node + 1; 0: empty
  int* hash_since;      // the step the node was occupied in, plus 1
  long long* tip_node;
  long long* tip_previous;
  long long* tip_age;
  int* tip_generation;
  unsigned char* tip_active;
  int* active;  // active tip ids, ascending
  signed char* move;
  long long* log_from;
  long long* log_to;
  int* log_birth;
  int* log_generation;
  unsigned char* log_kind;
  Summary* summary;
};

__device__ inline unsigned long long mix(unsigned long long x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// One realisation's view of the work arrays.
struct Realm {
  const Params* p;
  long long* key;
  int* since_of;
  long long hash_mask;

  __device__ long long since(long long node) const {
    if (node % p->nx == 0) return 1;  // the parent vessel (i = 0), occupied from the start
    long long pos = static_cast<long long>(mix(static_cast<unsigned long long>(node)) & hash_mask);
    for (;;) {
      const long long k = key[pos];
      if (k == node + 1) return since_of[pos];
      if (k == 0) return 0;
      pos = (pos + 1) & hash_mask;
    }
  }
  __device__ bool occupied(long long node) const { return since(node) != 0; }
  // Lane 0 only; the node is not in the table.
  __device__ void occupy(long long node, long long step) const {
    long long pos = static_cast<long long>(mix(static_cast<unsigned long long>(node)) & hash_mask);
    while (key[pos] != 0) pos = (pos + 1) & hash_mask;
    since_of[pos] = static_cast<int>(step + 1);
    key[pos] = node + 1;
  }
  __device__ long long updates(long long node, long long step) const {
    const long long s = since(node);
    return s == 0 ? 0 : step + 1 - s;
  }
  __device__ double c(long long node, long long step) const {
    return occupied_c(p->c0[node], p->dt, p->model.taf_uptake, updates(node, step));
  }
  __device__ double f(long long node, long long step) const {
    return occupied_f(p->f0[node], p->dt, p->model.fn_production, p->model.fn_uptake, updates(node, step));
  }
  __device__ void coordinates(long long node, int& i, int& j, int& l) const {
    const long long plane = static_cast<long long>(p->nx) * p->ny;
    i = static_cast<int>(node % p->nx);
    j = static_cast<int>((node % plane) / p->nx);
    l = static_cast<int>(node / plane);
  }
  __device__ long long index(int i, int j, int l) const { return (static_cast<long long>(l) * p->ny + j) * p->nx + i; }
  __device__ long long neighbour(long long node, int d) const {
    int i, j, l, di, dj, dl;
    coordinates(node, i, j, l);
    move_offset(d, di, dj, dl);
    return index(i + di, j + dj, l + dl);
  }
  __device__ void weights(long long node, long long step, double w[7], bool inside[7]) const {
    int i, j, l;
    coordinates(node, i, j, l);
    const int at[7][3] = {{i, j, l},
                          {upper_neighbour(i, p->nx), j, l},
                          {lower_neighbour(i, p->nx), j, l},
                          {i, upper_neighbour(j, p->ny), l},
                          {i, lower_neighbour(j, p->ny), l},
                          {i, j, upper_neighbour(l, p->nz)},
                          {i, j, lower_neighbour(l, p->nz)}};
    Stencil<double> s;
    for (int d = 0; d < 7; ++d) {
      const long long id = index(at[d][0], at[d][1], at[d][2]);
      s.c[d] = c(id, step);
      s.f[d] = f(id, step);
    }
    if (p->dims == 3) {
      movement_coefficients_fixed<3>(p->model, p->a, s, w);
    } else {
      movement_coefficients_fixed<2>(p->model, p->a, s, w);
    }
    for (int d = 0; d < 7; ++d) {
      int di, dj, dl;
      move_offset(d, di, dj, dl);
      inside[d] = i + di >= 0 && i + di < p->nx && j + dj >= 0 && j + dj < p->ny && l + dl >= 0 && l + dl < p->nz;
    }
  }
};

__device__ double branch_probability(const Params& p, double c) {
  for (int r = 0; r < p.rules; ++r)
    if (c <= p.rule_c[r]) return p.rule_p[r];
  return p.rules > 0 ? p.rule_p[p.rules - 1] : 0.0;
}

__global__ void __launch_bounds__(128) ensemble_kernel(Params p, Work w, int count) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (warp >= count) return;
  const int realisation = p.which ? p.which[warp] : p.first + warp;
  const unsigned long long seed = p.seed + static_cast<unsigned long long>(realisation);
  const long long hash_size = 1LL << p.hash_bits;
  Realm realm{&p, w.hash_key + warp * hash_size, w.hash_since + warp * hash_size, hash_size - 1};
  const long long tip_base = static_cast<long long>(warp) * p.tip_capacity;
  long long* tip_node = w.tip_node + tip_base;
  long long* tip_previous = w.tip_previous + tip_base;
  long long* tip_age = w.tip_age + tip_base;
  int* tip_generation = w.tip_generation + tip_base;
  unsigned char* tip_active = w.tip_active + tip_base;
  int* active = w.active + tip_base;
  signed char* move = w.move + tip_base;
  const long long log_base = static_cast<long long>(warp) * p.log_capacity;
  long long* log_from = w.log_from + log_base;
  long long* log_to = w.log_to + log_base;
  int* log_birth = w.log_birth + log_base;
  int* log_generation = w.log_generation + log_base;
  unsigned char* log_kind = w.log_kind + log_base;
  const long long hash_limit = hash_size / 2;  // keep the table at most half full

  // Lane 0's serial state, broadcast to the warp after each phase.
  long long tips = 0, log_size = 0, hashed = 0;
  int count_active = 0, overflow = 0;
  double front = p.h;
  if (lane == 0) {
    if (p.sprouts > p.tip_capacity || p.sprouts > p.log_capacity || p.sprouts > hash_limit) {
      overflow = 1;
    } else {
      for (int t = 0; t < p.sprouts; ++t) {
        tip_node[t] = p.sprout_node[t];
        tip_previous[t] = p.sprout_previous[t];
        tip_age[t] = 0;
        tip_generation[t] = 0;
        tip_active[t] = 1;
        active[t] = t;
        realm.occupy(p.sprout_node[t], 0);
        log_from[t] = p.sprout_previous[t];
        log_to[t] = p.sprout_node[t];
        log_birth[t] = 0;
        log_generation[t] = 0;
        log_kind[t] = kSprout;
      }
      tips = log_size = hashed = count_active = p.sprouts;
    }
  }
  count_active = __shfl_sync(kFull, count_active, 0);
  overflow = __shfl_sync(kFull, overflow, 0);
  __syncwarp();
  long long moves = 0, clipped_draws = 0, step = 0;
  while (step < p.last_step && front < p.reach_front && count_active > 0 && !overflow) {
    // (1) every active tip draws its move from the state at the start of the step.
    for (int q = lane; q < count_active; q += 32) {
      const int id = active[q];
      const long long node = tip_node[id];
      double wt[7];
      bool inside[7];
      realm.weights(node, step, wt, inside);
      const long long previous = tip_previous[id];
      for (int d = 1; d < 7; ++d)
        if (inside[d] && realm.neighbour(node, d) == previous) inside[d] = false;
      RngStream rng(seed, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), kDrawMove});
      bool clipped = false;
      move[q] = static_cast<signed char>(choose_move(wt, inside, rng.uniform(), clipped));
      ++moves;
      clipped_draws += clipped ? 1 : 0;
    }
    __syncwarp();
    if (lane == 0) {
      // (2) moves in ascending tip id; onto an occupied node: anastomosis.
      long long alive = count_active;
      for (int q = 0; q < count_active && !overflow; ++q) {
        const int id = active[q];
        ++tip_age[id];
        const int d = move[q];
        if (d == 0) continue;
        const long long node = tip_node[id];
        const long long target = realm.neighbour(node, d);
        if (log_size >= p.log_capacity || hashed >= hash_limit) {
          overflow = 1;
          break;
        }
        log_from[log_size] = node;
        log_to[log_size] = target;
        log_birth[log_size] = static_cast<int>(step + 1);
        log_generation[log_size] = tip_generation[id];
        if (realm.occupied(target)) {
          log_kind[log_size++] = kAnastomosis;
          tip_active[id] = 0;
          --alive;
          continue;
        }
        log_kind[log_size++] = kMove;
        realm.occupy(target, step);
        ++hashed;
        tip_previous[id] = node;
        tip_node[id] = target;
        front = fmax(front, static_cast<int>(target % p.nx) * p.h);
      }
      // (3) branching in ascending tip id, from the state at the start of the next step.
      const int existing = count_active;
      for (int q = 0; q < existing && !overflow; ++q) {
        const int id = active[q];
        if (!tip_active[id] || static_cast<double>(tip_age[id]) * p.dt <= p.psi) continue;
        if (alive >= p.max_tips) break;
        const long long node = tip_node[id];
        const double probability = branch_probability(p, realm.c(node, step + 1));
        RngStream decide(seed, StreamId{static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(step), kDrawBranch});
        if (!(decide.uniform() < probability)) continue;
        double wt[7];
        bool free_inside[7];
        realm.weights(node, step + 1, wt, free_inside);
        free_inside[0] = false;
        for (int d = 1; d < 7; ++d)
          if (free_inside[d] && realm.occupied(realm.neighbour(node, d))) free_inside[d] = false;
        bool any = false;
        for (int d = 1; d < 7; ++d) any = any || (free_inside[d] && wt[d] > 0);
        if (!any) continue;
        if (tips >= p.tip_capacity || log_size >= p.log_capacity || hashed >= hash_limit) {
          overflow = 1;
          break;
        }
        const long long child = tips;
        RngStream where(
            seed, StreamId{static_cast<std::uint32_t>(child), static_cast<std::uint32_t>(step), kDrawBranchDirection});
        bool clipped = false;
        const int d = choose_move(wt, free_inside, where.uniform(), clipped);
        const long long target = realm.neighbour(node, d);
        tip_node[child] = target;
        tip_previous[child] = node;
        tip_age[child] = 0;
        tip_generation[child] = tip_generation[id] + 1;
        tip_active[child] = 1;
        realm.occupy(target, step);
        ++hashed;
        log_from[log_size] = node;
        log_to[log_size] = target;
        log_birth[log_size] = static_cast<int>(step + 1);
        log_generation[log_size] = tip_generation[child];
        log_kind[log_size++] = kBranch;
        tip_age[id] = 0;
        ++tips;
        ++alive;
        front = fmax(front, static_cast<int>(target % p.nx) * p.h);
      }
      // The next step's active list: survivors in order, then this step's children (larger ids).
      int kept = 0;
      for (int q = 0; q < existing; ++q)
        if (tip_active[active[q]]) active[kept++] = active[q];
      for (long long id = tips - (alive - kept); id < tips; ++id) active[kept++] = static_cast<int>(id);
      count_active = kept;
    }
    __syncwarp();
    count_active = __shfl_sync(kFull, count_active, 0);
    overflow = __shfl_sync(kFull, overflow, 0);
    front = __shfl_sync(kFull, front, 0);
    ++step;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    moves += __shfl_down_sync(kFull, moves, offset);
    clipped_draws += __shfl_down_sync(kFull, clipped_draws, offset);
  }
  if (lane == 0) {
    Summary s{};
    s.steps = step;
    s.moves = moves;
    s.clipped = clipped_draws;
    s.log_size = log_size;
    s.tips = tips;
    s.overflow = overflow;
    w.summary[warp] = s;
  }
}

struct Capacity {
  long long segments, tips;
};

// Device memory of one batch of realisations.
struct Batch {
  cuda::DeviceBuffer<long long> hash_key, tip_node, tip_previous, tip_age, log_from, log_to;
  cuda::DeviceBuffer<int> hash_since, tip_generation, active, log_birth, log_generation, which;
  cuda::DeviceBuffer<unsigned char> tip_active, log_kind;
  cuda::DeviceBuffer<signed char> move;
  cuda::DeviceBuffer<Summary> summary;

  static std::size_t bytes_per_realisation(const Capacity& c, int hash_bits) {
    const auto h = static_cast<std::size_t>(1) << hash_bits;
    const auto t = static_cast<std::size_t>(c.tips), s = static_cast<std::size_t>(c.segments);
    return h * (8 + 4) + t * (8 + 8 + 8 + 4 + 1 + 4 + 1) + s * (8 + 8 + 4 + 4 + 1) + sizeof(Summary) + 4;
  }
  void allocate(int count, const Capacity& c, int hash_bits) {
    const auto n = static_cast<std::size_t>(count);
    const std::size_t h = n << hash_bits, t = n * static_cast<std::size_t>(c.tips),
                      s = n * static_cast<std::size_t>(c.segments);
    hash_key.resize(h);
    hash_since.resize(h);
    tip_node.resize(t);
    tip_previous.resize(t);
    tip_age.resize(t);
    tip_generation.resize(t);
    tip_active.resize(t);
    active.resize(t);
    move.resize(t);
    log_from.resize(s);
    log_to.resize(s);
    log_birth.resize(s);
    log_generation.resize(s);
    log_kind.resize(s);
    summary.resize(n);
    which.resize(n);
  }
  Work work() {
    return Work{hash_key.data(),       hash_since.data(), tip_node.data(),       tip_previous.data(), tip_age.data(),
                tip_generation.data(), tip_active.data(), active.data(),         move.data(),         log_from.data(),
                log_to.data(),         log_birth.data(),  log_generation.data(), log_kind.data(),     summary.data()};
  }
};

}  // namespace

void run_realisations(const KernelProblem& kp, const std::vector<double>& c0_host, const std::vector<double>& f0_host,
                      const std::vector<long long>& sprout_node, const std::vector<long long>& sprout_previous,
                      const std::vector<int>& which, long long segments, long long tips, int device,
                      const std::function<void(RawRealisation&&)>& done, Timing* timing) {
  const cuda::DeviceGuard guard(device);
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  Timing local;
  const Clock::time_point upload_start = Clock::now();
  cuda::DeviceBuffer<double> c0, f0;
  c0.upload(c0_host);
  f0.upload(f0_host);
  cuda::DeviceBuffer<long long> d_sprout_node, d_sprout_previous;
  d_sprout_node.upload(sprout_node);
  d_sprout_previous.upload(sprout_previous);
  Params p{};
  p.model = kp.model;
  p.nx = kp.nx;
  p.ny = kp.ny;
  p.nz = kp.nz;
  p.dims = kp.nz == 1 ? 2 : 3;
  p.h = kp.h;
  p.dt = kp.dt;
  p.a = kp.dt / (kp.h * kp.h);
  p.psi = kp.psi;
  p.reach_front = kp.reach_front;
  p.last_step = kp.last_step;
  p.max_tips = kp.max_tips;
  p.rules = kp.rules;
  for (int r = 0; r < kMaxRules; ++r) {
    p.rule_c[r] = kp.rule_c[r];
    p.rule_p[r] = kp.rule_p[r];
  }
  p.sprouts = static_cast<int>(sprout_node.size());
  p.sprout_node = d_sprout_node.data();
  p.sprout_previous = d_sprout_previous.data();
  p.c0 = c0.data();
  p.f0 = f0.data();
  p.seed = kp.seed;
  SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
  local.upload += since(upload_start);
  int hash_bits = 4;
  while ((1LL << hash_bits) < 2 * segments + 64) ++hash_bits;
  const Capacity capacity{segments, tips};
  std::size_t free = 0, total = 0;
  SIMKIT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t per = Batch::bytes_per_realisation(capacity, hash_bits);
  const auto fit = static_cast<long long>(static_cast<double>(free) * 0.6 / static_cast<double>(per));
  if (fit < 1) {
    throw UserError("--backend cuda: one realisation needs " + std::to_string(per >> 20) + " MiB of GPU memory (" +
                    std::to_string(segments) + " segments, " + std::to_string(tips) + " tips) and " +
                    std::to_string(free >> 20) + " MiB are free; lower --t-max or --max-tips, or use --backend cpu");
  }
  const int batch_size = static_cast<int>(std::min<long long>(fit, static_cast<long long>(which.size())));
  Batch batch;
  batch.allocate(batch_size, capacity, hash_bits);
  p.log_capacity = segments;
  p.tip_capacity = static_cast<int>(tips);
  p.hash_bits = hash_bits;
  p.which = batch.which.data();
  for (std::size_t first = 0; first < which.size(); first += static_cast<std::size_t>(batch_size)) {
    const int count =
        static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch_size), which.size() - first));
    SIMKIT_CUDA_CHECK(cudaMemcpy(batch.which.data(), which.data() + first,
                                 static_cast<std::size_t>(count) * sizeof(int), cudaMemcpyHostToDevice));
    SIMKIT_CUDA_CHECK(
        cudaMemsetAsync(batch.hash_key.data(), 0, (static_cast<std::size_t>(count) << hash_bits) * sizeof(long long)));
    const Clock::time_point kernel_start = Clock::now();
    const int threads = 128;
    const int blocks = (count * 32 + threads - 1) / threads;
    ensemble_kernel<<<blocks, threads>>>(p, batch.work(), count);
    SIMKIT_CUDA_CHECK_LAUNCH();
    std::vector<Summary> summary(static_cast<std::size_t>(count));
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    local.kernel += since(kernel_start);
    const Clock::time_point download_start = Clock::now();
    batch.summary.download(summary.data(), summary.size());
    SIMKIT_CUDA_CHECK(cudaDeviceSynchronize());
    for (int k = 0; k < count; ++k) {
      const Summary& s = summary[static_cast<std::size_t>(k)];
      RawRealisation raw;
      raw.index = which[first + static_cast<std::size_t>(k)];
      raw.overflow = s.overflow != 0;
      raw.steps = s.steps;
      raw.moves = s.moves;
      raw.clipped = s.clipped;
      if (!raw.overflow) {
        const auto n = static_cast<std::size_t>(s.log_size);
        const std::size_t log_offset = static_cast<std::size_t>(k) * static_cast<std::size_t>(segments);
        const std::size_t tip_offset = static_cast<std::size_t>(k) * static_cast<std::size_t>(tips);
        auto fetch = [](auto& host, const auto* device_data, std::size_t count_) {
          host.resize(count_);
          if (count_ > 0) {
            SIMKIT_CUDA_CHECK(cudaMemcpy(host.data(), device_data, count_ * sizeof(host[0]), cudaMemcpyDeviceToHost));
          }
        };
        fetch(raw.from, batch.log_from.data() + log_offset, n);
        fetch(raw.to, batch.log_to.data() + log_offset, n);
        fetch(raw.birth, batch.log_birth.data() + log_offset, n);
        fetch(raw.generation, batch.log_generation.data() + log_offset, n);
        fetch(raw.kind, batch.log_kind.data() + log_offset, n);
        std::vector<long long> nodes;
        std::vector<unsigned char> alive;
        fetch(nodes, batch.tip_node.data() + tip_offset, static_cast<std::size_t>(s.tips));
        fetch(alive, batch.tip_active.data() + tip_offset, static_cast<std::size_t>(s.tips));
        for (std::size_t t = 0; t < nodes.size(); ++t)
          if (alive[t]) raw.active_nodes.push_back(nodes[t]);
      }
      local.download += since(download_start);
      done(std::move(raw));
    }
  }
  if (timing) {
    timing->upload += local.upload;
    timing->kernel += local.kernel;
    timing->download += local.download;
  }
}

}  // namespace simkit::angio::detail::hybrid_cuda
