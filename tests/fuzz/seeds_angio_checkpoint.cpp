// Writes the angio_checkpoint fuzz target's seed inputs into the directory given as argv[1] (its
// CTest runs this before fuzzing, tests/fuzz/run_fuzz.cmake): two valid checkpoints written by
// simkit itself (fp32 4x3x2 and fp64 3x2x1) and four damaged copies of the fp64 one, so that the
// corpus holds no binary files that only a past build could have made.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "simkit/angio/angio.hpp"
#include "simkit/angio/io.hpp"

namespace {

namespace fs = std::filesystem;
using namespace simkit::angio;

template <class T>
std::string checkpoint_bytes(const fs::path& path, Grid grid, Precision precision, double dt) {
  Problem p;
  p.grid = grid;
  p.precision = precision;
  p.dt = dt;
  write_checkpoint(path, p, 3, 1, initial_fields<T>(grid, p.initial));
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void put(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  fs::create_directories(dir);
  checkpoint_bytes<float>(dir / "fp32_4x3x2.ckpt", Grid{4, 3, 2, 1.0 / 3.0}, Precision::Fp32, 0.11);
  const std::string good = checkpoint_bytes<double>(dir / "fp64_3x2x1.ckpt", Grid{3, 2, 1, 0.5}, Precision::Fp64, 1.0);

  std::string bad = good;
  bad[bad.size() - 2] = static_cast<char>(bad[bad.size() - 2] ^ 0xff);  // one data byte: checksum mismatch
  put(dir / "checksum_mismatch.ckpt", bad);

  put(dir / "truncated.ckpt", good.substr(0, good.size() - 20));  // the data end early

  bad = good;
  bad.replace(bad.find("CHECKPOINT 1"), 12, "CHECKPOINT 2");  // a format version this simkit does not read
  put(dir / "version_2.ckpt", bad);

  // A negative step in a header of the right length: the header's own checks, not the framing.
  const std::size_t first_newline = good.find('\n'), second_newline = good.find('\n', first_newline + 1);
  const std::size_t length = std::stoul(good.substr(first_newline + 1));
  std::string header = good.substr(second_newline + 1, length);
  header.insert(header.find("\"step\":") + 7, "-");
  put(dir / "negative_step.ckpt", good.substr(0, first_newline + 1) + std::to_string(header.size()) + "\n" + header +
                                      good.substr(second_newline + 1 + length));
  return 0;
}
