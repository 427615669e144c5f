// read_regions_csv, with the automatic coordinate type and each forced one (`--coords`).
#include "fuzz_input.hpp"
#include "simkit/ddm/io.hpp"

namespace {
void read_all_ways(const std::filesystem::path& path) {
  using simkit::ddm::Coords;
  for (const std::optional<Coords> coords :
       {std::optional<Coords>{}, std::optional(Coords::U32), std::optional(Coords::U64), std::optional(Coords::F64)}) {
    simkit::fuzz::expect_accept_or_user_error([&] { (void)simkit::ddm::read_regions_csv(path, coords); });
  }
}
}  // namespace

SIMKIT_FUZZ_TARGET(ddm_regions_csv, ".csv", read_all_ways(path))
