// angio files: VTK ImageData (.vti/.pvd), series.csv, Problem JSON, checkpoints, quick-look images.
#include "simkit/angio/io.hpp"
#include "simkit/angio/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "simkit/core/build_info.hpp"
#include "simkit/core/error.hpp"
#include "core/image.hpp"
#include "core/input.hpp"
#include "core/output.hpp"
#include "core/svg.hpp"

namespace simkit::angio {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Both binary formats store little-endian values and are written and read by copying memory.
static_assert(std::endian::native == std::endian::little, "angio's binary writers assume a little-endian host");

constexpr const char* kFieldNames[3] = {"n", "f", "c"};

template <class T>
std::array<const std::vector<T>*, 3> arrays_of(const Fields<T>& fields) {
  return {&fields.n, &fields.f, &fields.c};
}

template <class T>
std::array<std::vector<T>*, 3> arrays_of(Fields<T>& fields) {
  return {&fields.n, &fields.f, &fields.c};
}

// A caller passing fields of the wrong size is a bug in simkit, not bad input.
template <class T>
void check_field_sizes(const Grid& grid, const Fields<T>& fields, std::string_view who) {
  const auto arrays = arrays_of(fields);
  for (int a = 0; a < 3; ++a) {
    if (arrays[a]->size() != grid.nodes()) {
      throw InternalError(fmt::format("{}: field '{}' has {} values, the {}x{}x{} grid has {} nodes", who,
                                      kFieldNames[a], arrays[a]->size(), grid.nx, grid.ny, grid.nz, grid.nodes()));
    }
  }
}

// Exact round trip for doubles (17 significant digits); NaN prints as "nan".
std::string exact(double x) { return fmt::format("{:.17g}", x); }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_whitespace(std::string_view text) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) tokens.push_back(text.substr(start, i - start));
  }
  return tokens;
}

// The whole token must be a number ("nan" and "inf" included: callers decide about them).
std::optional<double> parse_double(std::string_view token) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-') token.remove_prefix(1);
  double value = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

template <class Int>
std::optional<Int> parse_integer(std::string_view token) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-') token.remove_prefix(1);
  Int value = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end) return std::nullopt;
  return value;
}

// ---------------------------------------------------------------------------------------------
// VTK XML ImageData reader: a small scanner for the XML header (VTK's own files are regular), the
// data decoded from appended raw/base64 or inline ascii/base64 arrays.

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
    std::memcpy(out, data_.data() + pos_, count);
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

struct ArrayInfo {
  std::string name, type, format;
  std::string components = "1";
  std::optional<std::string> offset;
  std::string_view inline_text;
  std::size_t tag_pos = 0;
};

class VtiReader {
 public:
  VtiReader(const fs::path& path) : file_(path.string()), content_(read_whole_file(path, file_)) {}

  LoadedFields read() {
    const std::size_t appended_pos = content_.find("<AppendedData");
    const std::size_t xml_end = appended_pos == std::string::npos ? content_.size() : appended_pos;
    scan_header(xml_end);

    std::vector<std::string> found;
    for (const auto& a : arrays_) found.push_back(a.name);
    LoadedFields out;
    out.grid = grid_;
    auto targets = arrays_of(out.fields);
    for (int a = 0; a < 3; ++a) {
      const auto it = std::find_if(arrays_.begin(), arrays_.end(),
                                   [&](const ArrayInfo& info) { return info.name == kFieldNames[a]; });
      if (it == arrays_.end()) {
        throw input_error(
            file_, 0, kFieldNames[a],
            fmt::format("no point array named '{}' in <PointData> (found: {}); n, f and c are required", kFieldNames[a],
                        found.empty() ? "none" : fmt::format("{}", fmt::join(found, ", "))));
      }
      *targets[a] = decode(*it, appended_pos);
      check_finite(*targets[a], kFieldNames[a]);
    }
    return out;
  }

 private:
  std::size_t line_at(std::size_t pos) const {
    return 1 + static_cast<std::size_t>(
                   std::count(content_.begin(), content_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
  }

  UserError error_at(std::size_t pos, std::string_view field, std::string_view problem) const {
    return input_error(file_, line_at(pos), field, problem);
  }

  // The next element tag at or after `pos` and before `limit`; comments, <?...?> and <!...> are skipped.
  std::optional<XmlTag> next_tag(std::size_t& pos, std::size_t limit) const {
    const std::string_view text(content_.data(), limit);
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
    std::string whole_extent;
    while (const auto tag = next_tag(pos, xml_end)) {
      if (tag->closing) {
        if (tag->name == "PointData") in_point_data = false;
        continue;
      }
      if (tag->name == "VTKFile") {
        seen_vtkfile_ = true;
        read_vtkfile(*tag);
      } else if (tag->name == "ImageData") {
        seen_image_ = true;
        whole_extent = read_image_data(*tag);
      } else if (tag->name == "Piece") {
        if (++pieces > 1) {
          throw error_at(tag->begin, "", "more than one <Piece> (a partitioned image is not supported: save it whole)");
        }
        const std::string* extent = tag->attribute("Extent");
        if (extent != nullptr && split_whitespace(*extent) != split_whitespace(whole_extent)) {
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
    if (!seen_vtkfile_) throw input_error(file_, 0, "", "not a VTK XML file (no <VTKFile> element)");
    if (!seen_image_) throw input_error(file_, 0, "", "no <ImageData> element (expected a VTK ImageData .vti file)");
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
        header_size_ = 4;
      } else if (*header == "UInt64") {
        header_size_ = 8;
      } else {
        throw error_at(tag.begin, "header_type", fmt::format("expected UInt32 or UInt64, got \"{}\"", *header));
      }
    }
  }

  // Sets grid_ from WholeExtent and Spacing; returns the WholeExtent text. Origin and Direction are
  // ignored: the model's box always starts at 0 and its axes are the grid's.
  std::string read_image_data(const XmlTag& tag) {
    const std::string* extent = tag.attribute("WholeExtent");
    if (extent == nullptr) throw error_at(tag.begin, "WholeExtent", "missing from <ImageData>");
    const auto tokens = split_whitespace(*extent);
    std::array<long long, 6> e{};
    bool ok = tokens.size() == 6;
    for (std::size_t k = 0; ok && k < 6; ++k) {
      const auto v = parse_integer<long long>(tokens[k]);
      ok = v.has_value();
      if (ok) e[k] = *v;
    }
    if (!ok) throw error_at(tag.begin, "WholeExtent", fmt::format("expected six integers, got '{}'", *extent));
    if (e[0] != 0 || e[2] != 0 || e[4] != 0) {
      throw error_at(tag.begin, "WholeExtent",
                     fmt::format("must start at 0 0 0 (x0 x1 y0 y1 z0 z1 with x0 = y0 = z0 = 0), got '{}'", *extent));
    }
    for (int d = 0; d < 3; ++d) {
      if (e[2 * d + 1] < 0 || e[2 * d + 1] >= std::numeric_limits<int>::max()) {
        throw error_at(tag.begin, "WholeExtent", fmt::format("invalid extent '{}'", *extent));
      }
    }
    if (static_cast<double>(e[1] + 1) * static_cast<double>(e[3] + 1) * static_cast<double>(e[5] + 1) > 1e13) {
      throw error_at(tag.begin, "WholeExtent", fmt::format("the grid '{}' is too large", *extent));
    }
    grid_.nx = static_cast<int>(e[1] + 1);
    grid_.ny = static_cast<int>(e[3] + 1);
    grid_.nz = static_cast<int>(e[5] + 1);

    std::array<double, 3> spacing{1, 1, 1};  // VTK's default
    if (const std::string* text = tag.attribute("Spacing")) {
      const auto sp = split_whitespace(*text);
      ok = sp.size() == 3;
      for (std::size_t k = 0; ok && k < 3; ++k) {
        const auto v = parse_double(sp[k]);
        ok = v && std::isfinite(*v) && *v > 0;
        if (ok) spacing[k] = *v;
      }
      if (!ok) throw error_at(tag.begin, "Spacing", fmt::format("expected three positive numbers, got '{}'", *text));
    }
    // Only the axes with more than one node have a spacing that matters (z of a 2D grid does not).
    const int counts[3] = {grid_.nx, grid_.ny, grid_.nz};
    std::optional<double> h;
    for (int d = 0; d < 3; ++d) {
      if (counts[d] < 2) continue;
      if (!h) {
        h = spacing[d];
      } else if (std::abs(spacing[d] - *h) > 1e-12 * *h) {
        throw error_at(
            tag.begin, "Spacing",
            fmt::format("must be equal along every axis with more than one node, got '{}'", *tag.attribute("Spacing")));
      }
    }
    grid_.h = h.value_or(spacing[0]);
    return *extent;
  }

  void read_data_array(const XmlTag& tag, std::size_t& pos, std::size_t xml_end) {
    ArrayInfo info;
    info.tag_pos = tag.begin;
    const std::string* name = tag.attribute("Name");
    if (name == nullptr) return;  // unnamed arrays cannot be n, f or c
    info.name = *name;
    if (const std::string* type = tag.attribute("type")) info.type = *type;
    if (const std::string* format = tag.attribute("format")) info.format = *format;
    if (const std::string* components = tag.attribute("NumberOfComponents")) info.components = *components;
    if (const std::string* offset = tag.attribute("offset")) info.offset = *offset;
    if (!tag.self_closing) {
      const std::size_t end = content_.find('<', tag.end);
      const std::size_t stop = end == std::string::npos || end > xml_end ? xml_end : end;
      info.inline_text = std::string_view(content_).substr(tag.end, stop - tag.end);
      pos = stop;
    }
    for (const auto& a : arrays_) {
      if (a.name == info.name) {
        throw error_at(tag.begin, info.name, fmt::format("<PointData> has two arrays named '{}'", info.name));
      }
    }
    arrays_.push_back(std::move(info));
  }

  std::vector<double> decode(const ArrayInfo& a, std::size_t appended_pos) const {
    std::size_t value_size = 0;
    if (a.type == "Float32") {
      value_size = 4;
    } else if (a.type == "Float64") {
      value_size = 8;
    } else {
      throw error_at(a.tag_pos, a.name,
                     fmt::format("type \"{}\" is not supported (expected Float32 or Float64)", a.type));
    }
    if (trim(a.components) != "1") {
      throw error_at(a.tag_pos, a.name,
                     fmt::format("NumberOfComponents is {}, expected 1 (a scalar point array)", a.components));
    }
    const std::size_t nodes = grid_.nodes();
    if (a.format == "ascii") return decode_ascii(a, value_size);
    if (a.format == "binary") {
      Base64Bytes source(a.inline_text);
      return decode_binary(source, a, value_size, nodes);
    }
    if (a.format != "appended") {
      throw error_at(a.tag_pos, a.name,
                     fmt::format("format \"{}\" is not supported (expected appended, binary or ascii)", a.format));
    }
    if (!a.offset) throw error_at(a.tag_pos, a.name, "an appended DataArray without an offset attribute");
    const auto offset = parse_integer<std::uint64_t>(trim(*a.offset));
    if (!offset) throw error_at(a.tag_pos, a.name, fmt::format("offset must be an integer, got '{}'", *a.offset));
    if (appended_pos == std::string::npos) {
      throw error_at(a.tag_pos, a.name, "the array is appended but the file has no <AppendedData> section");
    }
    std::size_t pos = appended_pos;
    const auto tag = next_tag(pos, content_.size());
    const std::string* encoding = tag ? tag->attribute("encoding") : nullptr;
    const std::string enc = encoding == nullptr ? "" : *encoding;
    if (enc != "raw" && enc != "base64") {
      throw error_at(appended_pos, "encoding",
                     fmt::format("<AppendedData> encoding \"{}\" is not supported (expected raw or base64)", enc));
    }
    while (pos < content_.size() && is_space(content_[pos])) ++pos;
    if (pos >= content_.size() || content_[pos] != '_') {
      throw error_at(appended_pos, "", "<AppendedData> must be followed by '_' and the data");
    }
    const std::size_t data_start = pos + 1;
    if (*offset > content_.size() - data_start) {
      throw input_error(file_, 0, a.name,
                        fmt::format("truncated: the array's offset {} lies beyond the end of the file", *offset));
    }
    const std::string_view data = std::string_view(content_).substr(data_start + *offset);
    if (enc == "raw") {
      RawBytes source(data);
      return decode_binary(source, a, value_size, nodes);
    }
    Base64Bytes source(data);
    return decode_binary(source, a, value_size, nodes);
  }

  template <class Source>
  std::vector<double> decode_binary(Source& source, const ArrayInfo& a, std::size_t value_size,
                                    std::size_t nodes) const {
    const auto truncated = [&] {
      return input_error(file_, 0, a.name, "truncated: the array's data ends early (or its base64 text is malformed)");
    };
    std::uint8_t header[8] = {};
    if (!source.read(header, header_size_)) throw truncated();
    std::uint64_t bytes = 0;
    for (std::size_t k = header_size_; k-- > 0;) bytes = (bytes << 8) | header[k];
    const std::uint64_t expected = static_cast<std::uint64_t>(nodes) * value_size;
    if (bytes != expected) {
      throw error_at(a.tag_pos, a.name,
                     fmt::format("the array holds {} bytes, expected {} ({} nodes of the {}x{}x{} grid x {} bytes)",
                                 bytes, expected, nodes, grid_.nx, grid_.ny, grid_.nz, value_size));
    }
    std::vector<double> values(nodes);
    if (value_size == 8) {
      if (!source.read(reinterpret_cast<std::uint8_t*>(values.data()), expected)) throw truncated();
    } else {
      std::vector<float> floats(nodes);
      if (!source.read(reinterpret_cast<std::uint8_t*>(floats.data()), expected)) throw truncated();
      std::copy(floats.begin(), floats.end(), values.begin());
    }
    return values;
  }

  std::vector<double> decode_ascii(const ArrayInfo& a, std::size_t value_size) const {
    const auto tokens = split_whitespace(a.inline_text);
    const std::size_t nodes = grid_.nodes();
    if (tokens.size() != nodes) {
      throw error_at(a.tag_pos, a.name,
                     fmt::format("the ascii array has {} values, expected {} (the {}x{}x{} grid's nodes)",
                                 tokens.size(), nodes, grid_.nx, grid_.ny, grid_.nz));
    }
    std::vector<double> values(nodes);
    for (std::size_t k = 0; k < nodes; ++k) {
      const auto v = parse_double(tokens[k]);
      if (!v) {
        const std::size_t at = static_cast<std::size_t>(tokens[k].data() - content_.data());
        throw error_at(at, a.name, fmt::format("expected a number, got '{}'", tokens[k]));
      }
      values[k] = value_size == 4 ? static_cast<double>(static_cast<float>(*v)) : *v;
    }
    return values;
  }

  void check_finite(const std::vector<double>& values, std::string_view name) const {
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (!std::isfinite(values[k])) {
        const std::size_t nx = static_cast<std::size_t>(grid_.nx), ny = static_cast<std::size_t>(grid_.ny);
        throw input_error(file_, 0, name,
                          fmt::format("non-finite value at node ({}, {}, {})", k % nx, (k / nx) % ny, k / (nx * ny)));
      }
    }
  }

  std::string file_;
  std::string content_;
  bool seen_vtkfile_ = false, seen_image_ = false;
  std::size_t header_size_ = 4;  // VTK's default header_type is UInt32
  Grid grid_;
  std::vector<ArrayInfo> arrays_;
};

// ---------------------------------------------------------------------------------------------
// Problem JSON.

const char* form_name(Form form) { return form == Form::Flux ? "flux" : "expanded"; }
const char* precision_name(Precision p) { return p == Precision::Fp64 ? "fp64" : "fp32"; }
const char* taf_name(InitialTaf taf) { return taf == InitialTaf::Tumour ? "tumour" : "linear"; }

class JsonReader {
 public:
  explicit JsonReader(std::string source) : source_(std::move(source)) {}

  using Handler = std::function<void(const json&, const std::string&)>;

  // Calls the handler of every key of the object at `path`; unknown keys are errors.
  void object(const json& j, const std::string& path,
              const std::vector<std::pair<std::string, Handler>>& handlers) const {
    if (!j.is_object()) throw fail(path, expected("an object", j));
    for (auto item = j.begin(); item != j.end(); ++item) {
      const std::string& key = item.key();
      const json& value = item.value();
      const std::string where = path.empty() ? key : path + "." + key;
      const auto it = std::find_if(handlers.begin(), handlers.end(), [&](const auto& h) { return h.first == key; });
      if (it == handlers.end()) {
        std::vector<std::string> known;
        for (const auto& h : handlers) known.push_back(h.first);
        throw fail(where, fmt::format("unknown key (expected one of: {})", fmt::join(known, ", ")));
      }
      it->second(value, where);
    }
  }

  double number(const json& j, const std::string& where) const {
    if (!j.is_number()) throw fail(where, expected("a number", j));
    return j.get<double>();
  }

  std::int64_t int64(const json& j, const std::string& where) const {
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw fail(where, fmt::format("{} is too large (at most 2^63 - 1)", v));
      }
      return static_cast<std::int64_t>(v);
    }
    if (!j.is_number_integer()) throw fail(where, expected("an integer", j));
    return j.get<std::int64_t>();
  }

  std::uint64_t uint64(const json& j, const std::string& where) const {
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) throw fail(where, fmt::format("must be >= 0, got {}", j.dump()));
    throw fail(where, expected("a non-negative integer", j));
  }

  int integer(const json& j, const std::string& where) const {
    const std::int64_t v = int64(j, where);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      throw fail(where, fmt::format("{} does not fit a 32-bit integer", v));
    }
    return static_cast<int>(v);
  }

  std::string string(const json& j, const std::string& where) const {
    if (!j.is_string()) throw fail(where, expected("a string", j));
    return j.get<std::string>();
  }

  template <class E>
  E choice(const json& j, const std::string& where, std::initializer_list<std::pair<const char*, E>> options) const {
    const std::string s = string(j, where);
    std::vector<std::string> names;
    for (const auto& [name, value] : options) {
      if (s == name) return value;
      names.push_back(fmt::format("\"{}\"", name));
    }
    throw fail(where, fmt::format("expected one of {}, got \"{}\"", fmt::join(names, ", "), s));
  }

  UserError fail(const std::string& where, const std::string& problem) const {
    return input_error(source_, 0, where, problem);
  }

 private:
  static std::string expected(std::string_view what, const json& j) {
    std::string text = j.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("expected {}, got {} {}", what, j.type_name(), text);
  }

  std::string source_;
};

// ---------------------------------------------------------------------------------------------
// Checkpoints.

constexpr std::string_view kCheckpointMagic = "SIMKIT-ANGIO-CHECKPOINT 1\n";
constexpr std::string_view kCheckpointPrefix = "SIMKIT-ANGIO-CHECKPOINT ";
constexpr std::size_t kMaxCheckpointHeader = std::size_t{1} << 20;

// FNV-1a, 64 bit: simple, dependency-free, and enough to detect corruption (not tampering).
class Fnv1a64 {
 public:
  void add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    std::uint64_t h = hash_;
    for (std::size_t k = 0; k < size; ++k) {
      h ^= bytes[k];
      h *= 1099511628211ull;
    }
    hash_ = h;
  }
  std::string hex() const { return fmt::format("{:016x}", hash_); }

 private:
  std::uint64_t hash_ = 14695981039346656037ull;
};

// ---------------------------------------------------------------------------------------------
// Quick-look images.

// One 2D picture of a field: values[j * width + i], with its finite range.
struct Panel {
  int width = 0, height = 0;
  std::vector<double> values;
  double min = std::numeric_limits<double>::quiet_NaN(), max = std::numeric_limits<double>::quiet_NaN();

  void find_range() {
    for (const double v : values) {
      if (!std::isfinite(v)) continue;
      if (!(v >= min)) min = v;  // NaN start: the first finite value
      if (!(v <= max)) max = v;
    }
  }
};

template <class T>
Panel plane_of(const Grid& grid, const std::vector<T>& field, int l) {
  Panel p{grid.nx, grid.ny, std::vector<double>(static_cast<std::size_t>(grid.nx) * grid.ny)};
  for (int j = 0; j < grid.ny; ++j)
    for (int i = 0; i < grid.nx; ++i) p.values[static_cast<std::size_t>(j) * grid.nx + i] = field[grid.index(i, j, l)];
  p.find_range();
  return p;
}

// Maximum along z; a NaN anywhere in a column shows (a run that blew up should be visible).
template <class T>
Panel max_along_z(const Grid& grid, const std::vector<T>& field) {
  Panel p = plane_of(grid, field, 0);
  for (int l = 1; l < grid.nz; ++l)
    for (int j = 0; j < grid.ny; ++j)
      for (int i = 0; i < grid.nx; ++i) {
        double& m = p.values[static_cast<std::size_t>(j) * grid.nx + i];
        const double v = field[grid.index(i, j, l)];
        if (std::isnan(v) || v > m) m = std::isnan(m) ? m : v;
      }
  p.min = p.max = std::numeric_limits<double>::quiet_NaN();
  p.find_range();
  return p;
}

constexpr int kPanelGap = 4;
constexpr std::array<std::uint8_t, 3> kNonFiniteColour = {255, 0, 255};  // not in viridis

// Integer upscaling: panels at least ~256 px wide, no side above 1024 px (unless one node each).
int panel_scale(const Grid& grid) {
  const int wanted = (256 + grid.nx - 1) / grid.nx;
  const int largest = std::max(1, 1024 / std::max(grid.nx, grid.ny));
  return std::clamp(wanted, 1, largest);
}

// Paints `panels` side by side (a white gap between them), each scaled by `scale`, y axis up.
std::vector<std::uint8_t> render(const std::vector<const Panel*>& panels, int scale, int& width, int& height) {
  const int pw = panels.front()->width * scale, ph = panels.front()->height * scale;
  width = static_cast<int>(panels.size()) * pw + (static_cast<int>(panels.size()) - 1) * kPanelGap;
  height = ph;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * height * 3, 255);
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const Panel& p = *panels[k];
    const int x0 = static_cast<int>(k) * (pw + kPanelGap);
    const double range = p.max - p.min;
    for (int y = 0; y < ph; ++y) {
      const int j = p.height - 1 - y / scale;
      for (int x = 0; x < pw; ++x) {
        const double v = p.values[static_cast<std::size_t>(j) * p.width + x / scale];
        std::array<std::uint8_t, 3> colour;
        if (!std::isfinite(v)) {
          colour = kNonFiniteColour;
        } else {
          colour = viridis(range > 0 ? (v - p.min) / range : 0.5);
        }
        std::memcpy(&rgb[(static_cast<std::size_t>(y) * width + x0 + x) * 3], colour.data(), 3);
      }
    }
  }
  return rgb;
}

std::string hex_colour(const std::array<std::uint8_t, 3>& c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

// A horizontal colour bar of `width` px at (x, y) with the panel's min and max under its ends.
std::string colour_bar(double x, double y, double width, const Panel& p) {
  constexpr int kSteps = 32;
  constexpr double kBarHeight = 12;
  std::string out;
  const double step = width / kSteps;
  for (int s = 0; s < kSteps; ++s) {
    out += fmt::format("  <rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n", x + s * step,
                       y, step + 0.3, kBarHeight, hex_colour(viridis((s + 0.5) / kSteps)));
  }
  out += fmt::format(
      "  <rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{}\" fill=\"none\" stroke=\"#444\" "
      "stroke-width=\"0.5\"/>\n",
      x, y, width, kBarHeight);
  out +=
      fmt::format("  <text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"12\">{:.3g}</text>\n", x, y + kBarHeight + 14, p.min);
  out += fmt::format("  <text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"12\" text-anchor=\"end\">{:.3g}</text>\n",
                     x + width, y + kBarHeight + 14, p.max);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// VTI / PVD.

template <class T>
void write_vti(const fs::path& path, const Grid& grid, const Fields<T>& fields) {
  check_field_sizes(grid, fields, "write_vti");
  const std::uint64_t bytes = static_cast<std::uint64_t>(grid.nodes()) * sizeof(T);
  const char* type = sizeof(T) == 4 ? "Float32" : "Float64";
  const std::string extent = fmt::format("0 {} 0 {} 0 {}", grid.nx - 1, grid.ny - 1, grid.nz - 1);
  std::string header = fmt::format(
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      "  <ImageData WholeExtent=\"{0}\" Origin=\"0 0 0\" Spacing=\"{1} {1} {1}\">\n"
      "    <Piece Extent=\"{0}\">\n"
      "      <PointData Scalars=\"n\">\n",
      extent, exact(grid.h));
  for (int a = 0; a < 3; ++a) {
    header += fmt::format(
        "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"1\" format=\"appended\" offset=\"{}\"/>\n",
        type, kFieldNames[a], static_cast<std::uint64_t>(a) * (sizeof(std::uint64_t) + bytes));
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
  for (const std::vector<T>* array : arrays_of(fields)) {
    out.write(reinterpret_cast<const char*>(&bytes), sizeof bytes);
    out.write(reinterpret_cast<const char*>(array->data()), static_cast<std::streamsize>(bytes));
  }
  out << "\n  </AppendedData>\n</VTKFile>\n";
  file.commit();
}

LoadedFields read_vti(const fs::path& path) { return VtiReader(path).read(); }

void write_pvd(const fs::path& path, const std::vector<SnapshotEntry>& entries) {
  std::string text =
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
      "  <Collection>\n";
  for (const auto& e : entries) {
    text += fmt::format("    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}\"/>\n", exact(e.t),
                        xml_escape(e.file));
  }
  text += "  </Collection>\n</VTKFile>\n";
  write_file_atomic(path, text);
}

// ---------------------------------------------------------------------------------------------
// series.csv

namespace {
constexpr std::string_view kSeriesHeader = "step,t,int_n,int_f,int_c,min_n,max_n,min_f,max_f,min_c,max_c";
constexpr const char* kSeriesColumns[11] = {"step",  "t",     "int_n", "int_f", "int_c", "min_n",
                                            "max_n", "min_f", "max_f", "min_c", "max_c"};
}  // namespace

void write_series_csv(const fs::path& path, const std::vector<SeriesRow>& rows) {
  std::string text(kSeriesHeader);
  text += '\n';
  for (const auto& row : rows) {
    const Reductions& r = row.r;
    text += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", row.step, exact(row.t), exact(r.integral[0]),
                        exact(r.integral[1]), exact(r.integral[2]), exact(r.min[0]), exact(r.max[0]), exact(r.min[1]),
                        exact(r.max[1]), exact(r.min[2]), exact(r.max[2]));
  }
  write_file_atomic(path, text);
}

std::vector<SeriesRow> read_series_csv(const fs::path& path) {
  const std::string file = path.string();
  const std::string content = read_whole_file(path, file);
  std::vector<SeriesRow> rows;
  std::string_view rest = content;
  std::size_t line_number = 0;
  bool header_seen = false;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!header_seen) {
      if (trim(line) != kSeriesHeader) {
        throw input_error(file, line_number, "",
                          fmt::format("expected the header '{}', got '{}'", kSeriesHeader, line));
      }
      header_seen = true;
      continue;
    }
    if (trim(line).empty()) continue;
    std::vector<std::string_view> cells;
    for (std::string_view cells_left = line;;) {
      const std::size_t comma = cells_left.find(',');
      cells.push_back(trim(cells_left.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      cells_left.remove_prefix(comma + 1);
    }
    if (cells.size() != 11) {
      throw input_error(file, line_number, "", fmt::format("expected 11 comma-separated values, got {}", cells.size()));
    }
    SeriesRow row;
    const auto step = parse_integer<std::int64_t>(cells[0]);
    if (!step) throw input_error(file, line_number, "step", fmt::format("expected an integer, got '{}'", cells[0]));
    row.step = *step;
    double values[10];
    for (int k = 0; k < 10; ++k) {
      const auto v = parse_double(cells[k + 1]);
      if (!v) {
        throw input_error(file, line_number, kSeriesColumns[k + 1],
                          fmt::format("expected a number, got '{}'", cells[k + 1]));
      }
      values[k] = *v;
    }
    row.t = values[0];
    for (int f = 0; f < 3; ++f) {
      row.r.integral[f] = values[1 + f];
      row.r.min[f] = values[4 + 2 * f];
      row.r.max[f] = values[5 + 2 * f];
    }
    rows.push_back(row);
  }
  if (!header_seen) throw input_error(file, 0, "", fmt::format("empty file (expected the header '{}')", kSeriesHeader));
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Problem JSON

json problem_to_json(const Problem& problem) {
  const ModelParams& m = problem.model;
  return json{
      {"grid", {{"nx", problem.grid.nx}, {"ny", problem.grid.ny}, {"nz", problem.grid.nz}, {"h", problem.grid.h}}},
      {"model",
       {{"diffusion", m.diffusion},
        {"chemotaxis", m.chemotaxis},
        {"chemo_saturation", m.chemo_saturation},
        {"haptotaxis", m.haptotaxis},
        {"fn_production", m.fn_production},
        {"fn_uptake", m.fn_uptake},
        {"taf_uptake", m.taf_uptake},
        {"taf_diffusion", m.taf_diffusion},
        {"sensitivity", sensitivity_name(m.sensitivity)}}},
      {"dt", problem.dt},
      {"form", form_name(problem.form)},
      {"precision", precision_name(problem.precision)},
      {"initial",
       {{"taf", taf_name(problem.initial.taf)},
        {"eps1", problem.initial.eps1},
        {"eps2", problem.initial.eps2},
        {"eps3", problem.initial.eps3},
        {"sine_frequency", problem.initial.sine_frequency}}},
      {"initial_file", problem.initial_file},
  };
}

// Keys left out keep Problem's defaults; present keys must have the right type.
Problem problem_from_json(const json& j, const std::string& source) {
  const JsonReader r(source);
  Problem p;
  const auto num = [&r](double& target) {
    return [&r, &target](const json& v, const std::string& where) { target = r.number(v, where); };
  };
  const auto integer = [&r](int& target) {
    return [&r, &target](const json& v, const std::string& where) { target = r.integer(v, where); };
  };
  ModelParams& m = p.model;
  r.object(j, "",
           {{"grid",
             [&](const json& v, const std::string& where) {
               r.object(v, where,
                        {{"nx", integer(p.grid.nx)},
                         {"ny", integer(p.grid.ny)},
                         {"nz", integer(p.grid.nz)},
                         {"h", num(p.grid.h)}});
             }},
            {"model",
             [&](const json& v, const std::string& where) {
               r.object(v, where,
                        {{"diffusion", num(m.diffusion)},
                         {"chemotaxis", num(m.chemotaxis)},
                         {"chemo_saturation", num(m.chemo_saturation)},
                         {"haptotaxis", num(m.haptotaxis)},
                         {"fn_production", num(m.fn_production)},
                         {"fn_uptake", num(m.fn_uptake)},
                         {"taf_uptake", num(m.taf_uptake)},
                         {"taf_diffusion", num(m.taf_diffusion)},
                         {"sensitivity", [&](const json& s, const std::string& at) {
                            m.sensitivity = r.choice<Sensitivity>(
                                s, at, {{"receptor", Sensitivity::Receptor}, {"constant", Sensitivity::Constant}});
                          }}});
             }},
            {"dt", num(p.dt)},
            {"form",
             [&](const json& v, const std::string& where) {
               p.form = r.choice<Form>(v, where, {{"expanded", Form::Expanded}, {"flux", Form::Flux}});
             }},
            {"precision",
             [&](const json& v, const std::string& where) {
               p.precision = r.choice<Precision>(v, where, {{"fp32", Precision::Fp32}, {"fp64", Precision::Fp64}});
             }},
            {"initial",
             [&](const json& v, const std::string& where) {
               r.object(v, where,
                        {{"taf",
                          [&](const json& t, const std::string& w) {
                            p.initial.taf = r.choice<InitialTaf>(
                                t, w, {{"linear", InitialTaf::Linear}, {"tumour", InitialTaf::Tumour}});
                          }},
                         {"eps1", num(p.initial.eps1)},
                         {"eps2", num(p.initial.eps2)},
                         {"eps3", num(p.initial.eps3)},
                         {"sine_frequency", integer(p.initial.sine_frequency)}});
             }},
            {"initial_file", [&](const json& v, const std::string& where) { p.initial_file = r.string(v, where); }}});
  return p;
}

// ---------------------------------------------------------------------------------------------
// Checkpoints
//
// Layout: "SIMKIT-ANGIO-CHECKPOINT 1\n", the JSON header's byte length in decimal and "\n", the
// JSON header, "\n", then n, f and c (nodes values each, little-endian, in the problem's
// precision). The header's "checksum" is FNV-1a 64 over those data bytes, 16 hex digits.

template <class T>
void write_checkpoint(const fs::path& path, const Problem& problem, std::int64_t step, std::uint64_t seed,
                      const Fields<T>& fields, const json& run) {
  check_field_sizes(problem.grid, fields, "write_checkpoint");
  const Precision precision = sizeof(T) == 4 ? Precision::Fp32 : Precision::Fp64;
  if (precision != problem.precision) {
    throw InternalError(fmt::format("write_checkpoint: {} fields for a {} problem", precision_name(precision),
                                    precision_name(problem.precision)));
  }
  Fnv1a64 checksum;
  for (const std::vector<T>* array : arrays_of(fields)) checksum.add(array->data(), array->size() * sizeof(T));
  const BuildInfo& build = build_info();
  const json header{{"problem", problem_to_json(problem)},
                    {"step", step},
                    {"seed", seed},
                    {"precision", precision_name(precision)},
                    {"nodes", problem.grid.nodes()},
                    {"byte_order", "little"},
                    {"simkit_version", build.version},
                    {"simkit_commit", build.commit},
                    {"checksum", checksum.hex()},
                    {"run", run}};
  const std::string text = header.dump();
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out << kCheckpointMagic << text.size() << '\n' << text << '\n';
  for (const std::vector<T>* array : arrays_of(fields)) {
    out.write(reinterpret_cast<const char*>(array->data()), static_cast<std::streamsize>(array->size() * sizeof(T)));
  }
  file.commit();
}

namespace {

template <class T>
void read_checkpoint_data(std::ifstream& in, const std::string& file, std::size_t nodes, Fields<T>& fields,
                          const std::string& checksum) {
  Fnv1a64 hash;
  for (std::vector<T>* array : arrays_of(fields)) {
    array->resize(nodes);
    in.read(reinterpret_cast<char*>(array->data()), static_cast<std::streamsize>(nodes * sizeof(T)));
    if (!in) throw input_error(file, 0, "", "truncated: the data ends early (was the write interrupted?)");
    hash.add(array->data(), nodes * sizeof(T));
  }
  if (hash.hex() != checksum) throw input_error(file, 0, "", "checksum mismatch: the file is corrupt");
}

}  // namespace

Checkpoint read_checkpoint(const fs::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw input_error(file, 0, "", "is a directory, expected a checkpoint file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(file, 0, "", "cannot open the file for reading");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw input_error(file, 0, "", fmt::format("cannot read the file size: {}", ec.message()));
  const auto corrupt = [&](std::string_view what) {
    return input_error(file, 0, "", fmt::format("corrupt checkpoint header: {}", what));
  };

  // The magic line, then the header length line.
  std::string start(std::min<std::uintmax_t>(size, 64), '\0');
  in.read(start.data(), static_cast<std::streamsize>(start.size()));
  if (!in) throw input_error(file, 0, "", "cannot read the file");
  if (start.compare(0, kCheckpointMagic.size(), kCheckpointMagic) != 0) {
    if (start.starts_with(kCheckpointPrefix)) {
      const std::string_view version = std::string_view(start).substr(kCheckpointPrefix.size());
      throw input_error(file, 0, "",
                        fmt::format("checkpoint format version '{}' is not supported (this simkit reads version 1)",
                                    version.substr(0, version.find('\n'))));
    }
    if (!start.empty() && kCheckpointMagic.starts_with(start)) throw input_error(file, 0, "", "truncated checkpoint");
    throw input_error(file, 0, "",
                      fmt::format("not a simkit angio checkpoint (it does not start with '{}')",
                                  kCheckpointMagic.substr(0, kCheckpointMagic.size() - 1)));
  }
  const std::string_view after_magic = std::string_view(start).substr(kCheckpointMagic.size());
  const std::size_t newline = after_magic.find('\n');
  if (newline == std::string_view::npos) {
    if (size == start.size()) throw input_error(file, 0, "", "truncated checkpoint: the header is incomplete");
    throw corrupt("no header length line");
  }
  const auto header_length = parse_integer<std::uint64_t>(after_magic.substr(0, newline));
  if (!header_length || *header_length == 0 || *header_length > kMaxCheckpointHeader) {
    throw corrupt(fmt::format("bad header length '{}'", after_magic.substr(0, newline)));
  }
  const std::uintmax_t header_start = kCheckpointMagic.size() + newline + 1;
  const std::uintmax_t data_start = header_start + *header_length + 1;
  if (size < data_start) throw input_error(file, 0, "", "truncated checkpoint: the header is incomplete");
  std::string header_text(*header_length + 1, '\0');
  in.clear();
  in.seekg(static_cast<std::streamoff>(header_start));
  in.read(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  if (!in) throw input_error(file, 0, "", "cannot read the checkpoint header");
  if (header_text.back() != '\n') throw corrupt("the header does not end where its length says");
  header_text.pop_back();

  const json header = json::parse(header_text, nullptr, false);
  if (header.is_discarded() || !header.is_object()) throw corrupt("not a JSON object");
  const JsonReader r(file);
  const auto field = [&](const char* key) -> const json& {
    const auto it = header.find(key);
    if (it == header.end()) throw corrupt(fmt::format("missing key '{}'", key));
    return *it;
  };
  Checkpoint cp;
  cp.problem = problem_from_json(field("problem"), file);
  cp.step = r.int64(field("step"), "step");
  cp.seed = r.uint64(field("seed"), "seed");
  if (const auto it = header.find("run"); it != header.end() && it->is_object()) cp.run = *it;
  const Precision precision =
      r.choice<Precision>(field("precision"), "precision", {{"fp32", Precision::Fp32}, {"fp64", Precision::Fp64}});
  const std::uint64_t nodes = r.uint64(field("nodes"), "nodes");
  const std::string checksum = r.string(field("checksum"), "checksum");
  const Grid& g = cp.problem.grid;
  if (precision != cp.problem.precision) {
    throw corrupt(fmt::format("precision '{}' differs from the problem's '{}'", precision_name(precision),
                              precision_name(cp.problem.precision)));
  }
  if (g.nx < 1 || g.ny < 1 || g.nz < 1 || static_cast<double>(g.nx) * g.ny * g.nz > 1e13) {
    throw corrupt(fmt::format("invalid grid {}x{}x{}", g.nx, g.ny, g.nz));
  }
  if (nodes != g.nodes()) {
    throw corrupt(fmt::format("{} nodes, but the {}x{}x{} grid has {}", nodes, g.nx, g.ny, g.nz, g.nodes()));
  }
  const std::uintmax_t value_size = precision == Precision::Fp32 ? 4 : 8;
  const std::uintmax_t expected = data_start + 3 * nodes * value_size;
  if (size < expected) {
    throw input_error(
        file, 0, "",
        fmt::format("truncated checkpoint: expected {} bytes, the file has {} (was the write interrupted?)", expected,
                    size));
  }
  if (size > expected) {
    throw input_error(file, 0, "",
                      fmt::format("corrupt checkpoint: {} unexpected bytes after the data (expected {} bytes in all)",
                                  size - expected, expected));
  }
  in.seekg(static_cast<std::streamoff>(data_start));
  if (precision == Precision::Fp32) {
    read_checkpoint_data(in, file, g.nodes(), cp.fp32, checksum);
  } else {
    read_checkpoint_data(in, file, g.nodes(), cp.fp64, checksum);
  }
  return cp;
}

// ---------------------------------------------------------------------------------------------
// Quick look

template <class T>
std::vector<fs::path> write_quicklook(const fs::path& dir, const Grid& grid, const Fields<T>& fields) {
  check_field_sizes(grid, fields, "write_quicklook");
  std::vector<fs::path> written;
  const int l = grid.nz / 2;
  const int scale = panel_scale(grid);
  const auto arrays = arrays_of(fields);
  const Panel slices[3] = {plane_of(grid, *arrays[0], l), plane_of(grid, *arrays[1], l), plane_of(grid, *arrays[2], l)};
  int width = 0, height = 0;
  const auto slice_rgb = render({&slices[0], &slices[1], &slices[2]}, scale, width, height);
  write_png_rgb(dir / "slice.png", width, height, slice_rgb);
  written.push_back(dir / "slice.png");

  std::optional<Panel> mip;
  int mip_width = 0, mip_height = 0;
  if (grid.nz > 1) {
    mip = max_along_z(grid, *arrays[0]);
    const auto mip_rgb = render({&*mip}, scale, mip_width, mip_height);
    write_png_rgb(dir / "mip_n.png", mip_width, mip_height, mip_rgb);
    written.push_back(dir / "mip_n.png");
  }

  // slice.svg: the PNGs at their pixel size, titles above, colour bars below.
  constexpr double kMargin = 20, kTitleY = 26, kPanelTitleY = 56, kImageY = 66;
  const double panel_width = grid.nx * scale;
  const double bar_width = std::min(panel_width, 256.0);
  const double bar_y = kImageY + height + 10;
  double total_height = bar_y + 40;
  const double mip_title_y = total_height + 20, mip_image_y = mip_title_y + 10;
  if (mip) total_height = mip_image_y + mip_height + 10 + 40;
  const double total_width = std::max(2 * kMargin + width, 2 * kMargin + 420.0);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n"
      "  <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      total_width, total_height);
  const double z = l * grid.h;
  svg += fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"15\">plane l = {} of nz = {}: z = l·h = {:.6g}{}</text>\n",
                     kMargin, kTitleY, l, grid.nz, z, grid.nz == 1 ? " (2D)" : "");
  constexpr const char* kTitles[3] = {"n (endothelial cells)", "f (fibronectin)", "c (TAF)"};
  for (int a = 0; a < 3; ++a) {
    const double x = kMargin + a * (panel_width + kPanelGap);
    svg += fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
                       x + panel_width / 2, kPanelTitleY, xml_escape(kTitles[a]));
    svg += colour_bar(x + (panel_width - bar_width) / 2, bar_y, bar_width, slices[a]);
  }
  svg += fmt::format(
      "  <image href=\"slice.png\" xlink:href=\"slice.png\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
      "style=\"image-rendering:pixelated\"/>\n",
      kMargin, kImageY, width, height);
  if (mip) {
    svg += fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\">max of n along z</text>\n",
                       kMargin + panel_width / 2, mip_title_y);
    svg += fmt::format(
        "  <image href=\"mip_n.png\" xlink:href=\"mip_n.png\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "style=\"image-rendering:pixelated\"/>\n",
        kMargin, mip_image_y, mip_width, mip_height);
    svg += colour_bar(kMargin + (panel_width - bar_width) / 2, mip_image_y + mip_height + 10, bar_width, *mip);
  }
  svg += "</svg>\n";
  write_file_atomic(dir / "slice.svg", svg);
  written.push_back(dir / "slice.svg");
  return written;
}

// ---------------------------------------------------------------------------------------------

template void write_vti<float>(const fs::path&, const Grid&, const Fields<float>&);
template void write_vti<double>(const fs::path&, const Grid&, const Fields<double>&);
template void write_checkpoint<float>(const fs::path&, const Problem&, std::int64_t, std::uint64_t,
                                      const Fields<float>&, const json&);
template void write_checkpoint<double>(const fs::path&, const Problem&, std::int64_t, std::uint64_t,
                                       const Fields<double>&, const json&);
template std::vector<fs::path> write_quicklook<float>(const fs::path&, const Grid&, const Fields<float>&);
template std::vector<fs::path> write_quicklook<double>(const fs::path&, const Grid&, const Fields<double>&);

}  // namespace simkit::angio
