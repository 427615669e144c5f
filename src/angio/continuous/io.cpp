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
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include "simkit/core/build_info.hpp"
#include "simkit/core/error.hpp"
#include "core/image.hpp"
#include "core/input.hpp"
#include "core/json_reader.hpp"
#include "core/output.hpp"
#include "core/svg.hpp"
#include "core/text.hpp"
#include "core/vtk.hpp"

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

using text::trim;

// ---------------------------------------------------------------------------------------------
// VTK XML ImageData reader: core/vtk.hpp reads the file; angio maps its point arrays n, f and c
// to the fields and checks what the model needs.

// The grid of the image: its extent must start at 0 and its spacing be equal along every axis with
// more than one node. Origin and Direction are ignored: the model's box always starts at 0 and its
// axes are the grid's.
Grid grid_of(const vtk::ImageDataReader& reader) {
  const vtk::ImageDataInfo& info = reader.info();
  const vtk::Extent& e = info.image.extent;
  const auto attribute = [&](std::string_view key) {
    const auto it = info.attributes.find(key);
    return it == info.attributes.end() ? std::string() : it->second;
  };
  if (e[0] != 0 || e[2] != 0 || e[4] != 0) {
    throw reader.error(info.line, "WholeExtent",
                       fmt::format("must start at 0 0 0 (x0 x1 y0 y1 z0 z1 with x0 = y0 = z0 = 0), got '{}'",
                                   attribute("WholeExtent")));
  }
  Grid grid;
  grid.nx = e[1] + 1;
  grid.ny = e[3] + 1;
  grid.nz = e[5] + 1;
  // Only the axes with more than one node have a spacing that matters (z of a 2D grid does not).
  const std::array<double, 3>& spacing = info.image.spacing;
  const int counts[3] = {grid.nx, grid.ny, grid.nz};
  std::optional<double> h;
  for (int d = 0; d < 3; ++d) {
    if (counts[d] < 2) continue;
    if (!h) {
      h = spacing[d];
    } else if (std::abs(spacing[d] - *h) > 1e-12 * *h) {
      throw reader.error(
          info.line, "Spacing",
          fmt::format("must be equal along every axis with more than one node, got '{}'", attribute("Spacing")));
    }
  }
  grid.h = h.value_or(spacing[0]);
  return grid;
}

template <class T>
void check_finite(const std::string& file, const Grid& grid, const std::vector<T>& values, std::string_view name) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k])) {
      const std::size_t nx = static_cast<std::size_t>(grid.nx), ny = static_cast<std::size_t>(grid.ny);
      throw input_error(file, 0, name,
                        fmt::format("non-finite value at node ({}, {}, {})", k % nx, (k / nx) % ny, k / (nx * ny)));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Problem JSON.

const char* form_name(Form form) { return name_of(kFormNames, form).data(); }
const char* precision_name(Precision p) { return name_of(kPrecisionNames, p).data(); }
const char* taf_name(InitialTaf taf) { return name_of(kTafNames, taf).data(); }

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
  const vtk::Image image{{0, grid.nx - 1, 0, grid.ny - 1, 0, grid.nz - 1}, {0, 0, 0}, {grid.h, grid.h, grid.h}};
  vtk::Attributes point_data;
  point_data.scalars = "n";
  const auto arrays = arrays_of(fields);
  for (int a = 0; a < 3; ++a) point_data.arrays.emplace_back(kFieldNames[a], *arrays[a]);
  vtk::write_image_data(path, image, point_data);
}

template <class T>
void write_vti_piece(const fs::path& path, const Grid& grid, int z_first, int z_last, const Fields<T>& local,
                     int local_z0) {
  const vtk::Image image{{0, grid.nx - 1, 0, grid.ny - 1, z_first, z_last}, {0, 0, 0}, {grid.h, grid.h, grid.h}};
  const std::size_t plane = static_cast<std::size_t>(grid.nx) * grid.ny;
  const std::size_t first = static_cast<std::size_t>(z_first - local_z0) * plane;
  const std::size_t count = static_cast<std::size_t>(z_last - z_first + 1) * plane;
  vtk::Attributes point_data;
  point_data.scalars = "n";
  const auto arrays = arrays_of(local);
  for (int a = 0; a < 3; ++a) {
    if (z_first < local_z0 || first + count > arrays[a]->size()) throw InternalError("write_vti_piece: planes outside the slab");
    point_data.arrays.emplace_back(kFieldNames[a], std::span<const T>(arrays[a]->data() + first, count));
  }
  vtk::write_image_data(path, image, point_data);
}

void write_pvti(const fs::path& path, const Grid& grid, Precision precision, const std::vector<VtiPiece>& pieces) {
  const vtk::Image whole{{0, grid.nx - 1, 0, grid.ny - 1, 0, grid.nz - 1}, {0, 0, 0}, {grid.h, grid.h, grid.h}};
  const vtk::DataType type = precision == Precision::Fp32 ? vtk::DataType::Float32 : vtk::DataType::Float64;
  std::vector<vtk::ArraySpec> arrays;
  for (const char* name : kFieldNames) arrays.emplace_back(name, type);
  std::vector<vtk::ImagePiece> out;
  for (const VtiPiece& p : pieces) out.push_back({{0, grid.nx - 1, 0, grid.ny - 1, p.z_first, p.z_last}, p.source});
  vtk::write_parallel_image_data(path, whole, arrays, "n", out);
}

LoadedFields read_vti(const fs::path& path) {
  const vtk::ImageDataReader reader(path);
  LoadedFields out;
  out.grid = grid_of(reader);
  std::vector<std::string> found;
  for (const auto& a : reader.info().point_arrays) found.push_back(a.name);
  auto targets = arrays_of(out.fields);
  for (int a = 0; a < 3; ++a) {
    const vtk::ArrayInfo* array = reader.find(kFieldNames[a]);
    if (array == nullptr) {
      throw input_error(
          reader.file(), 0, kFieldNames[a],
          fmt::format("no point array named '{}' in <PointData> (found: {}); n, f and c are required", kFieldNames[a],
                      found.empty() ? "none" : fmt::format("{}", fmt::join(found, ", "))));
    }
    if (array->type != "Float32" && array->type != "Float64") {
      throw reader.error(array->line, array->name,
                         fmt::format("type \"{}\" is not supported (expected Float32 or Float64)", array->type));
    }
    *targets[a] = reader.read_doubles(*array);
    check_finite(reader.file(), out.grid, *targets[a], kFieldNames[a]);
  }
  return out;
}

void write_pvd(const fs::path& path, const std::vector<SnapshotEntry>& entries) {
  std::vector<vtk::CollectionEntry> collection;
  collection.reserve(entries.size());
  for (const auto& e : entries) collection.emplace_back(e.t, e.file);
  vtk::write_collection(path, collection);
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
  text::LineReader lines(content, file);
  bool header_seen = false;
  std::vector<std::string_view> cells;
  while (const auto line = lines.next()) {
    const std::size_t line_number = line->number;
    if (!header_seen) {
      if (trim(line->text) != kSeriesHeader) {
        throw input_error(file, line_number, "",
                          fmt::format("expected the header '{}', got '{}'", kSeriesHeader, line->text));
      }
      header_seen = true;
      continue;
    }
    if (text::is_blank(line->text)) continue;
    text::split(line->text, text::Separator::Comma, cells);
    if (cells.size() != 11) {
      throw input_error(file, line_number, "", fmt::format("expected 11 comma-separated values, got {}", cells.size()));
    }
    SeriesRow row;
    const auto step = text::parse<std::int64_t>(cells[0]);
    if (!step) throw input_error(file, line_number, "step", fmt::format("expected an integer, got '{}'", cells[0]));
    row.step = *step;
    double values[10];
    for (int k = 0; k < 10; ++k) {
      const auto v = text::parse<double>(cells[k + 1]);
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
  json model = json::object();
  for (const ModelParamField& field : kModelParamFields) model[field.name] = m.*field.member;
  model["sensitivity"] = sensitivity_name(m.sensitivity);
  return json{
      {"grid", {{"nx", problem.grid.nx}, {"ny", problem.grid.ny}, {"nz", problem.grid.nz}, {"h", problem.grid.h}}},
      {"model", model},
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
               std::vector<std::pair<std::string, JsonReader::Handler>> keys;
               for (const ModelParamField& field : kModelParamFields) keys.emplace_back(field.name, num(m.*field.member));
               keys.emplace_back("sensitivity", [&](const json& s, const std::string& at) {
                 m.sensitivity = r.choice(s, at, kSensitivityNames);
               });
               r.object(v, where, keys);
             }},
            {"dt", num(p.dt)},
            {"form",
             [&](const json& v, const std::string& where) {
               p.form = r.choice(v, where, kFormNames);
             }},
            {"precision",
             [&](const json& v, const std::string& where) {
               p.precision = r.choice(v, where, kPrecisionNames);
             }},
            {"initial",
             [&](const json& v, const std::string& where) {
               r.object(v, where,
                        {{"taf",
                          [&](const json& t, const std::string& w) {
                            p.initial.taf = r.choice(t, w, kTafNames);
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
  const auto header_length = text::parse<std::uint64_t>(after_magic.substr(0, newline));
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
  if (cp.step < 0) throw input_error(file, 0, "step", fmt::format("must be >= 0, got {}", cp.step));
  cp.seed = r.uint64(field("seed"), "seed");
  if (const auto it = header.find("run"); it != header.end() && it->is_object()) cp.run = *it;
  const Precision precision =
      r.choice(field("precision"), "precision", kPrecisionNames);
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
  // The data is checksummed, the header is not; a checkpoint holds a finite state (a run stops
  // when it stops being finite), so non-finite values mean a damaged or forged file.
  const auto read_finite = [&](auto& fields) {
    read_checkpoint_data(in, file, g.nodes(), fields, checksum);
    const auto arrays = arrays_of(fields);
    for (std::size_t a = 0; a < arrays.size(); ++a) check_finite(file, g, *arrays[a], kFieldNames[a]);
  };
  if (precision == Precision::Fp32) {
    read_finite(cp.fp32);
  } else {
    read_finite(cp.fp64);
  }
  return cp;
}

// ---------------------------------------------------------------------------------------------
// Quick look

namespace {
std::vector<fs::path> write_quicklook_panels(const fs::path& dir, const Grid& grid, const Panel (&slices)[3],
                                             std::optional<Panel> mip);
}  // namespace

template <class T>
std::vector<fs::path> write_quicklook(const fs::path& dir, const Grid& grid, const Fields<T>& fields) {
  check_field_sizes(grid, fields, "write_quicklook");
  const int l = grid.nz / 2;
  const auto arrays = arrays_of(fields);
  const Panel slices[3] = {plane_of(grid, *arrays[0], l), plane_of(grid, *arrays[1], l), plane_of(grid, *arrays[2], l)};
  std::optional<Panel> mip;
  if (grid.nz > 1) mip = max_along_z(grid, *arrays[0]);
  return write_quicklook_panels(dir, grid, slices, std::move(mip));
}

std::vector<fs::path> write_quicklook(const fs::path& dir, const Grid& grid,
                                      const std::array<std::vector<double>, 3>& mid_plane,
                                      const std::vector<double>& mip_n) {
  const std::size_t plane = static_cast<std::size_t>(grid.nx) * grid.ny;
  auto panel = [&](const std::vector<double>& values) {
    if (values.size() != plane) throw InternalError("write_quicklook: a plane of the wrong size");
    Panel p{grid.nx, grid.ny, values};
    p.find_range();
    return p;
  };
  const Panel slices[3] = {panel(mid_plane[0]), panel(mid_plane[1]), panel(mid_plane[2])};
  std::optional<Panel> mip;
  if (grid.nz > 1) mip = panel(mip_n);
  return write_quicklook_panels(dir, grid, slices, std::move(mip));
}

void max_into(std::vector<double>& mip, const std::vector<double>& plane) {
  if (mip.empty()) {
    mip = plane;
    return;
  }
  for (std::size_t k = 0; k < mip.size(); ++k) {
    double& m = mip[k];
    const double v = plane[k];
    if (std::isnan(v) || v > m) m = std::isnan(m) ? m : v;
  }
}

namespace {
std::vector<fs::path> write_quicklook_panels(const fs::path& dir, const Grid& grid, const Panel (&slices)[3],
                                             std::optional<Panel> mip) {
  std::vector<fs::path> written;
  const int l = grid.nz / 2;
  const int scale = panel_scale(grid);
  int width = 0, height = 0;
  const auto slice_rgb = render({&slices[0], &slices[1], &slices[2]}, scale, width, height);
  write_png_rgb(dir / "slice.png", width, height, slice_rgb);
  written.push_back(dir / "slice.png");

  int mip_width = 0, mip_height = 0;
  if (mip) {
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
}  // namespace

// ---------------------------------------------------------------------------------------------

template void write_vti<float>(const fs::path&, const Grid&, const Fields<float>&);
template void write_vti<double>(const fs::path&, const Grid&, const Fields<double>&);
template void write_vti_piece<float>(const fs::path&, const Grid&, int, int, const Fields<float>&, int);
template void write_vti_piece<double>(const fs::path&, const Grid&, int, int, const Fields<double>&, int);
template void write_checkpoint<float>(const fs::path&, const Problem&, std::int64_t, std::uint64_t,
                                      const Fields<float>&, const json&);
template void write_checkpoint<double>(const fs::path&, const Problem&, std::int64_t, std::uint64_t,
                                       const Fields<double>&, const json&);
template std::vector<fs::path> write_quicklook<float>(const fs::path&, const Grid&, const Fields<float>&);
template std::vector<fs::path> write_quicklook<double>(const fs::path&, const Grid&, const Fields<double>&);

}  // namespace simkit::angio
