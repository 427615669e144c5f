// The continuous solvers on z-slabs in one process: K threads, each with its own slab's solver, joined
// by an in-process SlabLink whose messages are copied with cudaMemcpyDefault-like semantics (host
// or device memory alike, as a CUDA-aware MPI takes them). The cuda backend's device-pointer path
// (exchange_device, taken when the MPI is CUDA-aware, which Debian's OpenMPI is not) runs here with
// a link that says device_pointers(); the host-staged path and the host backends run through the
// same link. Every slab's own planes must equal the single-solver run's bit for bit, with series
// reductions (carried up the slabs) equal to its reductions. The mpi-labelled tests
// (tests/dist/angio_mpi_test.cpp) cover the same through mpirun.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "angio/continuous/kernels.hpp"
#include "fields.hpp"
#include "simkit/angio/angio.hpp"
#include "simkit/core/dist.hpp"
#include "support/test_support.hpp"

#if SIMKIT_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace simkit::angio {
namespace {

// Copies bytes from or to device memory (cudaMemcpyDefault: unified addressing tells host and
// device apart), as a CUDA-aware MPI does; host memory with memcpy (a CUDA build on a machine
// without a GPU runs the host cases too).
void copy_any(void* to, const void* from, std::size_t bytes, bool device) {
#if SIMKIT_HAVE_CUDA
  if (device) {
    ASSERT_EQ(cudaMemcpy(to, from, bytes, cudaMemcpyDefault), cudaSuccess);
    return;
  }
#endif
  ASSERT_FALSE(device) << "device pointers in a build without CUDA";
  std::memcpy(to, from, bytes);
}

// Whether `p` is device memory (false in a build without CUDA).
bool on_device([[maybe_unused]] const void* p) {
#if SIMKIT_HAVE_CUDA
  cudaPointerAttributes a{};
  return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
#else
  return false;
#endif
}

// Messages between the K threads: one queue per (receiver, sender, tag), blocking receive. A slab
// that fails closes the office: every wait then ends with an exception instead of a hang.
class PostOffice {
 public:
  void post(int to, int from, int tag, std::vector<std::byte> bytes) {
    {
      std::lock_guard lock(mutex_);
      boxes_[{to, from, tag}].push_back(std::move(bytes));
    }
    ready_.notify_all();
  }
  std::vector<std::byte> take(int to, int from, int tag) {
    std::unique_lock lock(mutex_);
    auto& box = boxes_[{to, from, tag}];
    ready_.wait(lock, [&] { return !box.empty() || closed_; });
    if (box.empty()) throw std::runtime_error("another slab failed");
    std::vector<std::byte> bytes = std::move(box.front());
    box.pop_front();
    return bytes;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  bool closed_ = false;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> boxes_;
};

// MpiSlabLink's contract (src/angio/continuous/run.cpp) between threads. The planes' bytes are read
// when exchange() is called (as MPI_Sendrecv does), from device memory when device_pointers() and
// host memory otherwise; with `check` (the cuda backend) each plane must be device memory exactly
// when device_pointers(). The series carries are host memory either way.
class ThreadLink final : public detail::SlabLink {
 public:
  ThreadLink(PostOffice& office, int rank, int ranks, bool device, bool check)
      : office_(office), rank_(rank), ranks_(ranks), device_(device), check_(check) {}
  void exchange(const void* lo_send, const void* hi_send, void* lo_recv, void* hi_recv, std::size_t bytes) override {
    if (check_) {
      for (const void* plane :
           {lo_send, hi_send, static_cast<const void*>(lo_recv), static_cast<const void*>(hi_recv)}) {
        if (plane) {
          EXPECT_EQ(on_device(plane), device_) << "a plane in " << (device_ ? "host" : "device") << " memory";
        }
      }
    }
    if (hi_send) office_.post(rank_ + 1, rank_, 21, read(hi_send, bytes, device_));
    if (lo_send) office_.post(rank_ - 1, rank_, 22, read(lo_send, bytes, device_));
    if (lo_recv) write(lo_recv, office_.take(rank_, rank_ - 1, 21), bytes, device_);
    if (hi_recv) write(hi_recv, office_.take(rank_, rank_ + 1, 22), bytes, device_);
  }
  bool device_pointers() const override { return device_; }
  void carry_in(void* data, std::size_t bytes) override {
    if (rank_ > 0) write(data, office_.take(rank_, rank_ - 1, 23), bytes, false);
  }
  void carry_on(const void* data, std::size_t bytes) override {
    if (!last()) office_.post(rank_ + 1, rank_, 23, read(data, bytes, false));
  }
  void finish(void* data, std::size_t bytes) override {
    if (last()) {
      for (int r = 0; r + 1 < ranks_; ++r) office_.post(r, rank_, 24, read(data, bytes, false));
    } else {
      write(data, office_.take(rank_, ranks_ - 1, 24), bytes, false);
    }
  }
  bool last() const override { return rank_ + 1 == ranks_; }
  bool peers_on_node() const override { return false; }  // (the CUDA IPC path has its own mpi tests)
  bool all(bool mine) override {
    for (int r = 0; r < ranks_; ++r)
      if (r != rank_) office_.post(r, rank_, 25, {std::byte{mine}});
    bool every = mine;
    for (int r = 0; r < ranks_; ++r) {
      if (r == rank_) continue;
      const bool theirs = office_.take(rank_, r, 25).at(0) == std::byte{1};  // taken whatever `every` is
      every = every && theirs;
    }
    return every;
  }
  void notify(int, int) override { ADD_FAILURE() << "notify: only the CUDA IPC path sends notices"; }
  void await(int, int) override { ADD_FAILURE() << "await: only the CUDA IPC path waits for notices"; }

 private:
  static std::vector<std::byte> read(const void* from, std::size_t bytes, bool device) {
    std::vector<std::byte> out(bytes);
    copy_any(out.data(), from, bytes, device);
    return out;
  }
  static void write(void* to, const std::vector<std::byte>& bytes, std::size_t expected, bool device) {
    ASSERT_EQ(bytes.size(), expected) << "a message of another size than asked";
    copy_any(to, bytes.data(), bytes.size(), device);
  }
  PostOffice& office_;
  int rank_, ranks_;
  bool device_, check_;
};

struct Case {
  const char* name;
  Backend backend;
  bool device_pointers;
};

class AngioSlabsInProcess : public ::testing::TestWithParam<Case> {};

// Planes [first, first + count) of `from` (plane 0 at global from_z0) as a Fields of `count` planes.
template <class T>
Fields<T> planes(const Grid& g, const Fields<T>& from, int first, int count) {
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  Fields<T> out;
  const std::vector<T>* in[3] = {&from.n, &from.f, &from.c};
  std::vector<T>* to[3] = {&out.n, &out.f, &out.c};
  for (int a = 0; a < 3; ++a)
    to[a]->assign(in[a]->begin() + static_cast<std::ptrdiff_t>(first * plane),
                  in[a]->begin() + static_cast<std::ptrdiff_t>((first + count) * plane));
  return out;
}

template <class T>
void run_case(const Case& c, const Grid& g, Form form, int ranks, std::int64_t steps, bool reduce, std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << c.name << " " << g.nx << "x" << g.ny << "x" << g.nz << " "
                                  << (form == Form::Flux ? "flux" : "expanded") << " fp" << 8 * sizeof(T) << " ranks "
                                  << ranks << " steps " << steps << (reduce ? " reduced" : "") << " seed " << seed);
  std::mt19937_64 rng(seed);
  Problem p;
  p.grid = g;
  p.form = form;
  p.model.diffusion = 0.02;  // (the mesh Peclet number below 2 on these coarse grids, as in solver_test)
  p.model.taf_diffusion = 0.01;
  p.precision = std::is_same_v<T, float> ? Precision::Fp32 : Precision::Fp64;
  const Fields<T> initial = test_fields::cosine_fields<T>(g, rng);
  p.dt = 0.5 * check_stability(p, initial).largest_stable_k;
  RunOptions options;
  options.threads = 2;
  auto whole = make_solver<T>(p, initial, c.backend, options);
  const Reductions expected = whole->advance(steps, reduce);
  Fields<T> want;
  whole->read(want);
  whole.reset();

  // The split of run.cpp's plan_slabs: whole 35-plane chunks with cuda, two ghost planes a side
  // when every slab owns two or more (cuda), one otherwise.
  const int align = c.backend == Backend::Cuda ? detail::kSlabAlignment : 1;
  std::vector<dist::Range> shares;
  std::uint64_t thinnest = static_cast<std::uint64_t>(g.nz);
  for (int r = 0; r < ranks; ++r) {
    shares.push_back(dist::share(static_cast<std::uint64_t>(g.nz), ranks, r, static_cast<std::uint64_t>(align)));
    thinnest = std::min(thinnest, shares.back().size());
  }
  ASSERT_GT(thinnest, 0u) << "every slab must own planes";
  const int ghosts = c.backend == Backend::Cuda && thinnest >= 2 ? 2 : 1;
  PostOffice office;
  std::vector<Fields<T>> got(static_cast<std::size_t>(ranks));
  std::vector<Reductions> reductions(static_cast<std::size_t>(ranks));
  std::vector<std::string> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        const auto own_begin = static_cast<int>(shares[static_cast<std::size_t>(r)].begin);
        const auto own_end = static_cast<int>(shares[static_cast<std::size_t>(r)].end);
        const int held_begin = own_begin - (r > 0 ? ghosts : 0), held_end = own_end + (r + 1 < ranks ? ghosts : 0);
        ThreadLink link(office, r, ranks, c.device_pointers, c.backend == Backend::Cuda);
        detail::SlabSetup setup;
        setup.slab = detail::Slab{held_begin, g.nz, own_begin - held_begin, own_end - held_begin, ghosts};
        setup.link = &link;
        Problem local = p;
        local.grid.nz = held_end - held_begin;
        auto solver = detail::make_backend<T>(c.backend, local, planes(g, initial, held_begin, held_end - held_begin),
                                              options, setup);
        reductions[static_cast<std::size_t>(r)] = solver->advance(steps, reduce);
        Fields<T> mine;
        solver->read(mine);
        got[static_cast<std::size_t>(r)] = planes(local.grid, mine, own_begin - held_begin, own_end - own_begin);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
        office.close();  // the other slabs stop waiting for this one
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) ASSERT_EQ(failures[static_cast<std::size_t>(r)], "") << "slab " << r;
  // The slabs' own planes, in order, are the whole grid: the same bits.
  Fields<T> joined;
  for (const Fields<T>& f : got) {
    joined.n.insert(joined.n.end(), f.n.begin(), f.n.end());
    joined.f.insert(joined.f.end(), f.f.begin(), f.f.end());
    joined.c.insert(joined.c.end(), f.c.begin(), f.c.end());
  }
  const std::vector<T>* a[3] = {&want.n, &want.f, &want.c};
  const std::vector<T>* b[3] = {&joined.n, &joined.f, &joined.c};
  for (int q = 0; q < 3; ++q) {
    ASSERT_EQ(a[q]->size(), b[q]->size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a[q]->size(); ++i) differ += std::memcmp(&(*a[q])[i], &(*b[q])[i], sizeof(T)) != 0;
    EXPECT_EQ(differ, 0u) << "field " << q << ": nodes that differ from the single solver's";
    if (!reduce) continue;
    // Series reductions: every slab gets the single solver's (the fold is in the single-rank order).
    for (int r = 0; r < ranks; ++r) {
      const Reductions& mine = reductions[static_cast<std::size_t>(r)];
      EXPECT_EQ(mine.integral[q], expected.integral[q]) << "slab " << r << " field " << q;
      EXPECT_EQ(mine.min[q], expected.min[q]) << "slab " << r << " field " << q;
      EXPECT_EQ(mine.max[q], expected.max[q]) << "slab " << r << " field " << q;
    }
  }
}

TEST_P(AngioSlabsInProcess, OwnPlanesEqualTheSingleSolverBitwise) {
  const Case& c = GetParam();
  if (c.backend == Backend::Cuda) {
    std::string why;
    if (!test::cuda_usable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
  const std::uint64_t seed = test::test_seed(20261128);
  // cuda splits in 35-plane chunks: 80 planes on 2 slabs are 70 + 10, 120 on 3 are 35 + 35 + 50.
  // Grids this small take the classic kernels (single steps, one plane exchanged a face) unless
  // SIMKIT_ANGIO_KERNEL=tma asks for the TMA ones where rows are whole 16-byte multiples (36 nodes
  // in fp32 and fp64; 30 are not): then the expanded form takes two steps a pass and exchanges two
  // planes a face. Odd and even step counts (pairs, and the single step after); series steps
  // (reduced) take the carried fold and are not overlapped.
  struct KernelChoice {
    explicit KernelChoice(bool tma) { tma ? setenv("SIMKIT_ANGIO_KERNEL", "tma", 1) : unsetenv("SIMKIT_ANGIO_KERNEL"); }
    ~KernelChoice() { unsetenv("SIMKIT_ANGIO_KERNEL"); }
  };
  for (bool tma : {false, true}) {
    if (tma && c.backend != Backend::Cuda) continue;
    const KernelChoice kernel(tma);
    SCOPED_TRACE(tma ? "SIMKIT_ANGIO_KERNEL=tma" : "default kernels");
    for (Form form : {Form::Expanded, Form::Flux}) {
      run_case<float>(c, Grid{36, 20, 80, 0.05}, form, 2, 7, false, seed);
      run_case<double>(c, Grid{36, 20, 80, 0.05}, form, 2, 6, true, seed + 1);
      run_case<float>(c, Grid{36, 20, 120, 0.05}, form, 3, 9, false, seed + 2);
      run_case<float>(c, Grid{30, 17, 120, 0.05}, form, 3, 5, true, seed + 3);
    }
  }
  if (c.backend != Backend::Cuda) run_case<double>(c, Grid{9, 7, 11, 0.1}, Form::Flux, 4, 5, true, seed + 4);
}

INSTANTIATE_TEST_SUITE_P(, AngioSlabsInProcess,
                         ::testing::Values(Case{"reference", Backend::Reference, false},
                                           Case{"cpu", Backend::Cpu, false},
                                           Case{"cuda_host_staged", Backend::Cuda, false},
                                           Case{"cuda_device_pointers", Backend::Cuda, true}),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace simkit::angio
