// angio files: exact round trips (VTI, checkpoint, series.csv, Problem JSON), VTK files written by
// other tools (ascii and base64), and the errors a user sees for bad or damaged files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include "simkit/angio/io.hpp"
#include "simkit/core/error.hpp"
#include "core/image.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

namespace fs = std::filesystem;
using simkit::test::slurp;
using simkit::test::base64;
using simkit::test::raw_bytes;
using simkit::test::user_error;

template <class T>
Fields<T> random_fields(const Grid& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  Fields<T> out;
  for (auto* v : {&out.n, &out.f, &out.c}) {
    v->resize(g.nodes());
    for (auto& x : *v) x = static_cast<T>(u(rng));
  }
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// A VTI around `point_data` (DataArray elements) and an optional appended section.
std::string vti(const std::string& vtkfile_attributes, const std::string& image_attributes,
                const std::string& point_data, const std::string& appended = "",
                const std::string& piece_extent = "0 1 0 1 0 1") {
  return fmt::format(
      "<?xml version=\"1.0\"?>\n<!-- written by hand -->\n"
      "<VTKFile type=\"ImageData\" version=\"1.0\" {}>\n"
      "  <ImageData {}>\n    <Piece Extent=\"{}\">\n"
      "      <PointData Scalars=\"n\">\n{}      </PointData>\n"
      "      <CellData>\n        <DataArray type=\"Float64\" Name=\"n\" format=\"ascii\">7</DataArray>\n"
      "      </CellData>\n    </Piece>\n  </ImageData>\n{}</VTKFile>\n",
      vtkfile_attributes, image_attributes, piece_extent, point_data, appended);
}

constexpr const char* kImage = "WholeExtent=\"0 1 0 1 0 1\" Origin=\"0.5 0 0\" Spacing=\"0.25 0.25 0.25\"";

std::string ascii_array(const std::string& name, const std::string& values, const std::string& type = "Float64") {
  return fmt::format(
      "        <DataArray type=\"{}\" Name=\"{}\" format=\"ascii\">\n          {}\n        </DataArray>\n", type, name,
      values);
}

// ---------------------------------------------------------------------------------------------
// VTI

template <class T>
void expect_vti_round_trip(const Grid& g) {
  test::TempDir dir;
  const auto fields = random_fields<T>(g, 42);
  write_vti(dir / "a.vti", g, fields);
  const std::string text = slurp(dir / "a.vti");
  EXPECT_TRUE(
      text.starts_with("<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" version=\"1.0\" "
                       "byte_order=\"LittleEndian\" header_type=\"UInt64\">"));
  EXPECT_NE(text.find(fmt::format("type=\"{}\" Name=\"c\"", sizeof(T) == 4 ? "Float32" : "Float64")),
            std::string::npos);
  // Header, three (8-byte count + data) blocks and the closing tags: nothing else.
  const std::size_t data = text.find("_", text.find("<AppendedData encoding=\"raw\">")) + 1;
  EXPECT_EQ(text.size() - data,
            3 * (8 + g.nodes() * sizeof(T)) + std::string("\n  </AppendedData>\n</VTKFile>\n").size());

  const LoadedFields loaded = read_vti(dir / "a.vti");
  EXPECT_EQ(loaded.grid.nx, g.nx);
  EXPECT_EQ(loaded.grid.ny, g.ny);
  EXPECT_EQ(loaded.grid.nz, g.nz);
  EXPECT_EQ(std::memcmp(&loaded.grid.h, &g.h, sizeof g.h), 0) << loaded.grid.h;
  const std::vector<T>* written[3] = {&fields.n, &fields.f, &fields.c};
  const std::vector<double>* read[3] = {&loaded.fields.n, &loaded.fields.f, &loaded.fields.c};
  for (int a = 0; a < 3; ++a) {
    std::vector<T> back(read[a]->begin(), read[a]->end());
    EXPECT_TRUE(same_bits(back, *written[a])) << "array " << a;
  }
}

TEST(AngioIo, VtiRoundTripsFloatBitForBit) {
  expect_vti_round_trip<float>(Grid{5, 4, 3, 0.1});
  expect_vti_round_trip<float>(Grid{7, 6, 1, 1.0 / 3});
}

TEST(AngioIo, VtiRoundTripsDoubleBitForBit) {
  expect_vti_round_trip<double>(Grid{5, 4, 3, 0.1});
  expect_vti_round_trip<double>(Grid{7, 6, 1, 1.0 / 3});
}

TEST(AngioIo, ReadsAsciiInlineVti) {
  test::TempDir dir;
  const auto path = dir.write(
      "ascii.vti", vti("byte_order=\"LittleEndian\"", kImage,
                       ascii_array("f", "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8") + ascii_array("other", "1 1 1 1 1 1 1 1") +
                           ascii_array("n", "1e-3 2 3 4\n 5 6 7 8.5") +
                           ascii_array("c", "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8", "Float32")));
  const LoadedFields loaded = read_vti(path);
  EXPECT_EQ(loaded.grid.nx, 2);
  EXPECT_EQ(loaded.grid.ny, 2);
  EXPECT_EQ(loaded.grid.nz, 2);
  EXPECT_EQ(loaded.grid.h, 0.25);
  EXPECT_EQ(loaded.fields.n, (std::vector<double>{1e-3, 2, 3, 4, 5, 6, 7, 8.5}));
  EXPECT_EQ(loaded.fields.f, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}));
  // Float32 text is rounded to float, as VTK stores it.
  EXPECT_EQ(loaded.fields.c[2], static_cast<double>(0.3f));
}

TEST(AngioIo, ReadsBase64AppendedAndInlineBinaryVti) {
  test::TempDir dir;
  const std::vector<float> n = {1, 2, 3, 4, 5, 6, 7, 8.25f};
  const std::vector<float> f = {0.5f, 0.25f, 0, -1, 1e-7f, 3, 2, 1};
  const std::vector<double> c = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  const test::Base64PointData data = test::base64_point_data(n, f, c);
  const auto path = dir.write("b64.vti", vti("byte_order=\"LittleEndian\"", kImage, data.points, data.appended));
  const LoadedFields loaded = read_vti(path);
  EXPECT_EQ(loaded.fields.n, std::vector<double>(n.begin(), n.end()));
  EXPECT_EQ(loaded.fields.f, std::vector<double>(f.begin(), f.end()));
  EXPECT_EQ(loaded.fields.c, c);
}

TEST(AngioIo, VtiMissingArrayIsNamed) {
  test::TempDir dir;
  const auto path = dir.write(
      "missing.vti", vti("", kImage, ascii_array("n", "1 2 3 4 5 6 7 8") + ascii_array("c", "1 2 3 4 5 6 7 8")));
  const std::string message = user_error([&] { read_vti(path); });
  EXPECT_NE(message.find(path.string() + ": field 'f': no point array named 'f'"), std::string::npos) << message;
  EXPECT_NE(message.find("found: n, c"), std::string::npos) << message;
}

TEST(AngioIo, VtiNonFiniteValueNamesItsNode) {
  test::TempDir dir;
  // Node index 5 of a 2x2x2 grid is (i, j, l) = (1, 0, 1).
  const auto path = dir.write("nan.vti", vti("", kImage,
                                             ascii_array("n", "1 2 3 4 5 6 7 8") + ascii_array("f", "1 2 3 4 5 6 7 8") +
                                                 ascii_array("c", "1 2 3 4 5 nan 7 8")));
  EXPECT_EQ(user_error([&] { read_vti(path); }), path.string() + ": field 'c': non-finite value at node (1, 0, 1)");
}

TEST(AngioIo, VtiCompressedBigEndianAndBadSpacingAreRejected) {
  test::TempDir dir;
  const std::string arrays =
      ascii_array("n", "1 2 3 4 5 6 7 8") + ascii_array("f", "1 2 3 4 5 6 7 8") + ascii_array("c", "1 2 3 4 5 6 7 8");
  const auto compressed =
      dir.write("z.vti", vti("byte_order=\"LittleEndian\" compressor=\"vtkZLibDataCompressor\"", kImage, arrays));
  EXPECT_NE(user_error([&] { read_vti(compressed); })
                .find("compressed VTI is not supported; save uncompressed (ParaView: Data Mode Appended/Binary, "
                      "Compressor None)"),
            std::string::npos);
  const auto big = dir.write("big.vti", vti("byte_order=\"BigEndian\"", kImage, arrays));
  EXPECT_NE(user_error([&] { read_vti(big); }).find("BigEndian"), std::string::npos);
  const auto spacing = dir.write("sp.vti", vti("", "WholeExtent=\"0 1 0 1 0 1\" Spacing=\"0.25 0.5 0.25\"", arrays));
  EXPECT_NE(user_error([&] { read_vti(spacing); }).find("field 'Spacing': must be equal"), std::string::npos);
  const auto offset = dir.write("off.vti", vti("", "WholeExtent=\"1 2 0 1 0 1\"", arrays, "", "1 2 0 1 0 1"));
  const std::string offset_message = user_error([&] { read_vti(offset); });
  EXPECT_NE(offset_message.find("must start at 0 0 0"), std::string::npos) << offset_message;
  const auto duplicate = dir.write("dup.vti", vti("", kImage, ascii_array("n", "1 2 3") + arrays));
  EXPECT_NE(user_error([&] { read_vti(duplicate); }).find("two arrays named 'n'"), std::string::npos);
}

TEST(AngioIo, TruncatedVtiIsAUserError) {
  test::TempDir dir;
  const Grid g{4, 3, 2, 0.5};
  write_vti(dir / "a.vti", g, random_fields<double>(g, 1));
  const std::string text = slurp(dir / "a.vti");
  const auto cut = dir.write("cut.vti", text.substr(0, text.size() - 60));
  const std::string message = user_error([&] { read_vti(cut); });
  EXPECT_NE(message.find("field 'c': truncated"), std::string::npos) << message;
}

TEST(AngioIo, PvdListsEverySnapshot) {
  test::TempDir dir;
  write_pvd(dir / "run.pvd", {{0.0, "snapshots/s_0.vti"}, {0.1, "snapshots/s_1.vti"}});
  EXPECT_EQ(slurp(dir / "run.pvd"),
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
            "  <Collection>\n"
            "    <DataSet timestep=\"0\" group=\"\" part=\"0\" file=\"snapshots/s_0.vti\"/>\n"
            "    <DataSet timestep=\"0.10000000000000001\" group=\"\" part=\"0\" file=\"snapshots/s_1.vti\"/>\n"
            "  </Collection>\n</VTKFile>\n");
}

// ---------------------------------------------------------------------------------------------
// series.csv

TEST(AngioIo, SeriesCsvRoundTripsExactlyIncludingNan) {
  test::TempDir dir;
  std::vector<SeriesRow> rows(3);
  for (int k = 0; k < 3; ++k) {
    rows[k].step = k * 1000 + 7;
    rows[k].t = (k * 1000 + 7) * 1e-3 / 3;
    for (int f = 0; f < 3; ++f) {
      rows[k].r.integral[f] = std::sqrt(2.0 + k + f);
      rows[k].r.min[f] = -1.0 / (7 + k + f);
      rows[k].r.max[f] = 1e300 / (3 + k + f);
    }
  }
  rows[2].r.max[1] = std::numeric_limits<double>::quiet_NaN();
  write_series_csv(dir / "series.csv", rows);
  const std::string text = slurp(dir / "series.csv");
  EXPECT_TRUE(text.starts_with("step,t,int_n,int_f,int_c,min_n,max_n,min_f,max_f,min_c,max_c\n7,"));
  EXPECT_NE(text.find(",nan,"), std::string::npos);
  const auto back = read_series_csv(dir / "series.csv");
  ASSERT_EQ(back.size(), rows.size());
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(back[k].step, rows[k].step);
    EXPECT_EQ(back[k].t, rows[k].t);
    for (int f = 0; f < 3; ++f) {
      EXPECT_EQ(back[k].r.integral[f], rows[k].r.integral[f]);
      EXPECT_EQ(back[k].r.min[f], rows[k].r.min[f]);
      if (k == 2 && f == 1) {
        EXPECT_TRUE(std::isnan(back[k].r.max[f]));
      } else {
        EXPECT_EQ(back[k].r.max[f], rows[k].r.max[f]);
      }
    }
  }
}

TEST(AngioIo, SeriesCsvBadRowNamesItsLine) {
  test::TempDir dir;
  const std::string header = "step,t,int_n,int_f,int_c,min_n,max_n,min_f,max_f,min_c,max_c\n";
  const auto bad_value = dir.write("a.csv", header + "0,0,1,2,3,4,5,6,7,8,9\n1,0.1,1,oops,3,4,5,6,7,8,9\n");
  EXPECT_EQ(user_error([&] { read_series_csv(bad_value); }),
            bad_value.string() + ":3: field 'int_f': expected a number, got 'oops'");
  const auto short_row = dir.write("b.csv", header + "0,0,1,2,3\n");
  EXPECT_EQ(user_error([&] { read_series_csv(short_row); }),
            short_row.string() + ":2: expected 11 comma-separated values, got 5");
  const auto bad_step = dir.write("c.csv", header + "1.5,0,1,2,3,4,5,6,7,8,9\n");
  EXPECT_NE(user_error([&] { read_series_csv(bad_step); }).find(":2: field 'step'"), std::string::npos);
  const auto bad_header = dir.write("d.csv", "step,t,n\n");
  EXPECT_NE(user_error([&] { read_series_csv(bad_header); }).find(bad_header.string() + ":1: expected the header"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Problem JSON and checkpoints

Problem unusual_problem(Precision precision) {
  Problem p;
  p.grid = Grid{9, 7, 5, 0.1 / 3};
  p.model.diffusion = 1e-4 / 3;
  p.model.chemotaxis = 0.41;
  p.model.chemo_saturation = 0.7;
  p.model.haptotaxis = 0.29;
  p.model.fn_production = 0.051;
  p.model.fn_uptake = 0.11;
  p.model.taf_uptake = 0.13;
  p.model.taf_diffusion = 1e-5;
  p.dt = 1.0 / 7000;
  p.form = Form::Flux;
  p.precision = precision;
  p.initial.taf = InitialTaf::Tumour;
  p.initial.eps1 = 0.41;
  p.initial.eps2 = 0.43;
  p.initial.eps3 = 0.0011;
  p.initial.sine_frequency = 5;
  p.initial_file = "in/\"start\".vti";
  return p;
}

void expect_same_problem(const Problem& a, const Problem& b) {
  EXPECT_EQ(a.grid.nx, b.grid.nx);
  EXPECT_EQ(a.grid.ny, b.grid.ny);
  EXPECT_EQ(a.grid.nz, b.grid.nz);
  EXPECT_EQ(a.grid.h, b.grid.h);
  const std::pair<const char*, double ModelParams::*> model_fields[] = {
      {"diffusion", &ModelParams::diffusion},
      {"chemotaxis", &ModelParams::chemotaxis},
      {"chemo_saturation", &ModelParams::chemo_saturation},
      {"haptotaxis", &ModelParams::haptotaxis},
      {"fn_production", &ModelParams::fn_production},
      {"fn_uptake", &ModelParams::fn_uptake},
      {"taf_uptake", &ModelParams::taf_uptake},
      {"taf_diffusion", &ModelParams::taf_diffusion}};
  for (const auto& [name, field] : model_fields) EXPECT_EQ(a.model.*field, b.model.*field) << "model." << name;
  EXPECT_EQ(a.dt, b.dt);
  EXPECT_EQ(a.form, b.form);
  EXPECT_EQ(a.precision, b.precision);
  EXPECT_EQ(a.initial.taf, b.initial.taf);
  const std::pair<const char*, double InitialParams::*> initial_fields[] = {
      {"eps1", &InitialParams::eps1}, {"eps2", &InitialParams::eps2}, {"eps3", &InitialParams::eps3}};
  for (const auto& [name, field] : initial_fields) EXPECT_EQ(a.initial.*field, b.initial.*field) << "initial." << name;
  EXPECT_EQ(a.initial.sine_frequency, b.initial.sine_frequency);
  EXPECT_EQ(a.initial_file, b.initial_file);
}

TEST(AngioIo, ProblemJsonRoundTripsThroughText) {
  const Problem p = unusual_problem(Precision::Fp64);
  const auto j = problem_to_json(p);
  EXPECT_EQ(j["model"]["chemo_saturation"], 0.7);
  EXPECT_EQ(j["form"], "flux");
  EXPECT_EQ(j["initial"]["taf"], "tumour");
  expect_same_problem(problem_from_json(nlohmann::json::parse(j.dump()), "p.json"), p);
}

TEST(AngioIo, ProblemJsonRejectsUnknownKeysAndWrongTypes) {
  using nlohmann::json;
  EXPECT_EQ(user_error([] { problem_from_json(json::parse(R"({"grid": {"nx": 4, "nw": 2}})"), "cfg.json"); }),
            "cfg.json: field 'grid.nw': unknown key (expected one of: nx, ny, nz, h)");
  EXPECT_EQ(user_error([] {
              problem_from_json(json::parse(R"({"colour": 1})"), "cfg.json");
            }).find("cfg.json: field 'colour': unknown key"),
            0u);
  EXPECT_EQ(user_error([] { problem_from_json(json::parse(R"({"dt": "0.1"})"), "cfg.json"); }),
            "cfg.json: field 'dt': expected a number, got string \"0.1\"");
  EXPECT_EQ(user_error([] { problem_from_json(json::parse(R"({"grid": {"nx": 4.5}})"), "cfg.json"); }),
            "cfg.json: field 'grid.nx': expected an integer, got number 4.5");
  EXPECT_EQ(user_error([] { problem_from_json(json::parse(R"({"precision": "fp16"})"), "cfg.json"); }),
            "cfg.json: field 'precision': expected one of \"fp32\", \"fp64\", got \"fp16\"");
  EXPECT_EQ(user_error([] { problem_from_json(json::parse(R"([1, 2])"), "cfg.json"); }),
            "cfg.json: expected an object, got array [1,2]");
}

template <class T>
void expect_checkpoint_round_trip(Precision precision) {
  test::TempDir dir;
  const Problem p = unusual_problem(precision);
  auto fields = random_fields<T>(p.grid, 7);
  fields.n[3] = T(-0.0);
  fields.f[4] = std::numeric_limits<T>::denorm_min();
  write_checkpoint(dir / "cp.bin", p, 123456789012345, 0xfedcba9876543210ull, fields);
  const std::string text = slurp(dir / "cp.bin");
  EXPECT_TRUE(text.starts_with("SIMKIT-ANGIO-CHECKPOINT 1\n"));
  const Checkpoint cp = read_checkpoint(dir / "cp.bin");
  expect_same_problem(cp.problem, p);
  EXPECT_EQ(cp.step, 123456789012345);
  EXPECT_EQ(cp.seed, 0xfedcba9876543210ull);
  const Fields<T>& back = [&]() -> const Fields<T>& {
    if constexpr (sizeof(T) == 4) {
      EXPECT_TRUE(cp.fp64.n.empty());
      return cp.fp32;
    } else {
      EXPECT_TRUE(cp.fp32.n.empty());
      return cp.fp64;
    }
  }();
  EXPECT_TRUE(same_bits(back.n, fields.n));
  EXPECT_TRUE(same_bits(back.f, fields.f));
  EXPECT_TRUE(same_bits(back.c, fields.c));
}

TEST(AngioIo, CheckpointRoundTripsFloatBitForBit) { expect_checkpoint_round_trip<float>(Precision::Fp32); }
TEST(AngioIo, CheckpointRoundTripsDoubleBitForBit) { expect_checkpoint_round_trip<double>(Precision::Fp64); }

TEST(AngioIo, DamagedCheckpointsAreUserErrors) {
  test::TempDir dir;
  const Problem p = unusual_problem(Precision::Fp64);
  write_checkpoint(dir / "cp.bin", p, 10, 1, random_fields<double>(p.grid, 3));
  const std::string good = slurp(dir / "cp.bin");

  const auto truncated = dir.write("truncated.bin", good.substr(0, good.size() - 1));
  const std::string t = user_error([&] { read_checkpoint(truncated); });
  EXPECT_EQ(t.find(truncated.string() + ": truncated checkpoint: expected " + std::to_string(good.size()) +
                   " bytes, the file has " + std::to_string(good.size() - 1)),
            0u)
      << t;
  const auto header_cut = dir.write("header_cut.bin", good.substr(0, 40));
  EXPECT_NE(user_error([&] { read_checkpoint(header_cut); }).find("truncated"), std::string::npos);

  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x10;
  const auto corrupt = dir.write("flipped.bin", flipped);
  EXPECT_EQ(user_error([&] { read_checkpoint(corrupt); }),
            corrupt.string() + ": checksum mismatch: the file is corrupt");

  const auto other = dir.write("other.bin", "step,t\n1,2\n");
  EXPECT_EQ(user_error([&] { read_checkpoint(other); }).find(other.string() + ": not a simkit angio checkpoint"), 0u);
  const auto v2 = dir.write("v2.bin", "SIMKIT-ANGIO-CHECKPOINT 2\n5\n{}\n");
  EXPECT_NE(user_error([&] { read_checkpoint(v2); }).find("version '2' is not supported"), std::string::npos);
  const auto longer = dir.write("longer.bin", good + "x");
  EXPECT_NE(user_error([&] { read_checkpoint(longer); }).find("1 unexpected bytes"), std::string::npos);
}

TEST(AngioIo, CheckpointPrecisionMustMatchTheProblem) {
  test::TempDir dir;
  const Problem p = unusual_problem(Precision::Fp64);
  EXPECT_THROW(write_checkpoint(dir / "cp.bin", p, 0, 0, random_fields<float>(p.grid, 1)), InternalError);
  EXPECT_FALSE(fs::exists(dir / "cp.bin"));
}

// ---------------------------------------------------------------------------------------------
// Quick look

struct Png {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  std::array<std::uint8_t, 3> at(int x, int y) const {
    const std::size_t k = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[k], rgb[k + 1], rgb[k + 2]};
  }
};

Png read_png(const fs::path& path) {
  const std::string bytes = slurp(path);
  EXPECT_TRUE(bytes.starts_with("\x89PNG\r\n\x1a\n")) << path;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Png out;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    ADD_FAILURE() << path << ": " << image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGB;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) << image.message;
  // The IHDR chunk (right after the signature) holds the same width and height, big-endian.
  const auto be32 = [&](std::size_t at) {
    return (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at])) << 24) |
           (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 1])) << 16) |
           (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 2])) << 8) |
           static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 3]));
  };
  EXPECT_EQ(bytes.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(16), image.width);
  EXPECT_EQ(be32(20), image.height);
  return out;
}

TEST(AngioIo, ViridisEndsAndMiddle) {
  EXPECT_EQ(viridis(0), (std::array<std::uint8_t, 3>{68, 1, 84}));
  EXPECT_EQ(viridis(0.5), (std::array<std::uint8_t, 3>{33, 145, 140}));
  EXPECT_EQ(viridis(1), (std::array<std::uint8_t, 3>{253, 231, 37}));
  EXPECT_EQ(viridis(-3), viridis(0));
  EXPECT_EQ(viridis(7), viridis(1));
}

TEST(AngioIo, QuicklookSlicePanelsAreScaledOrientedAndNormalised) {
  test::TempDir dir;
  const Grid g{32, 20, 1, 0.05};
  Fields<float> fields;
  fields.n.assign(g.nodes(), 0.0f);
  fields.f.assign(g.nodes(), 0.75f);  // constant: middle colour
  fields.c.assign(g.nodes(), 0.0f);
  for (int j = 0; j < g.ny; ++j)
    for (int i = 0; i < g.nx; ++i) {
      fields.n[g.index(i, j, 0)] = static_cast<float>(j);  // grows upward: top row is the maximum
      fields.c[g.index(i, j, 0)] = static_cast<float>(i) - 10;
    }
  const auto files = write_quicklook(dir.path(), g, fields);
  ASSERT_EQ(files, (std::vector<fs::path>{dir / "slice.png", dir / "slice.svg"}));
  EXPECT_FALSE(fs::exists(dir / "mip_n.png"));
  const Png png = read_png(dir / "slice.png");
  const int scale = 8, panel = 32 * scale;  // ceil(256 / 32)
  EXPECT_EQ(png.width, 3 * panel + 2 * 4);
  EXPECT_EQ(png.height, 20 * scale);
  EXPECT_EQ(png.at(0, 0), viridis(1));                                            // n: row 0 of the image is j = ny - 1
  EXPECT_EQ(png.at(0, png.height - 1), viridis(0));                               // and the bottom row is j = 0
  EXPECT_EQ(png.at(panel + 1, 0), (std::array<std::uint8_t, 3>{255, 255, 255}));  // the gap
  EXPECT_EQ(png.at(panel + 4 + 5, 3), viridis(0.5));                              // f is constant
  EXPECT_EQ(png.at(2 * (panel + 4), 50), viridis(0));
  EXPECT_EQ(png.at(png.width - 1, 50), viridis(1));

  const std::string svg = slurp(dir / "slice.svg");
  EXPECT_NE(svg.find("href=\"slice.png\""), std::string::npos);
  for (const char* text :
       {"n (endothelial cells)", "f (fibronectin)", "c (TAF)", "z = l·h = 0", ">-10<", ">21<", ">0.75<", ">19<"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
}

TEST(AngioIo, QuicklookOf3dAddsTheMaximumAlongZ) {
  test::TempDir dir;
  const Grid g{40, 30, 5, 0.1};
  auto fields = random_fields<double>(g, 5);
  fields.n[g.index(3, 0, 4)] = 10;  // the global maximum, off the mid-plane
  const auto files = write_quicklook(dir.path(), g, fields);
  ASSERT_EQ(files, (std::vector<fs::path>{dir / "slice.png", dir / "mip_n.png", dir / "slice.svg"}));
  const int scale = 7;  // ceil(256 / 40)
  const Png slice = read_png(dir / "slice.png");
  EXPECT_EQ(slice.width, 3 * 40 * scale + 8);
  EXPECT_EQ(slice.height, 30 * scale);
  const Png mip = read_png(dir / "mip_n.png");
  EXPECT_EQ(mip.width, 40 * scale);
  EXPECT_EQ(mip.height, 30 * scale);
  EXPECT_EQ(mip.at(3 * scale, mip.height - 1), viridis(1));
  const std::string svg = slurp(dir / "slice.svg");
  EXPECT_NE(svg.find("href=\"mip_n.png\""), std::string::npos);
  EXPECT_NE(svg.find("z = l·h = 0.2"), std::string::npos);
}

TEST(AngioIo, PngWriteFailureNamesTheFile) {
  test::TempDir dir;
  const auto path = dir / "no_such_dir" / "a.png";
  EXPECT_NE(user_error([&] { write_png_rgb(path, 1, 1, {0, 0, 0}); }).find(path.string()), std::string::npos);
}

}  // namespace
}  // namespace simkit::angio
