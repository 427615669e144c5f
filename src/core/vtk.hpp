#pragma once
// VTK XML files shared by the engines: writers for ImageData (.vti), PolyData (.vtp), collections
// (.pvd) and parallel ImageData (.pvti), and a reader for uncompressed ImageData. The writers'
// byte formats are fixed (tests and users compare outputs byte for byte); the reader accepts what
// VTK and ParaView write without compression. Private to the library: engines wrap it in their own
// file formats (angio: src/angio/continuous/io.cpp, src/angio/hybrid/io.cpp).
//
// Every writer is atomic (temporary file + rename, core/output.hpp). A writer given arrays of the
// wrong size throws InternalError (a bug in the caller); the reader reports bad files as UserErrors
// naming the file, and the line and the field or array where it can.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "simkit/core/error.hpp"

namespace simkit::vtk {

// The numeric types of VTK XML DataArrays, by their names in the files ("Float32").
enum class DataType { Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float32, Float64 };

std::string_view type_name(DataType type);
std::optional<DataType> parse_type(std::string_view name);
std::size_t type_size(DataType type);

// The DataType that stores T (fixed-width integers, float, double).
template <class T>
constexpr DataType data_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, std::int8_t>)
    return DataType::Int8;
  else if constexpr (std::is_same_v<U, std::uint8_t>)
    return DataType::UInt8;
  else if constexpr (std::is_same_v<U, std::int16_t>)
    return DataType::Int16;
  else if constexpr (std::is_same_v<U, std::uint16_t>)
    return DataType::UInt16;
  else if constexpr (std::is_same_v<U, std::int32_t>)
    return DataType::Int32;
  else if constexpr (std::is_same_v<U, std::uint32_t>)
    return DataType::UInt32;
  else if constexpr (std::is_same_v<U, std::int64_t>)
    return DataType::Int64;
  else if constexpr (std::is_same_v<U, std::uint64_t>)
    return DataType::UInt64;
  else if constexpr (std::is_same_v<U, float>)
    return DataType::Float32;
  else if constexpr (std::is_same_v<U, double>)
    return DataType::Float64;
  else
    static_assert(!sizeof(U), "VTK arrays hold fixed-width integers, float or double");
}

// A named array to write: a view of the caller's values, which must outlive the write. `size` counts
// values, tuples x components (x y z of each point: components 3).
struct ArrayView {
  std::string name;
  DataType type = DataType::Float64;
  const void* data = nullptr;
  std::size_t size = 0;
  int components = 1;

  ArrayView() = default;
  template <std::ranges::contiguous_range R>
  ArrayView(std::string array_name, const R& values, int array_components = 1)
      : name(std::move(array_name)),
        type(data_type_of<std::ranges::range_value_t<R>>()),
        data(std::ranges::data(values)),
        size(std::ranges::size(values)),
        components(array_components) {}
};

// Point or cell data: the arrays in the order written, and the active scalars (VTK's Scalars
// attribute, which ParaView colours by first; "" writes none).
struct Attributes {
  std::vector<ArrayView> arrays;
  std::string scalars;
};

// ---------------------------------------------------------------------------------------------
// ImageData

// x0 x1 y0 y1 z0 z1: the first and last point index along each axis (VTK's WholeExtent).
using Extent = std::array<int, 6>;

// The geometry of an image: point (i, j, k) of the extent lies at origin + (i, j, k) * spacing.
struct Image {
  Extent extent{};
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 3> spacing{1, 1, 1};

  Image() = default;
  explicit Image(const Extent& image_extent, const std::array<double, 3>& image_origin = {0, 0, 0},
                 const std::array<double, 3>& image_spacing = {1, 1, 1})
      : extent(image_extent), origin(image_origin), spacing(image_spacing) {}

  // Points along x, y and z.
  std::array<std::size_t, 3> dimensions() const;
  std::size_t points() const;
};

// VTK XML ImageData with the point arrays as binary appended raw data (header_type UInt64,
// LittleEndian, NumberOfComponents always written), one Piece covering the extent, an empty
// <CellData>. Numbers print with 17 significant digits (exact round trip). A piece of a parallel
// image (write_parallel_image_data) is such a file whose extent is the piece's.
void write_image_data(const std::filesystem::path& path, const Image& image, const Attributes& point_data);

// The names, types and components of arrays, for the summary of a parallel file.
struct ArraySpec {
  std::string name;
  DataType type = DataType::Float64;
  int components = 1;

  ArraySpec() = default;
  ArraySpec(std::string array_name, DataType array_type, int array_components = 1)
      : name(std::move(array_name)), type(array_type), components(array_components) {}
};

// One piece of a parallel image: its extent and its .vti (relative to the .pvti's directory).
struct ImagePiece {
  Extent extent{};
  std::string source;
};

// A .pvti naming the pieces of `whole` (PImageData, GhostLevel `ghost_level`), whose point arrays are
// `point_arrays` with `scalars` active ("" for none).
void write_parallel_image_data(const std::filesystem::path& path, const Image& whole,
                               const std::vector<ArraySpec>& point_arrays, std::string_view scalars,
                               const std::vector<ImagePiece>& pieces, int ghost_level = 0);

// ---------------------------------------------------------------------------------------------
// PolyData

// Cells of one kind: the point indices of every cell, cell after cell, and one past each cell's
// last index in `connectivity` (VTK's connectivity and offsets arrays).
struct Cells {
  std::vector<std::int64_t> connectivity;
  std::vector<std::int64_t> offsets;
};

// Points with vertex, line and polygon cells (strips are not written) and their data. Cell data
// holds the verts' values, then the lines', then the polys' (VTK's order).
struct PolyData {
  std::vector<double> points;                // x y z of each point
  std::optional<Cells> verts, lines, polys;  // written when present, empty ones too
  Attributes point_data, cell_data;

  std::size_t point_count() const { return points.size() / 3; }
  std::size_t cell_count() const;
};

// VTK XML PolyData, every array inline ascii, one tuple a line: in the Piece, <Points>, then
// <Verts>, <Lines>, <Polys> when present, then <PointData> and <CellData> when they have arrays.
// Float64 values print with 17 significant digits, Float32 with 9 (exact round trips).
void write_poly_data(const std::filesystem::path& path, const PolyData& poly);

// ---------------------------------------------------------------------------------------------
// Collections

// One dataset of a ParaView collection: its time, file (relative to the .pvd's directory), part and
// group.
struct CollectionEntry {
  double time = 0;
  std::string file;
  int part = 0;
  std::string group;

  CollectionEntry() = default;
  CollectionEntry(double entry_time, std::string entry_file, int entry_part = 0, std::string entry_group = {})
      : time(entry_time), file(std::move(entry_file)), part(entry_part), group(std::move(entry_group)) {}
};

// A .pvd listing `entries` in order: the time series ParaView opens as one.
void write_collection(const std::filesystem::path& path, const std::vector<CollectionEntry>& entries);

// ---------------------------------------------------------------------------------------------
// Reading ImageData

// A data array's values in the type the file stores them in.
using Values =
    std::variant<std::vector<std::int8_t>, std::vector<std::uint8_t>, std::vector<std::int16_t>,
                 std::vector<std::uint16_t>, std::vector<std::int32_t>, std::vector<std::uint32_t>,
                 std::vector<std::int64_t>, std::vector<std::uint64_t>, std::vector<float>, std::vector<double>>;

// Values as doubles (64-bit integers beyond 2^53 round).
std::vector<double> to_doubles(Values values);

// A named point array of the file, before its values are decoded.
struct ArrayInfo {
  std::string name;
  std::string type;      // as written ("Float32"); read() rejects names that are not a DataType
  int components = 1;    // NumberOfComponents; 0 when it is not a positive integer
  std::size_t line = 0;  // of its <DataArray>, for messages
};

struct ImageDataInfo {
  Image image;  // WholeExtent, Origin and Spacing (VTK's defaults 0 0 0 and 1 1 1 when absent)
  // <ImageData>'s attributes as written (entities decoded), to quote in messages; Direction is not
  // interpreted.
  std::map<std::string, std::string, std::less<>> attributes;
  std::size_t line = 0;                 // of <ImageData>
  std::vector<ArrayInfo> point_arrays;  // <PointData>'s named arrays, in file order
};

// Reads a .vti: one Piece covering the whole extent, point arrays inline (ascii, base64) or appended
// (raw, base64), header_type UInt32 or UInt64, LittleEndian, no compressor. The constructor reads
// the file and checks its XML header; each array is decoded only when asked for, so arrays a caller
// does not use cannot fail it. Errors are UserErrors "FILE[:LINE]: [field 'F': ]PROBLEM".
class ImageDataReader {
 public:
  explicit ImageDataReader(const std::filesystem::path& path);
  ~ImageDataReader();
  ImageDataReader(ImageDataReader&&) noexcept;
  ImageDataReader& operator=(ImageDataReader&&) noexcept;

  const std::string& file() const;  // the name used in messages
  const ImageDataInfo& info() const;
  const ArrayInfo* find(std::string_view name) const;  // nullptr when there is no such point array

  // The array's values, tuple after tuple; the array must have `components` components.
  Values read(const ArrayInfo& array, int components = 1) const;
  std::vector<double> read_doubles(const ArrayInfo& array, int components = 1) const;

  // An error about this file at `line` (0: none), for the caller's own checks.
  UserError error(std::size_t line, std::string_view field, std::string_view problem) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A whole .vti: the header and every point array with the components it has.
struct ImageDataFile {
  ImageDataInfo info;
  std::vector<std::pair<std::string, Values>> point_data;  // in file order
};
ImageDataFile read_image_data(const std::filesystem::path& path);

}  // namespace simkit::vtk
