#pragma once
// The ddm region readers' fuzz targets read each input with the automatic coordinate type and each
// forced one (`--coords`).
#include <filesystem>
#include <optional>

#include "fuzz_input.hpp"
#include "simkit/ddm/io.hpp"

namespace simkit::fuzz {

template <class Read>
void read_with_every_coords(const std::filesystem::path& path, Read read) {
  using simkit::ddm::Coords;
  for (const std::optional<Coords> coords :
       {std::optional<Coords>{}, std::optional(Coords::U32), std::optional(Coords::U64), std::optional(Coords::F64)}) {
    expect_accept_or_user_error([&] { (void)read(path, coords); });
  }
}

}  // namespace simkit::fuzz
