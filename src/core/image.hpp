#pragma once
// Small raster output shared by the engines: 8-bit RGB PNG files (libpng) and the viridis colour
// map, for quick-look images that open anywhere without Python.
#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace simkit {

// Writes `rgb` (width * height * 3 bytes, row 0 at the top, R G B per pixel) as an 8-bit RGB PNG,
// atomically (core/output.hpp). A UserError names the file if it cannot be written.
void write_png_rgb(const std::filesystem::path& path, int width, int height, const std::vector<std::uint8_t>& rgb);

// The viridis colour at t in [0, 1] (clamped; NaN gives the colour of 0): piecewise-linear between
// matplotlib's nine evenly spaced viridis colours, dark purple (0) to yellow (1).
std::array<std::uint8_t, 3> viridis(double t);

}  // namespace simkit
