#include "core/image.hpp"

#include <fmt/format.h>
#include <png.h>

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <ostream>

#include "simkit/core/error.hpp"
#include "core/output.hpp"

namespace simkit {

namespace {

// libpng reports errors through a callback that must not return; it longjmps back to encode_png,
// so no exception ever crosses libpng's C frames.
struct PngSink {
  std::ostream* out = nullptr;
  char message[256] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

void on_png_write(png_structp png, png_bytep data, png_size_t length) {
  auto* sink = static_cast<PngSink*>(png_get_io_ptr(png));
  sink->out->write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(length));
  if (!*sink->out) png_error(png, "write failed (disk full or file system error)");
}

void on_png_flush(png_structp png) { static_cast<PngSink*>(png_get_io_ptr(png))->out->flush(); }

// Only trivially destructible locals live in this frame, so longjmp out of libpng is safe here.
bool encode_png(PngSink& sink, int width, int height, const std::uint8_t* rgb) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(sink.message, sizeof sink.message, "cannot initialise libpng");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(sink.message, sizeof sink.message, "cannot initialise libpng");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &sink, on_png_write, on_png_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const std::size_t row_bytes = static_cast<std::size_t>(width) * 3;
  for (int y = 0; y < height; ++y) {
    // libpng's row pointer is non-const for historical reasons; writing does not modify it.
    png_write_row(png, const_cast<png_bytep>(rgb + static_cast<std::size_t>(y) * row_bytes));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png_rgb(const std::filesystem::path& path, int width, int height, const std::vector<std::uint8_t>& rgb) {
  if (width <= 0 || height <= 0 || rgb.size() != static_cast<std::size_t>(width) * height * 3) {
    throw InternalError(
        fmt::format("{}: write_png_rgb: {} bytes for a {}x{} RGB image", path.string(), rgb.size(), width, height));
  }
  AtomicFile file(path);
  PngSink sink;
  sink.out = &file.stream();
  if (!encode_png(sink, width, height, rgb.data())) {
    throw UserError(fmt::format("{}: cannot write the PNG image: {}", path.string(), sink.message));
  }
  file.commit();
}

std::array<std::uint8_t, 3> viridis(double t) {
  // matplotlib's viridis at t = 0, 1/8, ..., 1 (#440154 ... #fde725).
  static constexpr std::uint8_t kStops[9][3] = {{68, 1, 84},    {71, 45, 123},  {59, 82, 139},
                                                {44, 114, 142}, {33, 145, 140}, {40, 174, 128},
                                                {94, 201, 98},  {173, 220, 48}, {253, 231, 37}};
  if (!(t > 0)) t = 0;  // also NaN
  if (t > 1) t = 1;
  const double x = t * 8;
  const int k = x >= 8 ? 7 : static_cast<int>(x);
  const double w = x - k;
  std::array<std::uint8_t, 3> rgb{};
  for (int ch = 0; ch < 3; ++ch) {
    const double v = (1 - w) * kStops[k][ch] + w * kStops[k + 1][ch];
    rgb[ch] = static_cast<std::uint8_t>(std::lround(v));
  }
  return rgb;
}

}  // namespace simkit
