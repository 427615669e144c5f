// ddm's file formats (docs/ddm.md): region CSV and binary, pair CSV and binary, per-region CSV.
#include "simkit/ddm/io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <system_error>
#include <unordered_map>

#include "simkit/core/error.hpp"
#include "core/input.hpp"
#include "core/output.hpp"
#include "core/text.hpp"

namespace simkit::ddm {

// The binary formats are little-endian and written with plain memory copies.
static_assert(std::endian::native == std::endian::little, "ddm binary files assume a little-endian host");

namespace fs = std::filesystem;

Coords coords_of(const AnyRegions& regions) {
  return std::visit([](const auto& r) { return coords_for<typename decltype(r.subscriptions.lower)::value_type>(); },
                    regions);
}
int dims_of(const AnyRegions& regions) {
  return std::visit([](const auto& r) { return r.dims(); }, regions);
}
std::size_t subscription_count(const AnyRegions& regions) {
  return std::visit([](const auto& r) { return r.subscriptions.size(); }, regions);
}
std::size_t update_count(const AnyRegions& regions) {
  return std::visit([](const auto& r) { return r.updates.size(); }, regions);
}

namespace {

constexpr double kTwoTo64 = 18446744073709551616.0;
constexpr std::size_t kBinaryHeaderBytes = 40;
constexpr std::uint32_t kBinaryVersion = 1;
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

// ids and integer bounds are digits only (docs/ddm.md, "Regions, CSV"): "+1" or "1e3" make a bound
// f64 under automatic detection, and are not ids.
std::optional<std::uint64_t> parse_digits(std::string_view token) {
  if (!text::is_digits(token)) return std::nullopt;
  return text::parse<std::uint64_t>(token);
}

template <class T>
std::string type_name() {
  return std::string(to_string(coords_for<T>()));
}

// ---- region CSV ----

// How a bound is read: a forced type, or one of the two passes of automatic detection.
enum class Mode { Forced, AutoInteger, AutoFloat };

// Thrown by the AutoInteger pass when a bound is not a plain integer: the file is f64.
struct NotInteger {};

template <class T>
T parse_bound(std::string_view token, Mode mode, std::string_view file, std::size_t line, const std::string& field) {
  if constexpr (std::is_integral_v<T>) {
    if (!text::is_digits(token)) {
      if (mode == Mode::AutoInteger) throw NotInteger{};
      if (token.empty()) throw input_error(file, line, field, "empty; expected a number");
      throw input_error(file, line, field,
                        fmt::format("{} is not an unsigned integer (digits only), as {} coordinates require",
                                    text::shown(token), type_name<T>()));
    }
    const auto value = parse_digits(token);
    if (!value) {
      if (mode == Mode::AutoInteger) throw NotInteger{};
      throw input_error(file, line, field,
                        fmt::format("{} does not fit in {} (largest {})", text::shown(token), type_name<T>(),
                                    std::numeric_limits<T>::max()));
    }
    if (*value > std::numeric_limits<T>::max()) {
      throw input_error(file, line, field,
                        fmt::format("{} does not fit in {} (largest {})", text::shown(token), type_name<T>(),
                                    std::numeric_limits<T>::max()));
    }
    return static_cast<T>(*value);
  } else {
    const auto parsed = text::parse_number<double>(token);
    switch (parsed.problem) {
      case text::ParseProblem::None:
        break;
      case text::ParseProblem::Empty:
        throw input_error(file, line, field, "empty; expected a number");
      case text::ParseProblem::Syntax:
        throw input_error(file, line, field, fmt::format("{} is not a number", text::shown(token)));
      case text::ParseProblem::OutOfRange:
        throw input_error(file, line, field, fmt::format("{} is out of the range of f64", text::shown(token)));
    }
    const double value = parsed.value;
    if (!std::isfinite(value)) {
      throw input_error(file, line, field,
                        fmt::format("{}: NaN and infinity are not coordinates", text::shown(token)));
    }
    if (mode == Mode::AutoFloat && text::is_digits(token)) {
      // Other bounds made the file f64; an integer must not change silently on the way.
      const auto exact = parse_digits(token);
      if (!exact) {
        throw input_error(file, line, field,
                          fmt::format("integer {} is above 2^64-1 and other bounds are not integers (f64); "
                                      "force f64 coordinates (`coords` f64) to read it rounded",
                                      text::shown(token)));
      }
      if (!(value < kTwoTo64) || static_cast<std::uint64_t>(value) != *exact) {
        throw input_error(file, line, field,
                          fmt::format("integer {} is not exactly representable as f64, which other bounds that "
                                      "are not integers make this file; force f64 coordinates (`coords` f64) to "
                                      "read it rounded",
                                      text::shown(token)));
      }
    }
    return value;
  }
}

// The header `set,id,lower0,upper0,...`; returns the number of dimensions.
int parse_header(std::string_view line, std::string_view file, std::size_t line_number,
                 std::vector<std::string_view>& fields) {
  text::split(line, text::Separator::Comma, fields);
  const auto expected = [](std::size_t dims) {
    std::string h = "set,id";
    for (std::size_t d = 0; d < dims; ++d) h += fmt::format(",lower{},upper{}", d, d);
    return h;
  };
  if (fields.size() < 4 || fields.size() % 2 != 0) {
    throw input_error(file, line_number, "",
                      fmt::format("header has {} columns; expected set,id and a lower/upper pair per dimension, "
                                  "e.g. {}",
                                  fields.size(), expected(2)));
  }
  const std::size_t dims = (fields.size() - 2) / 2;
  if (dims > static_cast<std::size_t>(kMaxDims)) {
    throw input_error(file, line_number, "",
                      fmt::format("header gives {} dimensions; ddm takes 1 to {}", dims, kMaxDims));
  }
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const std::string want = k == 0   ? "set"
                             : k == 1 ? "id"
                                      : fmt::format("{}{}", k % 2 == 0 ? "lower" : "upper", (k - 2) / 2);
    if (fields[k] != want) {
      throw input_error(file, line_number, want,
                        fmt::format("header column {} is {}; expected {} (the header is {})", k + 1,
                                    text::shown(fields[k]), want, expected(dims)));
    }
  }
  return static_cast<int>(dims);
}

// Regions read row by row (bounds row-major), turned dimension-major at the end.
template <class T>
struct RowSet {
  std::vector<std::uint64_t> ids;
  std::vector<T> lower, upper;
  std::unordered_map<std::uint64_t, std::size_t> line_of_id;

  RegionSet<T> finish(int dims) {
    RegionSet<T> r;
    r.dims = dims;
    const std::size_t n = ids.size(), nd = static_cast<std::size_t>(dims);
    r.lower.resize(n * nd);
    r.upper.resize(n * nd);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t d = 0; d < nd; ++d) {
        r.lower[d * n + i] = lower[i * nd + d];
        r.upper[d * n + i] = upper[i * nd + d];
      }
    r.ids = std::move(ids);
    return r;
  }
};

template <class T>
Regions<T> parse_csv_as(std::string_view content, std::string_view file, Mode mode) {
  int dims = 0;
  RowSet<T> sets[2];
  std::vector<std::string_view> fields;
  std::vector<std::string> bound_names;
  text::LineReader lines(content, file);
  while (const auto data = lines.next_data()) {
    const std::size_t line = data->number;
    if (dims == 0) {
      dims = parse_header(data->text, file, line, fields);
      for (int d = 0; d < dims; ++d) {
        bound_names.push_back(fmt::format("lower{}", d));
        bound_names.push_back(fmt::format("upper{}", d));
      }
      continue;
    }
    text::split(data->text, text::Separator::Comma, fields);
    const std::size_t want = 2 + 2 * static_cast<std::size_t>(dims);
    if (fields.size() != want) {
      throw input_error(file, line, "",
                        fmt::format("{} fields; the header gives {} dimension{}, so expected {} (set, id, and "
                                    "a lower and upper bound per dimension)",
                                    fields.size(), dims, dims == 1 ? "" : "s", want));
    }
    int which = -1;
    if (fields[0] == "S") which = 0;
    if (fields[0] == "U") which = 1;
    if (which < 0) {
      throw input_error(file, line, "set",
                        fmt::format("{}; expected S (subscription) or U (update)", text::shown(fields[0])));
    }
    const auto id = parse_digits(fields[1]);
    if (!id) {
      throw input_error(file, line, "id",
                        fmt::format("{} is not an unsigned 64-bit integer", text::shown(fields[1])));
    }
    RowSet<T>& set = sets[which];
    const auto [it, inserted] = set.line_of_id.emplace(*id, line);
    if (!inserted) {
      throw input_error(file, line, "id",
                        fmt::format("duplicate id {} in set {} (first on line {})", *id, fields[0], it->second));
    }
    set.ids.push_back(*id);
    for (int d = 0; d < dims; ++d) {
      const std::size_t k = 2 + 2 * static_cast<std::size_t>(d);
      const T lo = parse_bound<T>(fields[k], mode, file, line, bound_names[k - 2]);
      const T hi = parse_bound<T>(fields[k + 1], mode, file, line, bound_names[k - 1]);
      if (lo > hi) {
        throw input_error(file, line, bound_names[k - 1],
                          fmt::format("upper {} is below lower{} {}", fields[k + 1], d, fields[k]));
      }
      set.lower.push_back(lo);
      set.upper.push_back(hi);
    }
  }
  if (dims == 0) {
    throw input_error(file, 0, "", "no header; expected a first line like set,id,lower0,upper0 and one region a line");
  }
  Regions<T> out;
  out.subscriptions = sets[0].finish(dims);
  out.updates = sets[1].finish(dims);
  return out;
}

// ---- region binary ----

std::uint32_t coords_code(Coords c) { return c == Coords::U32 ? 0u : (c == Coords::U64 ? 1u : 2u); }

template <class T>
void check_binary_set(const RegionSet<T>& r, std::string_view file, std::string_view set) {
  std::unordered_map<std::uint64_t, std::size_t> first;
  first.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto [it, inserted] = first.emplace(r.ids[i], i);
    if (!inserted) {
      throw input_error(file, 0, "id",
                        fmt::format("set {}: regions {} and {} share the id {}", set, it->second, i, r.ids[i]));
    }
    for (int d = 0; d < r.dims; ++d) {
      const T lo = r.lo(i, d), hi = r.hi(i, d);
      if constexpr (std::is_floating_point_v<T>) {
        if (!std::isfinite(lo) || !std::isfinite(hi)) {
          throw input_error(file, 0, fmt::format("{}{}", std::isfinite(lo) ? "upper" : "lower", d),
                            fmt::format("set {} region {} (id {}): NaN or infinity", set, i, r.ids[i]));
        }
      }
      if (lo > hi) {
        throw input_error(
            file, 0, fmt::format("upper{}", d),
            fmt::format("set {} region {} (id {}): upper {} is below lower {}", set, i, r.ids[i], hi, lo));
      }
    }
  }
}

// A value of type From as type To, when it fits exactly.
template <class To, class From>
bool convert_exact(From v, To& out) {
  if constexpr (std::is_floating_point_v<To>) {
    if constexpr (std::is_floating_point_v<From>) {
      out = v;
      return true;
    } else {
      out = static_cast<double>(v);
      return out < kTwoTo64 && static_cast<From>(out) == v;
    }
  } else if constexpr (std::is_floating_point_v<From>) {
    if (!(v >= 0) || !(v < kTwoTo64) || v != std::floor(v)) return false;
    const auto u = static_cast<std::uint64_t>(v);
    if (u > std::numeric_limits<To>::max()) return false;
    out = static_cast<To>(u);
    return true;
  } else {
    if (v > std::numeric_limits<To>::max()) return false;
    out = static_cast<To>(v);
    return true;
  }
}

template <class To, class From>
RegionSet<To> convert_set(const RegionSet<From>& r, std::string_view file, std::string_view set) {
  RegionSet<To> out;
  out.dims = r.dims;
  out.ids = r.ids;
  out.lower.resize(r.lower.size());
  out.upper.resize(r.upper.size());
  for (int d = 0; d < r.dims; ++d)
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::size_t k = static_cast<std::size_t>(d) * r.size() + i;
      for (int which = 0; which < 2; ++which) {
        const From v = which == 0 ? r.lower[k] : r.upper[k];
        To& target = which == 0 ? out.lower[k] : out.upper[k];
        if (!convert_exact(v, target)) {
          throw input_error(file, 0, fmt::format("{}{}", which == 0 ? "lower" : "upper", d),
                            fmt::format("set {} region {} (id {}): {} (stored as {}) does not fit exactly in {}", set,
                                        i, r.ids[i], v, type_name<From>(), type_name<To>()));
        }
      }
    }
  return out;
}

template <class From>
AnyRegions convert_regions(Regions<From>&& r, Coords to, std::string_view file) {
  if (to == coords_for<From>()) return AnyRegions(std::move(r));
  const auto as = [&]<class To>(To) {
    Regions<To> out;
    out.subscriptions = convert_set<To>(r.subscriptions, file, "S");
    out.updates = convert_set<To>(r.updates, file, "U");
    return AnyRegions(std::move(out));
  };
  if (to == Coords::U32) return as(std::uint32_t{});
  if (to == Coords::U64) return as(std::uint64_t{});
  return as(double{});
}

template <class V>
void read_array(std::istream& in, std::vector<V>& v, std::size_t n, std::string_view file) {
  v.resize(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(V)));
  if (!in) throw input_error(file, 0, "", "cannot read the file (it changed while being read?)");
}

template <class T>
Regions<T> read_binary_as(std::istream& in, int dims, std::uint64_t ns, std::uint64_t nu, std::string_view file) {
  Regions<T> r;
  const std::size_t nd = static_cast<std::size_t>(dims);
  for (int which = 0; which < 2; ++which) {
    RegionSet<T>& set = which == 0 ? r.subscriptions : r.updates;
    const std::size_t n = which == 0 ? ns : nu;
    set.dims = dims;
    read_array(in, set.ids, n, file);
    read_array(in, set.lower, n * nd, file);
    read_array(in, set.upper, n * nd, file);
  }
  check_binary_set(r.subscriptions, file, "S");
  check_binary_set(r.updates, file, "U");
  return r;
}

template <class V>
V load(const char* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <class V>
void append(std::string& out, V v) {
  char bytes[sizeof(V)];
  std::memcpy(bytes, &v, sizeof(V));
  out.append(bytes, sizeof(V));
}

template <class V>
void write_array(std::ostream& out, const std::vector<V>& v) {
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(V)));
}

// ---- number formatting ----

template <class T>
void format_bound(fmt::memory_buffer& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    // Shortest text that reads back to the same double, with a '.' or an exponent so that an
    // automatic reader sees f64 again.
    const std::size_t start = out.size();
    fmt::format_to(std::back_inserter(out), "{}", v);
    bool integer_look = true;
    for (std::size_t k = start; k < out.size(); ++k)
      if (out[k] != '-' && (out[k] < '0' || out[k] > '9')) integer_look = false;
    if (integer_look) fmt::format_to(std::back_inserter(out), ".0");
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

void flush_to(std::ostream& out, fmt::memory_buffer& buffer) {
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  buffer.clear();
}

std::ifstream open_input(const fs::path& path) {
  check_input_file(path, path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path.string(), 0, "", "cannot open the file for reading");
  return in;
}

bool starts_with_magic(const fs::path& path, std::string_view magic) {
  std::ifstream in = open_input(path);
  char head[8] = {};
  in.read(head, sizeof head);
  return in.gcount() == 8 && std::string_view(head, 8) == magic;
}

}  // namespace

// ---- region files ----

AnyRegions parse_regions_csv(std::string_view content, std::string_view file, std::optional<Coords> coords) {
  if (!coords) {
    try {
      return parse_csv_as<std::uint64_t>(content, file, Mode::AutoInteger);
    } catch (const NotInteger&) {
      return parse_csv_as<double>(content, file, Mode::AutoFloat);
    }
  }
  switch (*coords) {
    case Coords::U32:
      return parse_csv_as<std::uint32_t>(content, file, Mode::Forced);
    case Coords::U64:
      return parse_csv_as<std::uint64_t>(content, file, Mode::Forced);
    default:
      return parse_csv_as<double>(content, file, Mode::Forced);
  }
}

AnyRegions read_regions_csv(const fs::path& path, std::optional<Coords> coords) {
  const std::string file = path.string();
  return parse_regions_csv(read_whole_file(path, file), file, coords);
}

AnyRegions read_regions_binary(const fs::path& path, std::optional<Coords> coords) {
  const std::string file = path.string();
  std::ifstream in = open_input(path);
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) throw input_error(file, 0, "", fmt::format("cannot read the file size: {}", ec.message()));
  char header[kBinaryHeaderBytes];
  in.read(header, sizeof header);
  if (static_cast<std::size_t>(in.gcount()) != kBinaryHeaderBytes) {
    throw input_error(file, 0, "",
                      fmt::format("truncated: expected a {}-byte header, found {} bytes", kBinaryHeaderBytes, size));
  }
  if (std::string_view(header, 8) != kRegionMagic) {
    throw input_error(file, 0, "", "not a ddm binary region file (expected the magic \"SKDDM1\" and two zero bytes)");
  }
  const auto version = load<std::uint32_t>(header + 8);
  const auto type = load<std::uint32_t>(header + 12);
  const auto dims = load<std::uint32_t>(header + 16);
  const auto reserved = load<std::uint32_t>(header + 20);
  const auto ns = load<std::uint64_t>(header + 24);
  const auto nu = load<std::uint64_t>(header + 32);
  if (version != kBinaryVersion) {
    throw input_error(file, 0, "version", fmt::format("{}; this simkit reads version {}", version, kBinaryVersion));
  }
  if (type > 2)
    throw input_error(file, 0, "coordinate type", fmt::format("{}; expected 0 (u32), 1 (u64) or 2 (f64)", type));
  if (dims < 1 || dims > static_cast<std::uint32_t>(kMaxDims)) {
    throw input_error(file, 0, "dims", fmt::format("{}; ddm takes 1 to {}", dims, kMaxDims));
  }
  if (reserved != 0) throw input_error(file, 0, "reserved", fmt::format("{}; expected 0", reserved));
  const Coords stored = type == 0 ? Coords::U32 : (type == 1 ? Coords::U64 : Coords::F64);
  const std::uint64_t coord_bytes = stored == Coords::U32 ? 4 : 8;
  const std::uint64_t per_region = 8 + 2 * static_cast<std::uint64_t>(dims) * coord_bytes;
  // expected = 40 + (ns + nu) * per_region, unless that overflows (then the file is surely short).
  std::uint64_t regions = 0, body = 0, expected = 0;
  const bool overflow = __builtin_add_overflow(ns, nu, &regions) ||
                        __builtin_mul_overflow(regions, per_region, &body) ||
                        __builtin_add_overflow(body, std::uint64_t{kBinaryHeaderBytes}, &expected);
  const std::string layout = fmt::format("{} subscriptions and {} updates, {}, {} dimension{}", ns, nu,
                                         to_string(stored), dims, dims == 1 ? "" : "s");
  if (overflow || size < expected) {
    throw input_error(file, 0, "",
                      overflow ? fmt::format("truncated: the header announces {}, more than a file can hold; the "
                                             "file has {} bytes",
                                             layout, size)
                               : fmt::format("truncated: the header announces {}, which take {} bytes; the file has "
                                             "{} bytes",
                                             layout, expected, size));
  }
  if (size > expected) {
    throw input_error(file, 0, "",
                      fmt::format("{} bytes after the last region: the header announces {}, which take exactly {} "
                                  "bytes",
                                  size - expected, layout, expected));
  }
  const int d = static_cast<int>(dims);
  AnyRegions out = [&]() -> AnyRegions {
    switch (stored) {
      case Coords::U32:
        return read_binary_as<std::uint32_t>(in, d, ns, nu, file);
      case Coords::U64:
        return read_binary_as<std::uint64_t>(in, d, ns, nu, file);
      default:
        return read_binary_as<double>(in, d, ns, nu, file);
    }
  }();
  if (!coords || *coords == stored) return out;
  return std::visit([&](auto& r) { return convert_regions(std::move(r), *coords, file); }, out);
}

AnyRegions read_regions(const fs::path& path, std::optional<Coords> coords) {
  if (starts_with_magic(path, kRegionMagic)) return read_regions_binary(path, coords);
  // Not the binary format: a .bin name, or control bytes in the first bytes, mean a binary file
  // that is not ours (or is damaged); read as CSV it gave a puzzling message about columns.
  check_input_file(path, path.string());
  std::ifstream in = open_input(path);
  char head[512];
  in.read(head, sizeof head);
  const std::string_view start(head, static_cast<std::size_t>(in.gcount()));
  const bool control = std::any_of(start.begin(), start.end(), [](char ch) {
    const auto b = static_cast<unsigned char>(ch);
    return b < 0x20 && b != '\n' && b != '\r' && b != '\t';
  });
  if (path.extension() == ".bin" || control) {
    throw input_error(path.string(), 0, "",
                      "not a simkit region file: a binary file must start with the SKDDM1 magic (simkit ddm generate "
                      "--out F.bin writes one), and a CSV file is text");
  }
  return read_regions_csv(path, coords);
}

template <class T>
void write_regions_csv(const fs::path& path, const Regions<T>& regions) {
  AtomicFile file(path);
  fmt::memory_buffer buffer;
  const int dims = regions.dims();
  fmt::format_to(std::back_inserter(buffer), "set,id");
  for (int d = 0; d < dims; ++d) fmt::format_to(std::back_inserter(buffer), ",lower{},upper{}", d, d);
  buffer.push_back('\n');
  for (int which = 0; which < 2; ++which) {
    const RegionSet<T>& set = which == 0 ? regions.subscriptions : regions.updates;
    for (std::size_t i = 0; i < set.size(); ++i) {
      fmt::format_to(std::back_inserter(buffer), "{},{}", which == 0 ? 'S' : 'U', set.ids[i]);
      for (int d = 0; d < dims; ++d) {
        buffer.push_back(',');
        format_bound(buffer, set.lo(i, d));
        buffer.push_back(',');
        format_bound(buffer, set.hi(i, d));
      }
      buffer.push_back('\n');
      if (buffer.size() >= kFlushBytes) flush_to(file.stream(), buffer);
    }
  }
  flush_to(file.stream(), buffer);
  file.commit();
}

template <class T>
void write_regions_binary(const fs::path& path, const Regions<T>& regions) {
  AtomicFile file(path);
  std::string header(kRegionMagic);
  append<std::uint32_t>(header, kBinaryVersion);
  append<std::uint32_t>(header, coords_code(coords_for<T>()));
  append<std::uint32_t>(header, static_cast<std::uint32_t>(regions.dims()));
  append<std::uint32_t>(header, 0);
  append<std::uint64_t>(header, regions.subscriptions.size());
  append<std::uint64_t>(header, regions.updates.size());
  file.stream().write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const RegionSet<T>* set : {&regions.subscriptions, &regions.updates}) {
    write_array(file.stream(), set->ids);
    write_array(file.stream(), set->lower);
    write_array(file.stream(), set->upper);
  }
  file.commit();
}

void write_regions(const fs::path& path, const AnyRegions& regions) {
  const bool binary = path.extension() == ".bin";
  std::visit(
      [&](const auto& r) {
        if (binary) {
          write_regions_binary(path, r);
        } else {
          write_regions_csv(path, r);
        }
      },
      regions);
}

#define SIMKIT_DDM_IO_INSTANTIATE(T)                                      \
  template void write_regions_csv<T>(const fs::path&, const Regions<T>&); \
  template void write_regions_binary<T>(const fs::path&, const Regions<T>&);
SIMKIT_DDM_IO_INSTANTIATE(std::uint32_t)
SIMKIT_DDM_IO_INSTANTIATE(std::uint64_t)
SIMKIT_DDM_IO_INSTANTIATE(double)
#undef SIMKIT_DDM_IO_INSTANTIATE

// ---- pairs ----

struct PairWriter::State {
  AtomicFile file;
  Format format;
  std::span<const std::uint64_t> s_ids, u_ids;
  std::uint64_t count = 0;
  // A fixed buffer filled through a raw cursor: the per-pair cost is the formatting alone.
  std::vector<char> buffer = std::vector<char>(kFlushBytes + 64);
  std::size_t used = 0;

  State(const fs::path& path, Format f, std::span<const std::uint64_t> s, std::span<const std::uint64_t> u)
      : file(path), format(f), s_ids(s), u_ids(u) {}

  void put(std::string_view bytes) {
    std::memcpy(buffer.data() + used, bytes.data(), bytes.size());
    used += bytes.size();
  }
  void flush() {
    file.stream().write(buffer.data(), static_cast<std::streamsize>(used));
    used = 0;
  }
};

PairWriter::PairWriter(const fs::path& path, Format format, std::span<const std::uint64_t> subscription_ids,
                       std::span<const std::uint64_t> update_ids)
    : state_(std::make_unique<State>(path, format, subscription_ids, update_ids)) {
  if (format == Format::Csv) {
    state_->put("subscription,update\n");
  } else {
    state_->put(kPairMagic);
    state_->put(std::string_view("\0\0\0\0\0\0\0\0", 8));  // the count, filled in by commit()
  }
}

PairWriter::~PairWriter() = default;

void PairWriter::write(const Match* pairs, std::size_t count) {
  State& st = *state_;
  char* const base = st.buffer.data();
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t s = st.s_ids[pairs[k].s], u = st.u_ids[pairs[k].u];
    char* p = base + st.used;
    if (st.format == Format::Binary) {
      std::memcpy(p, &s, 8);
      std::memcpy(p + 8, &u, 8);
      p += 16;
    } else {
      p = std::to_chars(p, p + 20, s).ptr;  // 20 digits hold any uint64
      *p++ = ',';
      p = std::to_chars(p, p + 20, u).ptr;
      *p++ = '\n';
    }
    st.used = static_cast<std::size_t>(p - base);
    if (st.used >= kFlushBytes) st.flush();
  }
  st.count += count;
}

std::uint64_t PairWriter::pairs() const { return state_->count; }

void PairWriter::commit() {
  State& st = *state_;
  st.flush();
  if (st.format == Format::Binary) {
    std::string count;
    append<std::uint64_t>(count, st.count);
    st.file.stream().seekp(static_cast<std::streamoff>(kPairMagic.size()));
    st.file.stream().write(count.data(), static_cast<std::streamsize>(count.size()));
  }
  st.file.commit();
}

PairWriter::Format PairWriter::format_for(const fs::path& path) {
  return path.extension() == ".bin" ? Format::Binary : Format::Csv;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> read_pairs(const fs::path& path) {
  const std::string file = path.string();
  const std::string content = read_whole_file(path, file);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  if (content.size() >= 8 && std::string_view(content).substr(0, 8) == kPairMagic) {
    if (content.size() < 16) throw input_error(file, 0, "", "truncated: expected a 16-byte header");
    const auto count = load<std::uint64_t>(content.data() + 8);
    const std::uint64_t body = content.size() - 16;
    if (count > body / 16 || body != count * 16) {
      throw input_error(
          file, 0, "",
          fmt::format("the header announces {} pairs; the file has {} bytes of pairs (16 each)", count, body));
    }
    out.resize(count);
    for (std::uint64_t k = 0; k < count; ++k) {
      out[k] = {load<std::uint64_t>(content.data() + 16 + 16 * k), load<std::uint64_t>(content.data() + 24 + 16 * k)};
    }
    return out;
  }
  bool header = false;
  std::vector<std::string_view> fields;
  text::LineReader lines(content, file);
  while (const auto data = lines.next_data()) {
    const std::size_t line = data->number;
    text::split(data->text, text::Separator::Comma, fields);
    if (!header) {
      if (fields.size() != 2 || fields[0] != "subscription" || fields[1] != "update") {
        throw input_error(file, line, "", "expected the header subscription,update");
      }
      header = true;
      continue;
    }
    if (fields.size() != 2) throw input_error(file, line, "", fmt::format("{} fields; expected 2", fields.size()));
    const auto s = parse_digits(fields[0]), u = parse_digits(fields[1]);
    if (!s) throw input_error(file, line, "subscription", fmt::format("{} is not an id", text::shown(fields[0])));
    if (!u) throw input_error(file, line, "update", fmt::format("{} is not an id", text::shown(fields[1])));
    out.emplace_back(*s, *u);
  }
  if (!header) throw input_error(file, 0, "", "no header; expected subscription,update");
  return out;
}

void write_per_region_csv(const fs::path& path, std::span<const std::uint64_t> subscription_ids,
                          std::span<const std::uint64_t> per_subscription, std::span<const std::uint64_t> update_ids,
                          std::span<const std::uint64_t> per_update) {
  if (subscription_ids.size() != per_subscription.size() || update_ids.size() != per_update.size()) {
    throw InternalError("write_per_region_csv: ids and counts differ in length");
  }
  AtomicFile file(path);
  fmt::memory_buffer buffer;
  fmt::format_to(std::back_inserter(buffer), "set,id,count\n");
  for (int which = 0; which < 2; ++which) {
    const auto ids = which == 0 ? subscription_ids : update_ids;
    const auto counts = which == 0 ? per_subscription : per_update;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      fmt::format_to(std::back_inserter(buffer), "{},{},{}\n", which == 0 ? 'S' : 'U', ids[i], counts[i]);
      if (buffer.size() >= kFlushBytes) flush_to(file.stream(), buffer);
    }
  }
  flush_to(file.stream(), buffer);
  file.commit();
}

}  // namespace simkit::ddm
