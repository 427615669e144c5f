// simkit::dist over MPI (SIMKIT_HAVE_MPI), or the single-rank identity without it.
#include "simkit/core/dist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "simkit/core/error.hpp"

#ifdef SIMKIT_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (the deprecated C++ bindings need libmpi_cxx)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

namespace simkit::dist {

namespace {
[[maybe_unused]] bool g_started = false;
// MPI counts are int: larger messages go in pieces of at most 1 GiB.
[[maybe_unused]] constexpr std::size_t kPiece = std::size_t{1} << 30;

#ifdef SIMKIT_HAVE_MPI
void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw InternalError(fmt::format("MPI: {} failed: {}", what, std::string(text, static_cast<std::size_t>(length))));
  }
}
#endif
}  // namespace

bool built_with_mpi() {
#ifdef SIMKIT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "SLURM_STEP_ID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void init([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv) {
#ifdef SIMKIT_HAVE_MPI
  if (g_started || !launched_by_launcher()) return;
  int provided = 0;
  check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  g_started = true;
  // Errors come back as codes (check() turns them into exceptions) instead of aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Comm& w = Comm::world();
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size_);
  std::atexit(finalize);
#endif
}

void finalize() {
#ifdef SIMKIT_HAVE_MPI
  if (!g_started) return;
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
#endif
}

void abort(int code) {
#ifdef SIMKIT_HAVE_MPI
  if (g_started && Comm::world().size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

Comm& Comm::world() {
  static Comm w;
  return w;
}

void Comm::barrier() const {
#ifdef SIMKIT_HAVE_MPI
  if (distributed()) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
}

void Comm::allreduce_sum([[maybe_unused]] std::span<std::uint64_t> values) const {
#ifdef SIMKIT_HAVE_MPI
  if (!distributed()) return;
  for (std::size_t at = 0; at < values.size(); at += kPiece / 8) {
    const int n = static_cast<int>(std::min(kPiece / 8, values.size() - at));
    check(MPI_Allreduce(MPI_IN_PLACE, values.data() + at, n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
#endif
}

std::int64_t Comm::allreduce_max(std::int64_t value) const {
#ifdef SIMKIT_HAVE_MPI
  if (distributed()) check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
#endif
  return value;
}

std::int64_t Comm::allreduce_min(std::int64_t value) const {
#ifdef SIMKIT_HAVE_MPI
  if (distributed()) check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
#endif
  return value;
}

void Comm::reduce_sum([[maybe_unused]] std::span<std::uint64_t> values, [[maybe_unused]] int root) const {
#ifdef SIMKIT_HAVE_MPI
  if (!distributed()) return;
  for (std::size_t at = 0; at < values.size(); at += kPiece / 8) {
    const int n = static_cast<int>(std::min(kPiece / 8, values.size() - at));
    void* send = rank_ == root ? MPI_IN_PLACE : values.data() + at;
    check(MPI_Reduce(send, values.data() + at, n, MPI_UINT64_T, MPI_SUM, root, MPI_COMM_WORLD), "MPI_Reduce");
  }
#endif
}

void Comm::broadcast([[maybe_unused]] void* data, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] int root) const {
#ifdef SIMKIT_HAVE_MPI
  if (!distributed()) return;
  auto* p = static_cast<char*>(data);
  for (std::size_t at = 0; at < bytes; at += kPiece)
    check(MPI_Bcast(p + at, static_cast<int>(std::min(kPiece, bytes - at)), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
#endif
}

std::string Comm::broadcast(std::string text, int root) const {
  if (!distributed()) return text;
  std::uint64_t n = text.size();
  broadcast(&n, sizeof n, root);
  text.resize(n);
  broadcast(text.data(), n, root);
  return text;
}

void Comm::send([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] int to,
                [[maybe_unused]] int tag) const {
#ifdef SIMKIT_HAVE_MPI
  const auto* p = static_cast<const char*>(data);
  std::size_t at = 0;
  do {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    check(MPI_Send(p + at, n, MPI_BYTE, to, tag, MPI_COMM_WORLD), "MPI_Send");
    at += static_cast<std::size_t>(n);
  } while (at < bytes);
#else
  throw InternalError("dist: send without MPI");
#endif
}

void Comm::recv([[maybe_unused]] void* data, [[maybe_unused]] std::size_t bytes, [[maybe_unused]] int from,
                [[maybe_unused]] int tag) const {
#ifdef SIMKIT_HAVE_MPI
  auto* p = static_cast<char*>(data);
  std::size_t at = 0;
  do {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    check(MPI_Recv(p + at, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    at += static_cast<std::size_t>(n);
  } while (at < bytes);
#else
  throw InternalError("dist: recv without MPI");
#endif
}

bool Comm::probe([[maybe_unused]] int from, [[maybe_unused]] int tag) const {
#ifdef SIMKIT_HAVE_MPI
  int flag = 0;
  check(MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  return flag != 0;
#else
  throw InternalError("dist: probe without MPI");
#endif
}

void Comm::sendrecv([[maybe_unused]] const void* send, [[maybe_unused]] std::size_t send_bytes,
                    [[maybe_unused]] int to, [[maybe_unused]] void* recv, [[maybe_unused]] std::size_t recv_bytes,
                    [[maybe_unused]] int from, [[maybe_unused]] int tag) const {
#ifdef SIMKIT_HAVE_MPI
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  const std::size_t total = std::max(to >= 0 ? send_bytes : 0, from >= 0 ? recv_bytes : 0);
  std::size_t at = 0;
  do {
    const int ns = to >= 0 ? static_cast<int>(std::min(kPiece, send_bytes - std::min(at, send_bytes))) : 0;
    const int nr = from >= 0 ? static_cast<int>(std::min(kPiece, recv_bytes - std::min(at, recv_bytes))) : 0;
    check(MPI_Sendrecv(s ? s + std::min(at, send_bytes) : nullptr, ns, MPI_BYTE, to >= 0 ? to : MPI_PROC_NULL, tag,
                       r ? r + std::min(at, recv_bytes) : nullptr, nr, MPI_BYTE, from >= 0 ? from : MPI_PROC_NULL, tag,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    at += kPiece;
  } while (at < total);
#else
  throw InternalError("dist: sendrecv without MPI");
#endif
}

std::vector<std::byte> Comm::gather(std::span<const std::byte> mine, std::vector<std::size_t>* sizes, int root) const {
  std::vector<std::size_t> counts(static_cast<std::size_t>(size_), 0);
  std::vector<std::byte> out;
  if (!distributed()) {
    counts[0] = mine.size();
    out.assign(mine.begin(), mine.end());
    if (sizes) *sizes = counts;
    return out;
  }
  // Sizes first, then each rank's bytes to the root in rank order (point to point: any size).
  std::uint64_t n = mine.size();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size_), 0);
  all[static_cast<std::size_t>(rank_)] = n;
  allreduce_sum(all);
  for (int r = 0; r < size_; ++r) counts[static_cast<std::size_t>(r)] = all[static_cast<std::size_t>(r)];
  if (sizes) *sizes = counts;
  if (rank_ == root) {
    std::size_t total = 0;
    for (auto c : counts) total += c;
    out.resize(total);
    std::size_t at = 0;
    for (int r = 0; r < size_; ++r) {
      const std::size_t c = counts[static_cast<std::size_t>(r)];
      if (r == root) {
        if (c) std::memcpy(out.data() + at, mine.data(), c);
      } else if (c) {
        recv(out.data() + at, c, r, 7001);
      }
      at += c;
    }
  } else if (n) {
    send(mine.data(), n, root, 7001);
  }
  return out;
}

std::vector<std::byte> Comm::allgather(std::span<const std::byte> mine, std::vector<std::size_t>* sizes) const {
  std::vector<std::size_t> counts;
  std::vector<std::byte> out = gather(mine, &counts, 0);
  std::uint64_t total = out.size();
  broadcast(&total, sizeof total, 0);
  out.resize(total);
  broadcast(out.data(), total, 0);
  if (sizes) *sizes = counts;
  return out;
}

bool Comm::cuda_aware() const {
#if defined(SIMKIT_HAVE_MPI) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return g_started && MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

Range share(std::uint64_t n, int ranks, int rank, std::uint64_t align) {
  if (align == 0) align = 1;
  const std::uint64_t blocks = (n + align - 1) / align;
  const auto k = static_cast<std::uint64_t>(ranks), r = static_cast<std::uint64_t>(rank);
  const std::uint64_t base = blocks / k, extra = blocks % k;
  const std::uint64_t first = r * base + std::min(r, extra);
  const std::uint64_t count = base + (r < extra ? 1 : 0);
  Range out;
  out.begin = std::min(n, first * align);
  out.end = std::min(n, (first + count) * align);
  return out;
}

}  // namespace simkit::dist
