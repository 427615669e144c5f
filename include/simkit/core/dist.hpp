#pragma once
// simkit::dist: the ranks of an MPI job (docs/scale-out.md). Every engine's distributed driver goes
// through Comm, never through MPI directly, and Comm is the whole of MPI to them: a build without
// MPI (SIMKIT_MPI=OFF), or a process not started by mpirun/srun, is rank 0 of 1 and every collective
// is the identity. No MPI type appears here, so the public headers do not need mpi.h.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace simkit::dist {

// Whether this build has MPI (SIMKIT_MPI), and whether this process was started by a launcher
// (mpirun, mpiexec, srun: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE or SLURM_STEP_ID in the environment).
bool built_with_mpi();
bool launched_by_launcher();

// Starts MPI (MPI_Init_thread, MPI_THREAD_FUNNELED: only the main thread calls MPI) when this build has
// MPI and the process was started by a launcher; otherwise nothing. Call once, first thing in main.
// finalize() ends it (at exit); abort(code) ends every rank of the job with `code` (a failure on one
// rank must not leave the others waiting in a collective).
void init(int& argc, char**& argv);
void finalize();
[[noreturn]] void abort(int code);

// The world communicator's view of this process. Collectives must be called by every rank in the
// same order; all byte counts are per rank.
class Comm {
 public:
  static Comm& world();
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  bool root() const { return rank_ == 0; }

  void barrier() const;
  // In-place sums over the ranks (exact for integers: results independent of the rank count).
  void allreduce_sum(std::span<std::uint64_t> values) const;
  std::int64_t allreduce_max(std::int64_t value) const;
  std::int64_t allreduce_min(std::int64_t value) const;
  // Integer sums onto `root` only (the others' values are left as they were).
  void reduce_sum(std::span<std::uint64_t> values, int root = 0) const;
  void broadcast(void* data, std::size_t bytes, int root = 0) const;
  std::string broadcast(std::string text, int root = 0) const;
  // Every rank's bytes, concatenated in rank order, on `root` (empty elsewhere); counts per rank in `sizes`.
  std::vector<std::byte> gather(std::span<const std::byte> mine, std::vector<std::size_t>* sizes = nullptr,
                                int root = 0) const;
  // The same on every rank.
  std::vector<std::byte> allgather(std::span<const std::byte> mine, std::vector<std::size_t>* sizes = nullptr) const;
  // Point to point (blocking). Messages of any size (split into pieces below 2^31 bytes).
  void send(const void* data, std::size_t bytes, int to, int tag) const;
  void recv(void* data, std::size_t bytes, int from, int tag) const;
  // Whether a message from `from` with `tag` has arrived (MPI_Iprobe: does not wait).
  bool probe(int from, int tag) const;
  // Sends `send_bytes` to `to` and receives `recv_bytes` from `from` at once; -1 skips a side.
  void sendrecv(const void* send, std::size_t send_bytes, int to, void* recv, std::size_t recv_bytes, int from,
                int tag) const;
  // Whether device pointers may be passed to the calls above (a CUDA-aware MPI: MPIX_Query_cuda_support).
  bool cuda_aware() const;

 private:
  int rank_ = 0, size_ = 1;
  friend void init(int&, char**&);
};

// Rank r's share [begin, end) of n items split as evenly as possible in `align`-sized blocks (the
// first n % ranks... get one block more); n need not be a multiple of align (the last block is short).
struct Range {
  std::uint64_t begin = 0, end = 0;
  std::uint64_t size() const { return end - begin; }
};
Range share(std::uint64_t n, int ranks, int rank, std::uint64_t align = 1);


}  // namespace simkit::dist
