// VTK XML writers and the ImageData reader (vtk.hpp).
#include "core/vtk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <ostream>
#include <system_error>
#include <type_traits>

#include "core/input.hpp"
#include "core/output.hpp"
#include "core/svg.hpp"
#include "core/text.hpp"

namespace simkit::vtk {

namespace {

namespace fs = std::filesystem;

// Binary data is written and read by copying memory, and every file says LittleEndian.
static_assert(std::endian::native == std::endian::little, "the VTK writers and reader assume a little-endian host");

constexpr std::string_view kTypeNames[] = {"Int8",   "UInt8", "Int16",  "UInt16",  "Int32",
                                           "UInt32", "Int64", "UInt64", "Float32", "Float64"};
constexpr std::size_t kTypeSizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

// Calls f(std::type_identity<T>{}) for the C++ type T that stores `type`.
template <class F>
decltype(auto) with_type(DataType type, F&& f) {
  switch (type) {
    case DataType::Int8:
      return f(std::type_identity<std::int8_t>{});
    case DataType::UInt8:
      return f(std::type_identity<std::uint8_t>{});
    case DataType::Int16:
      return f(std::type_identity<std::int16_t>{});
    case DataType::UInt16:
      return f(std::type_identity<std::uint16_t>{});
    case DataType::Int32:
      return f(std::type_identity<std::int32_t>{});
    case DataType::UInt32:
      return f(std::type_identity<std::uint32_t>{});
    case DataType::Int64:
      return f(std::type_identity<std::int64_t>{});
    case DataType::UInt64:
      return f(std::type_identity<std::uint64_t>{});
    case DataType::Float32:
      return f(std::type_identity<float>{});
    case DataType::Float64:
      return f(std::type_identity<double>{});
  }
  throw InternalError(fmt::format("vtk: unknown DataType {}", static_cast<int>(type)));
}

// Exact round trips: 17 significant digits for doubles, 9 for floats; NaN prints as "nan".
std::string exact(double x) { return fmt::format("{:.17g}", x); }

template <class T>
void append_value(std::string& out, T value) {
  if constexpr (std::is_same_v<T, double>) {
    out += exact(value);
  } else if constexpr (std::is_same_v<T, float>) {
    fmt::format_to(std::back_inserter(out), "{:.9g}", value);
  } else {
    // 8-bit integers print as numbers, not characters.
    using Printed = std::conditional_t<(sizeof(T) < sizeof(int)), int, T>;
    fmt::format_to(std::back_inserter(out), "{}", static_cast<Printed>(value));
  }
}

std::string extent_text(const Extent& e) {
  return fmt::format("{} {} {} {} {} {}", e[0], e[1], e[2], e[3], e[4], e[5]);
}

std::string triple_text(const std::array<double, 3>& v) {
  return fmt::format("{} {} {}", exact(v[0]), exact(v[1]), exact(v[2]));
}

// ` Scalars="name"`, or nothing when no array is active.
std::string scalars_attribute(std::string_view scalars) {
  return scalars.empty() ? std::string() : fmt::format(" Scalars=\"{}\"", xml_escape(scalars));
}

// Arrays of the wrong size are a bug in the caller, not bad input.
void check_array(const ArrayView& a, std::size_t tuples, std::string_view who, std::string_view what) {
  if (a.components < 1) {
    throw InternalError(fmt::format("{}: array '{}' has {} components", who, a.name, a.components));
  }
  if (a.size != tuples * static_cast<std::size_t>(a.components)) {
    throw InternalError(fmt::format("{}: array '{}' has {} values, expected {} ({} {} x {} components)", who, a.name,
                                    a.size, tuples * static_cast<std::size_t>(a.components), tuples, what,
                                    a.components));
  }
  if (a.size > 0 && a.data == nullptr) throw InternalError(fmt::format("{}: array '{}' has no data", who, a.name));
}

void check_extent(const Extent& e, std::string_view who) {
  for (int d = 0; d < 3; ++d) {
    if (e[2 * d + 1] < e[2 * d]) throw InternalError(fmt::format("{}: invalid extent {}", who, extent_text(e)));
  }
}

// An ascii DataArray: the tag, one tuple a line, the closing tag.
template <class T>
void append_ascii_values(std::string& out, const T* values, std::size_t size, int components) {
  const auto per_line = static_cast<std::size_t>(components);
  for (std::size_t k = 0; k < size; k += per_line) {
    out += "          ";
    for (std::size_t c = 0; c < per_line; ++c) {
      if (c > 0) out += ' ';
      append_value(out, values[k + c]);
    }
    out += '\n';
  }
}

std::string ascii_array_tag(DataType type, std::string_view name, int components) {
  std::string tag = fmt::format("        <DataArray type=\"{}\"", type_name(type));
  if (!name.empty()) tag += fmt::format(" Name=\"{}\"", xml_escape(name));
  if (components != 1) tag += fmt::format(" NumberOfComponents=\"{}\"", components);
  return tag + " format=\"ascii\">\n";
}

void append_ascii_array(std::string& out, const ArrayView& a) {
  out += ascii_array_tag(a.type, a.name, a.components);
  with_type(a.type, [&]<class T>(std::type_identity<T>) {
    append_ascii_values(out, static_cast<const T*>(a.data), a.size, a.components);
  });
  out += "        </DataArray>\n";
}

// Cells as VTK lists them: connectivity one cell a line, then the offsets one a line.
void append_cells(std::string& out, std::string_view element, const Cells& cells) {
  out += fmt::format("      <{}>\n", element);
  out += ascii_array_tag(DataType::Int64, "connectivity", 1);
  std::size_t begin = 0;
  for (const std::int64_t end : cells.offsets) {
    out += "          ";
    for (std::size_t k = begin; k < static_cast<std::size_t>(end); ++k) {
      if (k > begin) out += ' ';
      append_value(out, cells.connectivity[k]);
    }
    out += '\n';
    begin = static_cast<std::size_t>(end);
  }
  out += "        </DataArray>\n";
  out += ascii_array_tag(DataType::Int64, "offsets", 1);
  append_ascii_values(out, cells.offsets.data(), cells.offsets.size(), 1);
  out += fmt::format("        </DataArray>\n      </{}>\n", element);
}

void check_cells(const Cells& cells, std::size_t points, std::string_view element) {
  std::int64_t previous = 0;
  for (const std::int64_t end : cells.offsets) {
    if (end < previous || static_cast<std::uint64_t>(end) > cells.connectivity.size()) {
      throw InternalError(fmt::format("write_poly_data: {} offsets are not ascending within the {} indices", element,
                                      cells.connectivity.size()));
    }
    previous = end;
  }
  if (static_cast<std::size_t>(previous) != cells.connectivity.size()) {
    throw InternalError(fmt::format("write_poly_data: {} offsets end at {}, the connectivity has {} indices", element,
                                    previous, cells.connectivity.size()));
  }
  for (const std::int64_t p : cells.connectivity) {
    if (p < 0 || static_cast<std::uint64_t>(p) >= points) {
      throw InternalError(fmt::format("write_poly_data: {} name point {} of {}", element, p, points));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reader helpers: a small scanner for the XML header (VTK's own files are regular), the data
// decoded from appended raw/base64 or inline ascii/base64 arrays.

using text::is_space;
using text::trim;

// An integer of any of VTK's integer types: read as the widest type of its signedness, then
// range-checked (text::parse reads only the types std::from_chars and the engines use).
template <class Int>
std::optional<Int> parse_integer(std::string_view token) {
  using Wide = std::conditional_t<std::is_signed_v<Int>, long long, unsigned long long>;
  const std::optional<Wide> wide = text::parse<Wide>(token);
  if (!wide || *wide < static_cast<Wide>(std::numeric_limits<Int>::min()) ||
      *wide > static_cast<Wide>(std::numeric_limits<Int>::max()))
    return std::nullopt;
  return static_cast<Int>(*wide);
}

struct XmlTag {
  std::string name;
  bool closing = false;       // </name>
  bool self_closing = false;  // <name .../>
  std::map<std::string, std::string, std::less<>> attributes;
  std::size_t begin = 0, end = 0;  // the tag's text is [begin, end), end just past '>'

  const std::string* attribute(std::string_view key) const {
    const auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
};

std::string xml_unescape(std::string_view text) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&quot;", '"'}, {"&apos;", '\''}, {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}};
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (text[i] == '&') {
      for (const auto& [entity, ch] : kEntities) {
        if (text.substr(i, entity.size()) == entity) {
          out += ch;
          i += entity.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

// Reads bytes of one array, either straight from the file or through base64.
class RawBytes {
 public:
  explicit RawBytes(std::string_view data) : data_(data) {}
  bool read(std::uint8_t* out, std::size_t count) {
    if (count > data_.size() - pos_) return false;
    if (count > 0) std::memcpy(out, data_.data() + pos_, count);
    pos_ += count;
    return true;
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

// Decodes base64 in groups of four symbols; padding may end any group, so a header and its data
// encoded separately (as VTK writes them) or together both decode to the same bytes.
class Base64Bytes {
 public:
  explicit Base64Bytes(std::string_view text) : text_(text) {}
  bool read(std::uint8_t* out, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      if (next_ == available_ && !decode_group()) return false;
      out[k] = group_[next_++];
    }
    return true;
  }

 private:
  static int symbol_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  }

  bool decode_group() {
    char symbols[4];
    int count = 0;
    while (count < 4 && pos_ < text_.size()) {
      const char ch = text_[pos_++];
      if (is_space(ch)) continue;
      symbols[count++] = ch;
    }
    if (count < 4) return false;
    int values[4];
    int padding = 0;
    for (int s = 0; s < 4; ++s) {
      if (symbols[s] == '=' && s >= 2) {
        values[s] = 0;
        ++padding;
        continue;
      }
      if (padding > 0) return false;  // a symbol after '='
      values[s] = symbol_value(symbols[s]);
      if (values[s] < 0) return false;
    }
    const std::uint32_t bits = (static_cast<std::uint32_t>(values[0]) << 18) |
                               (static_cast<std::uint32_t>(values[1]) << 12) |
                               (static_cast<std::uint32_t>(values[2]) << 6) | static_cast<std::uint32_t>(values[3]);
    group_[0] = static_cast<std::uint8_t>(bits >> 16);
    group_[1] = static_cast<std::uint8_t>(bits >> 8);
    group_[2] = static_cast<std::uint8_t>(bits);
    available_ = 3 - padding;
    next_ = 0;
    return available_ > 0;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::uint8_t group_[3] = {};
  int available_ = 0, next_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Types

std::string_view type_name(DataType type) {
  const auto k = static_cast<std::size_t>(type);
  if (k >= std::size(kTypeNames)) throw InternalError(fmt::format("vtk: unknown DataType {}", k));
  return kTypeNames[k];
}

std::optional<DataType> parse_type(std::string_view name) {
  for (std::size_t k = 0; k < std::size(kTypeNames); ++k) {
    if (kTypeNames[k] == name) return static_cast<DataType>(k);
  }
  return std::nullopt;
}

std::size_t type_size(DataType type) {
  const auto k = static_cast<std::size_t>(type);
  if (k >= std::size(kTypeSizes)) throw InternalError(fmt::format("vtk: unknown DataType {}", k));
  return kTypeSizes[k];
}

std::vector<double> to_doubles(Values values) {
  return std::visit(
      [](auto& v) -> std::vector<double> {
        using T = typename std::remove_reference_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, double>) {
          return std::move(v);
        } else {
          std::vector<double> out(v.size());
          std::transform(v.begin(), v.end(), out.begin(), [](T x) { return static_cast<double>(x); });
          return out;
        }
      },
      values);
}

// ---------------------------------------------------------------------------------------------
// ImageData

std::array<std::size_t, 3> Image::dimensions() const {
  std::array<std::size_t, 3> n{};
  for (int d = 0; d < 3; ++d) {
    const auto first = static_cast<std::int64_t>(extent[2 * d]), last = static_cast<std::int64_t>(extent[2 * d + 1]);
    n[d] = last < first ? 0 : static_cast<std::size_t>(last - first + 1);
  }
  return n;
}

std::size_t Image::points() const {
  const auto n = dimensions();
  return n[0] * n[1] * n[2];
}

void write_image_data(const fs::path& path, const Image& image, const Attributes& point_data) {
  check_extent(image.extent, "write_image_data");
  const std::size_t points = image.points();
  for (const ArrayView& a : point_data.arrays) check_array(a, points, "write_image_data", "points");
  const std::string extent = extent_text(image.extent);
  std::string header = fmt::format(
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      "  <ImageData WholeExtent=\"{0}\" Origin=\"{1}\" Spacing=\"{2}\">\n"
      "    <Piece Extent=\"{0}\">\n"
      "      <PointData{3}>\n",
      extent, triple_text(image.origin), triple_text(image.spacing), scalars_attribute(point_data.scalars));
  // Each array in the appended section: its byte count (UInt64), then its bytes.
  std::uint64_t offset = 0;
  for (const ArrayView& a : point_data.arrays) {
    header += fmt::format(
        "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" format=\"appended\" offset=\"{}\"/>\n",
        type_name(a.type), xml_escape(a.name), a.components, offset);
    offset += sizeof(std::uint64_t) + static_cast<std::uint64_t>(a.size) * type_size(a.type);
  }
  header +=
      "      </PointData>\n"
      "      <CellData>\n"
      "      </CellData>\n"
      "    </Piece>\n"
      "  </ImageData>\n"
      "  <AppendedData encoding=\"raw\">\n"
      "   _";
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const ArrayView& a : point_data.arrays) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(a.size) * type_size(a.type);
    out.write(reinterpret_cast<const char*>(&bytes), sizeof bytes);
    out.write(static_cast<const char*>(a.data), static_cast<std::streamsize>(bytes));
  }
  out << "\n  </AppendedData>\n</VTKFile>\n";
  file.commit();
}

void write_parallel_image_data(const fs::path& path, const Image& whole, const std::vector<ArraySpec>& point_arrays,
                               std::string_view scalars, const std::vector<ImagePiece>& pieces, int ghost_level) {
  check_extent(whole.extent, "write_parallel_image_data");
  for (const ImagePiece& piece : pieces) {
    check_extent(piece.extent, "write_parallel_image_data");
    for (int d = 0; d < 3; ++d) {
      if (piece.extent[2 * d] < whole.extent[2 * d] || piece.extent[2 * d + 1] > whole.extent[2 * d + 1]) {
        throw InternalError(fmt::format("write_parallel_image_data: piece {} ({}) lies outside the extent {}",
                                        piece.source, extent_text(piece.extent), extent_text(whole.extent)));
      }
    }
  }
  std::string text = fmt::format(
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      "  <PImageData WholeExtent=\"{}\" GhostLevel=\"{}\" Origin=\"{}\" Spacing=\"{}\">\n"
      "    <PPointData{}>\n",
      extent_text(whole.extent), ghost_level, triple_text(whole.origin), triple_text(whole.spacing),
      scalars_attribute(scalars));
  for (const ArraySpec& a : point_arrays) {
    text += fmt::format("      <PDataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\"/>\n", type_name(a.type),
                        xml_escape(a.name), a.components);
  }
  text += "    </PPointData>\n";
  for (const ImagePiece& piece : pieces) {
    text +=
        fmt::format("    <Piece Extent=\"{}\" Source=\"{}\"/>\n", extent_text(piece.extent), xml_escape(piece.source));
  }
  text += "  </PImageData>\n</VTKFile>\n";
  write_file_atomic(path, text);
}

// ---------------------------------------------------------------------------------------------
// PolyData

std::size_t PolyData::cell_count() const {
  std::size_t n = 0;
  for (const auto* cells : {&verts, &lines, &polys}) n += *cells ? (*cells)->offsets.size() : 0;
  return n;
}

void write_poly_data(const fs::path& path, const PolyData& poly) {
  if (poly.points.size() % 3 != 0) {
    throw InternalError(fmt::format("write_poly_data: {} point coordinates, not x y z triples", poly.points.size()));
  }
  const std::size_t points = poly.point_count(), cells = poly.cell_count();
  const std::pair<std::string_view, const std::optional<Cells>*> blocks[] = {
      {"Verts", &poly.verts}, {"Lines", &poly.lines}, {"Polys", &poly.polys}};
  for (const auto& [element, block] : blocks) {
    if (*block) check_cells(**block, points, element);
  }
  for (const ArrayView& a : poly.point_data.arrays) check_array(a, points, "write_poly_data", "points");
  for (const ArrayView& a : poly.cell_data.arrays) check_array(a, cells, "write_poly_data", "cells");
  const auto count = [](const std::optional<Cells>& c) { return c ? c->offsets.size() : std::size_t{0}; };

  std::string text =
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      "  <PolyData>\n";
  text += fmt::format(
      "    <Piece NumberOfPoints=\"{}\" NumberOfVerts=\"{}\" NumberOfLines=\"{}\" NumberOfStrips=\"0\" "
      "NumberOfPolys=\"{}\">\n",
      points, count(poly.verts), count(poly.lines), count(poly.polys));
  text += "      <Points>\n";
  text += ascii_array_tag(DataType::Float64, "", 3);
  append_ascii_values(text, poly.points.data(), poly.points.size(), 3);
  text += "        </DataArray>\n      </Points>\n";
  for (const auto& [element, block] : blocks) {
    if (*block) append_cells(text, element, **block);
  }
  const std::pair<std::string_view, const Attributes*> data[] = {{"PointData", &poly.point_data},
                                                                 {"CellData", &poly.cell_data}};
  for (const auto& [element, attributes] : data) {
    if (attributes->arrays.empty()) continue;
    text += fmt::format("      <{}{}>\n", element, scalars_attribute(attributes->scalars));
    for (const ArrayView& a : attributes->arrays) append_ascii_array(text, a);
    text += fmt::format("      </{}>\n", element);
  }
  text += "    </Piece>\n  </PolyData>\n</VTKFile>\n";
  write_file_atomic(path, text);
}

// ---------------------------------------------------------------------------------------------
// Collections

void write_collection(const fs::path& path, const std::vector<CollectionEntry>& entries) {
  std::string text =
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
      "  <Collection>\n";
  for (const auto& e : entries) {
    text += fmt::format("    <DataSet timestep=\"{}\" group=\"{}\" part=\"{}\" file=\"{}\"/>\n", exact(e.time),
                        xml_escape(e.group), e.part, xml_escape(e.file));
  }
  text += "  </Collection>\n</VTKFile>\n";
  write_file_atomic(path, text);
}

// ---------------------------------------------------------------------------------------------
// Reading ImageData

struct ImageDataReader::Impl {
  // What the reader keeps of a point array beside its ArrayInfo.
  struct Raw {
    std::string format;
    std::string components = "1";  // NumberOfComponents as written, for messages
    std::optional<std::string> offset;
    std::string_view inline_text;
    std::size_t tag_pos = 0;
  };

  std::string file;
  std::string content;
  ImageDataInfo info;
  std::vector<Raw> raw;  // parallel to info.point_arrays
  std::size_t appended_pos = std::string::npos;
  bool seen_vtkfile = false, seen_image = false;
  std::size_t header_size = 4;  // VTK's default header_type is UInt32
  std::string whole_extent;

  explicit Impl(const fs::path& path) : file(path.string()), content(read_whole_file(path, file)) {
    appended_pos = content.find("<AppendedData");
    scan_header(appended_pos == std::string::npos ? content.size() : appended_pos);
  }

  std::size_t line_at(std::size_t pos) const {
    return 1 + static_cast<std::size_t>(
                   std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
  }

  UserError error_at(std::size_t pos, std::string_view field, std::string_view problem) const {
    return input_error(file, line_at(pos), field, problem);
  }

  // "(the N nodes of the NXxNYxNZ grid ...)": how messages name the image's points.
  std::string grid_text() const {
    const auto n = info.image.dimensions();
    return fmt::format("{}x{}x{}", n[0], n[1], n[2]);
  }

  // The next element tag at or after `pos` and before `limit`; comments, <?...?> and <!...> are skipped.
  std::optional<XmlTag> next_tag(std::size_t& pos, std::size_t limit) const {
    const std::string_view text(content.data(), limit);
    while (true) {
      pos = text.find('<', pos);
      if (pos == std::string_view::npos) {
        pos = limit;
        return std::nullopt;
      }
      std::string_view skip_end;
      if (text.substr(pos, 4) == "<!--") {
        skip_end = "-->";
      } else if (text.substr(pos, 2) == "<?") {
        skip_end = "?>";
      } else if (text.substr(pos, 2) == "<!") {
        skip_end = ">";
      }
      if (!skip_end.empty()) {
        const std::size_t end = text.find(skip_end, pos + 2);
        if (end == std::string_view::npos) throw error_at(pos, "", "unterminated XML comment or declaration");
        pos = end + skip_end.size();
        continue;
      }
      XmlTag tag;
      tag.begin = pos;
      std::size_t i = pos + 1;
      if (i < limit && text[i] == '/') {
        tag.closing = true;
        ++i;
      }
      const std::size_t name_start = i;
      while (i < limit && !is_space(text[i]) && text[i] != '>' && text[i] != '/') ++i;
      tag.name = std::string(text.substr(name_start, i - name_start));
      if (tag.name.empty()) throw error_at(pos, "", "malformed XML tag");
      while (true) {
        while (i < limit && is_space(text[i])) ++i;
        if (i >= limit) throw error_at(tag.begin, "", fmt::format("unterminated XML tag <{}>", tag.name));
        if (text[i] == '>') {
          ++i;
          break;
        }
        if (text[i] == '/' && i + 1 < limit && text[i + 1] == '>') {
          tag.self_closing = true;
          i += 2;
          break;
        }
        const std::size_t key_start = i;
        while (i < limit && !is_space(text[i]) && text[i] != '=' && text[i] != '>' && text[i] != '/') ++i;
        const std::string key(text.substr(key_start, i - key_start));
        while (i < limit && is_space(text[i])) ++i;
        if (key.empty() || i >= limit || text[i] != '=') {
          throw error_at(tag.begin, "", fmt::format("malformed attribute in XML tag <{}>", tag.name));
        }
        ++i;
        while (i < limit && is_space(text[i])) ++i;
        if (i >= limit || (text[i] != '"' && text[i] != '\'')) {
          throw error_at(tag.begin, "", fmt::format("attribute {} of <{}> has no quoted value", key, tag.name));
        }
        const char quote = text[i];
        const std::size_t value_end = text.find(quote, i + 1);
        if (value_end == std::string_view::npos) {
          throw error_at(tag.begin, "", fmt::format("unterminated attribute {} of <{}>", key, tag.name));
        }
        tag.attributes[key] = xml_unescape(text.substr(i + 1, value_end - i - 1));
        i = value_end + 1;
      }
      tag.end = i;
      pos = i;
      return tag;
    }
  }

  void scan_header(std::size_t xml_end) {
    std::size_t pos = 0;
    bool in_point_data = false;
    int pieces = 0;
    while (const auto tag = next_tag(pos, xml_end)) {
      if (tag->closing) {
        if (tag->name == "PointData") in_point_data = false;
        continue;
      }
      if (tag->name == "VTKFile") {
        seen_vtkfile = true;
        read_vtkfile(*tag);
      } else if (tag->name == "ImageData") {
        seen_image = true;
        read_image(*tag);
      } else if (tag->name == "Piece") {
        if (++pieces > 1) {
          throw error_at(tag->begin, "", "more than one <Piece> (a partitioned image is not supported: save it whole)");
        }
        const std::string* extent = tag->attribute("Extent");
        if (extent != nullptr && text::split(*extent, text::Separator::Whitespace) != text::split(whole_extent, text::Separator::Whitespace)) {
          throw error_at(tag->begin, "Extent",
                         fmt::format("the Piece covers '{}' but WholeExtent is '{}' (save the whole image)", *extent,
                                     whole_extent));
        }
      } else if (tag->name == "PointData") {
        in_point_data = !tag->self_closing;
      } else if (tag->name == "DataArray" && in_point_data) {
        read_data_array(*tag, pos, xml_end);
      }
    }
    if (!seen_vtkfile) throw input_error(file, 0, "", "not a VTK XML file (no <VTKFile> element)");
    if (!seen_image) throw input_error(file, 0, "", "no <ImageData> element (expected a VTK ImageData .vti file)");
  }

  void read_vtkfile(const XmlTag& tag) {
    const std::string* type = tag.attribute("type");
    if (type == nullptr || *type != "ImageData") {
      throw error_at(tag.begin, "type",
                     fmt::format("expected a VTK ImageData file (VTKFile type=\"ImageData\"), got type=\"{}\"",
                                 type == nullptr ? "" : *type));
    }
    if (const std::string* compressor = tag.attribute("compressor"); compressor != nullptr && !compressor->empty()) {
      throw error_at(tag.begin, "compressor",
                     "compressed VTI is not supported; save uncompressed (ParaView: Data Mode Appended/Binary, "
                     "Compressor None)");
    }
    if (const std::string* order = tag.attribute("byte_order"); order != nullptr && *order != "LittleEndian") {
      throw error_at(tag.begin, "byte_order",
                     fmt::format("byte_order \"{}\" is not supported (expected LittleEndian)", *order));
    }
    if (const std::string* header = tag.attribute("header_type")) {
      if (*header == "UInt32") {
        header_size = 4;
      } else if (*header == "UInt64") {
        header_size = 8;
      } else {
        throw error_at(tag.begin, "header_type", fmt::format("expected UInt32 or UInt64, got \"{}\"", *header));
      }
    }
  }

  // Three numbers of attribute `key` of <ImageData> (`fallback` when absent).
  std::array<double, 3> read_triple(const XmlTag& tag, std::string_view key, std::array<double, 3> fallback,
                                    bool positive) const {
    const std::string* value = tag.attribute(key);
    if (value == nullptr) return fallback;
    const auto tokens = text::split(*value, text::Separator::Whitespace);
    bool ok = tokens.size() == 3;
    for (std::size_t k = 0; ok && k < 3; ++k) {
      const auto v = text::parse<double>(tokens[k]);
      ok = v && std::isfinite(*v) && (!positive || *v > 0);
      if (ok) fallback[k] = *v;
    }
    if (!ok) {
      throw error_at(tag.begin, key,
                     fmt::format("expected three {}numbers, got '{}'", positive ? "positive " : "", *value));
    }
    return fallback;
  }

  void read_image(const XmlTag& tag) {
    info.line = line_at(tag.begin);
    info.attributes = tag.attributes;
    const std::string* extent = tag.attribute("WholeExtent");
    if (extent == nullptr) throw error_at(tag.begin, "WholeExtent", "missing from <ImageData>");
    const auto tokens = text::split(*extent, text::Separator::Whitespace);
    std::array<long long, 6> e{};
    bool ok = tokens.size() == 6;
    for (std::size_t k = 0; ok && k < 6; ++k) {
      const auto v = parse_integer<long long>(tokens[k]);
      ok = v.has_value();
      if (ok) e[k] = *v;
    }
    if (!ok) throw error_at(tag.begin, "WholeExtent", fmt::format("expected six integers, got '{}'", *extent));
    // VTK's extents are ints; so is each axis's point count.
    constexpr long long kIntMin = std::numeric_limits<int>::min(), kIntMax = std::numeric_limits<int>::max();
    for (int d = 0; d < 3; ++d) {
      const long long first = e[2 * d], last = e[2 * d + 1];
      if (first < kIntMin || last > kIntMax || last < first || last - first >= kIntMax) {
        throw error_at(tag.begin, "WholeExtent", fmt::format("invalid extent '{}'", *extent));
      }
    }
    for (int k = 0; k < 6; ++k) info.image.extent[k] = static_cast<int>(e[k]);
    const auto n = info.image.dimensions();
    if (static_cast<double>(n[0]) * static_cast<double>(n[1]) * static_cast<double>(n[2]) > 1e13) {
      throw error_at(tag.begin, "WholeExtent", fmt::format("the grid '{}' is too large", *extent));
    }
    whole_extent = *extent;
    info.image.spacing = read_triple(tag, "Spacing", {1, 1, 1}, true);
    info.image.origin = read_triple(tag, "Origin", {0, 0, 0}, false);
  }

  void read_data_array(const XmlTag& tag, std::size_t& pos, std::size_t xml_end) {
    const std::string* name = tag.attribute("Name");
    if (name == nullptr) return;  // an unnamed array cannot be asked for
    ArrayInfo a;
    Raw r;
    a.name = *name;
    a.line = line_at(tag.begin);
    r.tag_pos = tag.begin;
    if (const std::string* type = tag.attribute("type")) a.type = *type;
    if (const std::string* format = tag.attribute("format")) r.format = *format;
    if (const std::string* components = tag.attribute("NumberOfComponents")) r.components = *components;
    const auto components = parse_integer<int>(trim(r.components));
    a.components = components && *components > 0 ? *components : 0;
    if (const std::string* offset = tag.attribute("offset")) r.offset = *offset;
    if (!tag.self_closing) {
      const std::size_t end = content.find('<', tag.end);
      const std::size_t stop = end == std::string::npos || end > xml_end ? xml_end : end;
      r.inline_text = std::string_view(content).substr(tag.end, stop - tag.end);
      pos = stop;
    }
    for (const auto& other : info.point_arrays) {
      if (other.name == a.name) {
        throw error_at(tag.begin, a.name, fmt::format("<PointData> has two arrays named '{}'", a.name));
      }
    }
    info.point_arrays.push_back(std::move(a));
    raw.push_back(std::move(r));
  }

  std::size_t index_of(const ArrayInfo& a) const {
    const auto* first = info.point_arrays.data();
    if (&a >= first && &a < first + info.point_arrays.size()) return static_cast<std::size_t>(&a - first);
    for (std::size_t k = 0; k < info.point_arrays.size(); ++k) {
      if (info.point_arrays[k].name == a.name) return k;
    }
    throw InternalError(fmt::format("vtk: {} has no point array '{}'", file, a.name));
  }

  template <class T>
  std::vector<T> decode(const ArrayInfo& a, const Raw& r, int components) const {
    const std::size_t count = info.image.points() * static_cast<std::size_t>(components);
    if (r.format == "ascii") return decode_ascii<T>(a, r, components, count);
    if (r.format == "binary") {
      Base64Bytes source(r.inline_text);
      return decode_binary<T>(source, a, r, components, count);
    }
    if (r.format != "appended") {
      throw error_at(r.tag_pos, a.name,
                     fmt::format("format \"{}\" is not supported (expected appended, binary or ascii)", r.format));
    }
    if (!r.offset) throw error_at(r.tag_pos, a.name, "an appended DataArray without an offset attribute");
    const auto offset = parse_integer<std::uint64_t>(trim(*r.offset));
    if (!offset) throw error_at(r.tag_pos, a.name, fmt::format("offset must be an integer, got '{}'", *r.offset));
    if (appended_pos == std::string::npos) {
      throw error_at(r.tag_pos, a.name, "the array is appended but the file has no <AppendedData> section");
    }
    std::size_t pos = appended_pos;
    const auto tag = next_tag(pos, content.size());
    const std::string* encoding = tag ? tag->attribute("encoding") : nullptr;
    const std::string enc = encoding == nullptr ? "" : *encoding;
    if (enc != "raw" && enc != "base64") {
      throw error_at(appended_pos, "encoding",
                     fmt::format("<AppendedData> encoding \"{}\" is not supported (expected raw or base64)", enc));
    }
    while (pos < content.size() && is_space(content[pos])) ++pos;
    if (pos >= content.size() || content[pos] != '_') {
      throw error_at(appended_pos, "", "<AppendedData> must be followed by '_' and the data");
    }
    const std::size_t data_start = pos + 1;
    if (*offset > content.size() - data_start) {
      throw input_error(file, 0, a.name,
                        fmt::format("truncated: the array's offset {} lies beyond the end of the file", *offset));
    }
    const std::string_view data = std::string_view(content).substr(data_start + *offset);
    if (enc == "raw") {
      RawBytes source(data);
      return decode_binary<T>(source, a, r, components, count);
    }
    Base64Bytes source(data);
    return decode_binary<T>(source, a, r, components, count);
  }

  template <class T, class Source>
  std::vector<T> decode_binary(Source& source, const ArrayInfo& a, const Raw& r, int components,
                               std::size_t count) const {
    const auto truncated = [&] {
      return input_error(file, 0, a.name, "truncated: the array's data ends early (or its base64 text is malformed)");
    };
    std::uint8_t header[8] = {};
    if (!source.read(header, header_size)) throw truncated();
    std::uint64_t bytes = 0;
    for (std::size_t k = header_size; k-- > 0;) bytes = (bytes << 8) | header[k];
    const std::uint64_t expected = static_cast<std::uint64_t>(count) * sizeof(T);
    if (bytes != expected) {
      const std::string per_node = components == 1 ? std::string() : fmt::format(" x {} components", components);
      throw error_at(r.tag_pos, a.name,
                     fmt::format("the array holds {} bytes, expected {} ({} nodes of the {} grid{} x {} bytes)", bytes,
                                 expected, info.image.points(), grid_text(), per_node, sizeof(T)));
    }
    std::vector<T> values(count);
    if (!source.read(reinterpret_cast<std::uint8_t*>(values.data()), expected)) throw truncated();
    return values;
  }

  template <class T>
  std::vector<T> decode_ascii(const ArrayInfo& a, const Raw& r, int components, std::size_t count) const {
    const auto tokens = text::split(r.inline_text, text::Separator::Whitespace);
    if (tokens.size() != count) {
      const std::string per_node =
          components == 1 ? std::string("the") : fmt::format("{} components at each of the", components);
      throw error_at(r.tag_pos, a.name,
                     fmt::format("the ascii array has {} values, expected {} ({} {} grid's nodes)", tokens.size(),
                                 count, per_node, grid_text()));
    }
    std::vector<T> values(count);
    for (std::size_t k = 0; k < count; ++k) {
      const auto bad = [&](std::string_view expected) {
        const std::size_t at = static_cast<std::size_t>(tokens[k].data() - content.data());
        return error_at(at, a.name, fmt::format("expected {}, got '{}'", expected, tokens[k]));
      };
      if constexpr (std::is_floating_point_v<T>) {
        // Float32 text is rounded to float, as VTK stores it.
        const auto v = text::parse<double>(tokens[k]);
        if (!v) throw bad("a number");
        values[k] = static_cast<T>(*v);
      } else {
        const auto v = parse_integer<T>(tokens[k]);
        if (!v) throw bad(fmt::format("an integer ({})", type_name(data_type_of<T>())));
        values[k] = *v;
      }
    }
    return values;
  }

  // Defined after decode: clang 14 leaves a member template that a templated lambda calls ahead of
  // its definition uninstantiated (an undefined reference at link time; the fuzz preset builds with it).
  Values read(const ArrayInfo& a, int components) const {
    const Raw& r = raw[index_of(a)];
    const auto type = parse_type(a.type);
    if (!type) {
      throw error_at(r.tag_pos, a.name,
                     fmt::format("type \"{}\" is not supported (expected {} or {})", a.type,
                                 fmt::join(std::begin(kTypeNames), std::end(kTypeNames) - 1, ", "),
                                 kTypeNames[std::size(kTypeNames) - 1]));
    }
    if (components < 1 || a.components != components) {
      throw error_at(r.tag_pos, a.name,
                     fmt::format("NumberOfComponents is {}, expected {}{}", r.components, components,
                                 components == 1 ? " (a scalar point array)" : ""));
    }
    return with_type(*type, [&]<class T>(std::type_identity<T>) -> Values { return decode<T>(a, r, components); });
  }
};

ImageDataReader::ImageDataReader(const fs::path& path) : impl_(std::make_unique<Impl>(path)) {}
ImageDataReader::~ImageDataReader() = default;
ImageDataReader::ImageDataReader(ImageDataReader&&) noexcept = default;
ImageDataReader& ImageDataReader::operator=(ImageDataReader&&) noexcept = default;

const std::string& ImageDataReader::file() const { return impl_->file; }
const ImageDataInfo& ImageDataReader::info() const { return impl_->info; }

const ArrayInfo* ImageDataReader::find(std::string_view name) const {
  for (const ArrayInfo& a : impl_->info.point_arrays) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Values ImageDataReader::read(const ArrayInfo& array, int components) const { return impl_->read(array, components); }

std::vector<double> ImageDataReader::read_doubles(const ArrayInfo& array, int components) const {
  return to_doubles(read(array, components));
}

UserError ImageDataReader::error(std::size_t line, std::string_view field, std::string_view problem) const {
  return input_error(impl_->file, line, field, problem);
}

ImageDataFile read_image_data(const fs::path& path) {
  const ImageDataReader reader(path);
  ImageDataFile out;
  out.info = reader.info();
  for (const ArrayInfo& a : reader.info().point_arrays) {
    out.point_data.emplace_back(a.name, reader.read(a, std::max(a.components, 1)));
  }
  return out;
}

}  // namespace simkit::vtk
