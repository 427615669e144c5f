// core/vtk.hpp: the writers' exact bytes (ImageData, PolyData, collections, parallel ImageData),
// ImageData round trips, the VTK inputs the reader accepts (ascii, base64, appended raw and base64)
// and the UserErrors, naming the file, for bad ones.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/vtk.hpp"
#include "simkit/core/error.hpp"
#include "support/test_support.hpp"

namespace simkit::vtk {
namespace {

namespace fs = std::filesystem;
using simkit::test::slurp;
using simkit::test::base64;
using simkit::test::raw_bytes;
using simkit::test::user_error;

template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  std::vector<T> out(n);
  for (auto& x : out) x = static_cast<T>(u(rng));
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A 2x2x2 image around `point_data` (DataArray elements) and an optional appended section; the
// <ImageData> element is on line 4.
std::string vti(const std::string& vtkfile_attributes, const std::string& point_data, const std::string& appended = "",
                const std::string& image_attributes = "WholeExtent=\"0 1 0 1 0 1\" Spacing=\"0.25 0.25 0.25\"") {
  return fmt::format(
      "<?xml version=\"1.0\"?>\n<!-- written by hand -->\n"
      "<VTKFile type=\"ImageData\" version=\"1.0\" {}>\n"
      "  <ImageData {}>\n    <Piece Extent=\"0 1 0 1 0 1\">\n"
      "      <PointData Scalars=\"a\">\n{}      </PointData>\n"
      "      <CellData>\n        <DataArray type=\"Float64\" Name=\"cell\" format=\"ascii\">7</DataArray>\n"
      "      </CellData>\n    </Piece>\n  </ImageData>\n{}</VTKFile>\n",
      vtkfile_attributes, image_attributes, point_data, appended);
}

std::string ascii_array(const std::string& name, const std::string& values, const std::string& type = "Float64",
                        const std::string& more = "") {
  return fmt::format(
      "        <DataArray type=\"{}\" Name=\"{}\"{} format=\"ascii\">\n          {}\n        </DataArray>\n", type,
      name, more, values);
}

constexpr const char* kEight = "1 2 3 4 5 6 7 8";

// ---------------------------------------------------------------------------------------------
// ImageData: writing

TEST(CoreVtk, ImageDataBytesAreFixed) {
  test::TempDir dir;
  const std::vector<float> n = {1.5f, -2};
  const std::vector<double> f = {0.1, 3};
  write_image_data(dir / "a.vti", Image{{0, 1, 0, 0, 0, 0}, {0, 0, 0}, {0.1, 0.1, 0.1}},
                   Attributes{{{"n", n}, {"f", f}}, "n"});
  const std::string expected =
      "<?xml version=\"1.0\"?>\n"
      "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
      "  <ImageData WholeExtent=\"0 1 0 0 0 0\" Origin=\"0 0 0\" "
      "Spacing=\"0.10000000000000001 0.10000000000000001 0.10000000000000001\">\n"
      "    <Piece Extent=\"0 1 0 0 0 0\">\n"
      "      <PointData Scalars=\"n\">\n"
      "        <DataArray type=\"Float32\" Name=\"n\" NumberOfComponents=\"1\" format=\"appended\" offset=\"0\"/>\n"
      "        <DataArray type=\"Float64\" Name=\"f\" NumberOfComponents=\"1\" format=\"appended\" offset=\"16\"/>\n"
      "      </PointData>\n"
      "      <CellData>\n"
      "      </CellData>\n"
      "    </Piece>\n"
      "  </ImageData>\n"
      "  <AppendedData encoding=\"raw\">\n"
      "   _" +
      raw_bytes(std::uint64_t{8}) + raw_bytes(n) + raw_bytes(std::uint64_t{16}) + raw_bytes(f) +
      "\n  </AppendedData>\n</VTKFile>\n";
  EXPECT_EQ(slurp(dir / "a.vti"), expected);
}

TEST(CoreVtk, ImageDataWithoutScalarsOrArraysAndEscapedNames) {
  test::TempDir dir;
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  write_image_data(dir / "a.vti", Image{{3, 3, 0, 0, -2, -2}, {0.5, -1, 2}, {1, 2, 3}},
                   Attributes{{{"a<b", v, 6}}, ""});
  const std::string text = slurp(dir / "a.vti");
  EXPECT_NE(text.find("<ImageData WholeExtent=\"3 3 0 0 -2 -2\" Origin=\"0.5 -1 2\" Spacing=\"1 2 3\">"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      <PointData>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Name=\"a&lt;b\" NumberOfComponents=\"6\""), std::string::npos) << text;
  const ImageDataFile back = read_image_data(dir / "a.vti");
  ASSERT_EQ(back.point_data.size(), 1u);
  EXPECT_EQ(back.point_data[0].first, "a<b");
  EXPECT_EQ(std::get<std::vector<double>>(back.point_data[0].second), v);

  write_image_data(dir / "empty.vti", Image{{0, 2, 0, 2, 0, 0}}, Attributes{});
  const ImageDataReader empty(dir / "empty.vti");
  EXPECT_TRUE(empty.info().point_arrays.empty());
  EXPECT_EQ(empty.info().image.points(), 9u);
}

TEST(CoreVtk, ImageDataWriterRejectsWrongSizesAndLeavesNoFile) {
  test::TempDir dir;
  const std::vector<float> short_array(5);
  EXPECT_THROW(write_image_data(dir / "a.vti", Image{{0, 1, 0, 2, 0, 0}}, Attributes{{{"n", short_array}}, ""}),
               InternalError);
  EXPECT_THROW(write_image_data(dir / "a.vti", Image{{0, 1, 0, 2, 0, 0}}, Attributes{{{"n", short_array, 0}}, ""}),
               InternalError);
  EXPECT_THROW(write_image_data(dir / "a.vti", Image{{1, 0, 0, 2, 0, 0}}, Attributes{}), InternalError);
  EXPECT_TRUE(test::empty_or_absent(dir.path()));
  // A directory that does not exist: a UserError naming the file.
  const fs::path missing = dir / "no" / "a.vti";
  EXPECT_NE(user_error([&] {
              write_image_data(missing, Image{{0, 0, 0, 0, 0, 0}}, Attributes{});
            }).find(missing.string()),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// ImageData: round trips

template <class T>
void expect_round_trip(const Image& image) {
  SCOPED_TRACE(sizeof(T) == 4 ? "float" : "double");
  test::TempDir dir;
  const std::size_t points = image.points();
  const auto a = random_values<T>(points, 1);
  const auto b = random_values<T>(points, 2);
  const auto v = random_values<T>(3 * points, 3);
  const std::vector<std::int32_t> id = [&] {
    std::vector<std::int32_t> out(points);
    for (std::size_t k = 0; k < points; ++k) out[k] = static_cast<std::int32_t>(k) - 3;
    return out;
  }();
  write_image_data(dir / "a.vti", image, Attributes{{{"a", a}, {"b", b}, {"v", v, 3}, {"id", id}}, "b"});

  const ImageDataReader reader(dir / "a.vti");
  EXPECT_EQ(reader.file(), (dir / "a.vti").string());
  const ImageDataInfo& info = reader.info();
  EXPECT_EQ(info.image.extent, image.extent);
  for (int d = 0; d < 3; ++d) {
    EXPECT_TRUE(same_bits(info.image.origin[d], image.origin[d])) << info.image.origin[d];
    EXPECT_TRUE(same_bits(info.image.spacing[d], image.spacing[d])) << info.image.spacing[d];
  }
  EXPECT_EQ(info.line, 3u);
  ASSERT_EQ(info.point_arrays.size(), 4u);
  const char* type = sizeof(T) == 4 ? "Float32" : "Float64";
  EXPECT_EQ(info.point_arrays[0].name, "a");
  EXPECT_EQ(info.point_arrays[0].type, type);
  EXPECT_EQ(info.point_arrays[2].name, "v");
  EXPECT_EQ(info.point_arrays[2].components, 3);
  EXPECT_EQ(info.point_arrays[3].type, "Int32");

  EXPECT_TRUE(same_bits(std::get<std::vector<T>>(reader.read(*reader.find("a"))), a));
  EXPECT_TRUE(same_bits(std::get<std::vector<T>>(reader.read(*reader.find("v"), 3)), v));
  EXPECT_EQ(std::get<std::vector<std::int32_t>>(reader.read(*reader.find("id"))), id);
  const std::vector<double> b_doubles = reader.read_doubles(*reader.find("b"));
  EXPECT_EQ(b_doubles, std::vector<double>(b.begin(), b.end()));
  EXPECT_EQ(reader.find("missing"), nullptr);

  const ImageDataFile whole = read_image_data(dir / "a.vti");
  ASSERT_EQ(whole.point_data.size(), 4u);
  EXPECT_EQ(whole.point_data[2].first, "v");
  EXPECT_TRUE(same_bits(std::get<std::vector<T>>(whole.point_data[2].second), v));
}

TEST(CoreVtk, ImageDataRoundTripsFloatBitForBit) {
  expect_round_trip<float>(Image{{0, 4, 0, 3, 0, 2}, {0, 0, 0}, {0.1, 0.1, 0.1}});
  expect_round_trip<float>(Image{{2, 6, -1, 3, 5, 5}, {0.5, -1.25, 1.0 / 3}, {0.1, 0.2, 1.0 / 7}});
}

TEST(CoreVtk, ImageDataRoundTripsDoubleBitForBit) {
  expect_round_trip<double>(Image{{0, 4, 0, 3, 0, 2}, {0, 0, 0}, {0.1, 0.1, 0.1}});
  expect_round_trip<double>(Image{{2, 6, -1, 3, 5, 5}, {0.5, -1.25, 1.0 / 3}, {0.1, 0.2, 1.0 / 7}});
}

// ---------------------------------------------------------------------------------------------
// ImageData: inputs from other writers

TEST(CoreVtk, ReadsAsciiArraysOfEveryKind) {
  test::TempDir dir;
  const auto path = dir.write(
      "ascii.vti",
      vti("byte_order=\"LittleEndian\"",
          ascii_array("d", "1e-3 2 3 4\n 5 6 7 8.5") + ascii_array("f", "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8", "Float32") +
              ascii_array("i", "-1 +2 3 4 5 6 7 -8", "Int64") + ascii_array("u", "0 1 2 3 4 5 6 255", "UInt8") +
              ascii_array("v2", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", "Int16", " NumberOfComponents=\"2\"")));
  const ImageDataReader reader(path);
  EXPECT_EQ(reader.info().image.extent, (Extent{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(reader.info().image.spacing, (std::array<double, 3>{0.25, 0.25, 0.25}));
  EXPECT_EQ(reader.info().image.origin, (std::array<double, 3>{0, 0, 0}));  // VTK's default
  EXPECT_EQ(reader.info().attributes.at("Spacing"), "0.25 0.25 0.25");
  EXPECT_EQ(reader.info().line, 4u);
  EXPECT_EQ(reader.find("d")->line, 7u);
  EXPECT_EQ(reader.read_doubles(*reader.find("d")), (std::vector<double>{1e-3, 2, 3, 4, 5, 6, 7, 8.5}));
  // Float32 text is rounded to float, as VTK stores it.
  const auto f = std::get<std::vector<float>>(reader.read(*reader.find("f")));
  EXPECT_EQ(f[2], 0.3f);
  EXPECT_EQ(reader.read_doubles(*reader.find("f"))[2], static_cast<double>(0.3f));
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(reader.read(*reader.find("i"))),
            (std::vector<std::int64_t>{-1, 2, 3, 4, 5, 6, 7, -8}));
  EXPECT_EQ(std::get<std::vector<std::uint8_t>>(reader.read(*reader.find("u")))[7], 255);
  EXPECT_EQ(reader.find("v2")->components, 2);
  EXPECT_EQ(std::get<std::vector<std::int16_t>>(reader.read(*reader.find("v2"), 2))[15], 16);
  // The <CellData> array is not a point array.
  EXPECT_EQ(reader.find("cell"), nullptr);
}

TEST(CoreVtk, ReadsBase64AppendedAndInlineBinary) {
  test::TempDir dir;
  const std::vector<float> n = {1, 2, 3, 4, 5, 6, 7, 8.25f};
  const std::vector<float> f = {0.5f, 0.25f, 0, -1, 1e-7f, 3, 2, 1};
  const std::vector<double> c = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  const test::Base64PointData data = test::base64_point_data(n, f, c);
  const auto path = dir.write("b64.vti", vti("byte_order=\"LittleEndian\"", data.points, data.appended));
  const ImageDataReader reader(path);
  EXPECT_TRUE(same_bits(std::get<std::vector<float>>(reader.read(*reader.find("n"))), n));
  EXPECT_TRUE(same_bits(std::get<std::vector<float>>(reader.read(*reader.find("f"))), f));
  EXPECT_EQ(reader.read_doubles(*reader.find("c")), c);
}

TEST(CoreVtk, ReadsAppendedRawWithBothHeaderTypes) {
  test::TempDir dir;
  const std::vector<std::int64_t> big = {1, -2, 3, -4, 5, -6, 7, std::numeric_limits<std::int64_t>::max()};
  const std::vector<std::uint16_t> small = {1, 2, 3, 4, 5, 6, 7, 65535};
  for (const bool wide : {false, true}) {
    SCOPED_TRACE(wide ? "UInt64" : "UInt32");
    const auto header = [&](std::uint64_t bytes) {
      return wide ? raw_bytes(bytes) : raw_bytes(static_cast<std::uint32_t>(bytes));
    };
    const std::string data = header(64) + raw_bytes(big) + header(16) + raw_bytes(small);
    const std::size_t second = (wide ? 8 : 4) + 64;
    const auto path = dir.write(
        "raw.vti",
        vti(wide ? "byte_order=\"LittleEndian\" header_type=\"UInt64\"" : "byte_order=\"LittleEndian\"",
            fmt::format("        <DataArray type=\"Int64\" Name=\"big\" format=\"appended\" offset=\"0\"/>\n"
                        "        <DataArray type=\"UInt16\" Name=\"small\" format=\"appended\" offset=\"{}\"/>\n",
                        second),
            "  <AppendedData encoding=\"raw\">\n   _" + data + "\n  </AppendedData>\n"));
    const ImageDataReader reader(path);
    EXPECT_EQ(std::get<std::vector<std::int64_t>>(reader.read(*reader.find("big"))), big);
    EXPECT_EQ(std::get<std::vector<std::uint16_t>>(reader.read(*reader.find("small"))), small);
  }
}

TEST(CoreVtk, ArraysNotReadCannotFailTheFile) {
  test::TempDir dir;
  const auto path = dir.write(
      "odd.vti", vti("", ascii_array("good", kEight) + ascii_array("odd", "x y", "Bogus", " NumberOfComponents=\"q\"") +
                             "        <DataArray type=\"Float64\" format=\"ascii\">1 2</DataArray>\n"));
  const ImageDataReader reader(path);
  ASSERT_EQ(reader.info().point_arrays.size(), 2u);  // the unnamed array is left out
  EXPECT_EQ(reader.read_doubles(*reader.find("good")), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  const ArrayInfo& odd = *reader.find("odd");
  EXPECT_EQ(odd.components, 0);
  EXPECT_EQ(user_error([&] { reader.read(odd); }),
            path.string() +
                ":10: field 'odd': type \"Bogus\" is not supported (expected Int8, UInt8, Int16, UInt16, Int32, "
                "UInt32, Int64, UInt64, Float32 or Float64)");
  EXPECT_EQ(user_error([&] { read_image_data(path); }).find(path.string() + ":10: field 'odd'"), 0u);
  EXPECT_EQ(reader.error(3, "x", "bad").what(), path.string() + ":3: field 'x': bad");
}

// ---------------------------------------------------------------------------------------------
// ImageData: bad files

struct BadFile {
  const char* name;
  std::string content;
  std::string expected;  // in the message, after "FILE"
};

TEST(CoreVtk, BadFilesAreUserErrorsNamingTheFile) {
  test::TempDir dir;
  const std::string arrays = ascii_array("a", kEight);
  const std::vector<BadFile> cases = {
      {"empty.vti", "", ": not a VTK XML file (no <VTKFile> element)"},
      {"text.vti", "hello\n", ": not a VTK XML file"},
      {"poly.vti", "<VTKFile type=\"PolyData\"><PolyData/></VTKFile>",
       ":1: field 'type': expected a VTK ImageData file (VTKFile type=\"ImageData\"), got type=\"PolyData\""},
      {"noimage.vti", "<VTKFile type=\"ImageData\"></VTKFile>", ": no <ImageData> element"},
      {"z.vti", vti("compressor=\"vtkZLibDataCompressor\"", arrays), ":3: field 'compressor': compressed VTI"},
      {"big.vti", vti("byte_order=\"BigEndian\"", arrays), ":3: field 'byte_order': byte_order \"BigEndian\""},
      {"hdr.vti", vti("header_type=\"UInt16\"", arrays), ":3: field 'header_type': expected UInt32 or UInt64"},
      {"noext.vti", vti("", arrays, "", "Spacing=\"1 1 1\""), ":4: field 'WholeExtent': missing from <ImageData>"},
      {"ext5.vti", vti("", arrays, "", "WholeExtent=\"0 1 0 1 0\""),
       ":4: field 'WholeExtent': expected six integers, got '0 1 0 1 0'"},
      {"extneg.vti", vti("", arrays, "", "WholeExtent=\"0 1 0 -1 0 1\""),
       ":4: field 'WholeExtent': invalid extent '0 1 0 -1 0 1'"},
      {"huge.vti", vti("", arrays, "", "WholeExtent=\"0 100000000 0 100000000 0 10\""),
       ":4: field 'WholeExtent': the grid '0 100000000 0 100000000 0 10' is too large"},
      {"sp.vti", vti("", arrays, "", "WholeExtent=\"0 1 0 1 0 1\" Spacing=\"1 0 1\""),
       ":4: field 'Spacing': expected three positive numbers, got '1 0 1'"},
      {"or.vti", vti("", arrays, "", "WholeExtent=\"0 1 0 1 0 1\" Origin=\"0 nan 0\""),
       ":4: field 'Origin': expected three numbers, got '0 nan 0'"},
      {"piece.vti",
       "<VTKFile type=\"ImageData\">\n<ImageData WholeExtent=\"0 1 0 1 0 1\">\n<Piece Extent=\"0 1 0 1 0 0\">\n"
       "</Piece></ImageData></VTKFile>",
       ":3: field 'Extent': the Piece covers '0 1 0 1 0 0' but WholeExtent is '0 1 0 1 0 1'"},
      {"pieces.vti",
       "<VTKFile type=\"ImageData\">\n<ImageData WholeExtent=\"0 1 0 1 0 1\">\n<Piece/>\n<Piece/>\n"
       "</ImageData></VTKFile>",
       ":4: more than one <Piece>"},
      {"dup.vti", vti("", arrays + ascii_array("a", "1 2 3")), ":10: field 'a': <PointData> has two arrays named 'a'"},
      {"tag.vti", "<VTKFile type=\"ImageData\"\n", ":1: unterminated XML tag <VTKFile>"},
      {"attr.vti", "<VTKFile type=ImageData>", ":1: attribute type of <VTKFile> has no quoted value"},
      {"comment.vti", "<!-- open", ":1: unterminated XML comment"},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path path = dir.write(c.name, c.content);
    const std::string message = user_error([&] { ImageDataReader reader(path); });
    EXPECT_EQ(message.find(path.string() + c.expected), 0u) << message;
  }
  const fs::path missing = dir / "missing.vti";
  EXPECT_EQ(user_error([&] { ImageDataReader reader(missing); }),
            missing.string() + ": cannot open the file for reading: no such file");
  EXPECT_EQ(user_error([&] { ImageDataReader reader(dir.path()); }),
            dir.path().string() + ": is a directory, expected a file");
}

TEST(CoreVtk, BadArraysAreUserErrorsNamingFileLineAndArray) {
  test::TempDir dir;
  const std::string n32 = base64(raw_bytes(std::uint32_t{32}) + raw_bytes(std::vector<float>(8, 1.0f)));
  const auto raw = [](std::uint32_t bytes, std::size_t values) {
    return "  <AppendedData encoding=\"raw\">\n   _" + raw_bytes(bytes) + std::string(values, 'x') +
           "\n  </AppendedData>\n";
  };
  // The file cut `bytes` after the appended section's '_'.
  const auto cut_after_underscore = [](const std::string& text, std::size_t bytes) {
    return text.substr(0, text.find('_', text.find("<AppendedData")) + 1 + bytes);
  };
  const std::string appended = "        <DataArray type=\"UInt8\" Name=\"a\" format=\"appended\" offset=\"0\"/>\n";
  const std::vector<BadFile> cases = {
      {"count.vti", vti("", ascii_array("a", "1 2 3")),
       ":7: field 'a': the ascii array has 3 values, expected 8 (the 2x2x2 grid's nodes)"},
      {"token.vti", vti("", ascii_array("a", "1 2 3 4\n          5 6 oops 8")),
       ":9: field 'a': expected a number, got 'oops'"},
      {"int.vti", vti("", ascii_array("a", "1 2 3 4 5 6 7 300", "UInt8")),
       ":8: field 'a': expected an integer (UInt8), got '300'"},
      {"comp.vti", vti("", ascii_array("a", kEight, "Float64", " NumberOfComponents=\"2\"")),
       ":7: field 'a': NumberOfComponents is 2, expected 1 (a scalar point array)"},
      {"format.vti", vti("", "        <DataArray type=\"Float64\" Name=\"a\" format=\"zip\"/>\n"),
       ":7: field 'a': format \"zip\" is not supported (expected appended, binary or ascii)"},
      {"size.vti",
       vti("", "        <DataArray type=\"Float64\" Name=\"a\" format=\"binary\">" + n32 + "</DataArray>\n"),
       ":7: field 'a': the array holds 32 bytes, expected 64 (8 nodes of the 2x2x2 grid x 8 bytes)"},
      {"b64.vti", vti("", "        <DataArray type=\"Float64\" Name=\"a\" format=\"binary\">QUJD*</DataArray>\n"),
       ": field 'a': truncated"},
      {"nooffset.vti", vti("", "        <DataArray type=\"UInt8\" Name=\"a\" format=\"appended\"/>\n", raw(8, 8)),
       ":7: field 'a': an appended DataArray without an offset attribute"},
      {"noappended.vti", vti("", appended), ":7: field 'a': the array is appended but the file has no <AppendedData>"},
      {"enc.vti", vti("", appended, "  <AppendedData encoding=\"zlib\">\n   _\n  </AppendedData>\n"),
       ":14: field 'encoding': <AppendedData> encoding \"zlib\" is not supported"},
      {"underscore.vti", vti("", appended, "  <AppendedData encoding=\"raw\">\n   \n  </AppendedData>\n"),
       ":14: <AppendedData> must be followed by '_'"},
      {"beyond.vti",
       vti("", "        <DataArray type=\"UInt8\" Name=\"a\" format=\"appended\" offset=\"1000\"/>\n", raw(8, 8)),
       ": field 'a': truncated: the array's offset 1000 lies beyond the end of the file"},
      {"short.vti", cut_after_underscore(vti("", appended, raw(8, 8)), 4 + 3),
       ": field 'a': truncated: the array's data ends early"},
      {"shorthead.vti", cut_after_underscore(vti("", appended, raw(8, 8)), 3),
       ": field 'a': truncated: the array's data ends early"},
  };
  for (const BadFile& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path path = dir.write(c.name, c.content);
    const ImageDataReader reader(path);
    ASSERT_NE(reader.find("a"), nullptr);
    const std::string message = user_error([&] { reader.read_doubles(*reader.find("a")); });
    EXPECT_EQ(message.find(path.string() + c.expected), 0u) << message;
  }
  const fs::path three =
      dir.write("count3.vti", vti("", ascii_array("a", kEight, "Float64", " NumberOfComponents=\"3\"")));
  const ImageDataReader reader(three);
  EXPECT_EQ(user_error([&] { reader.read(*reader.find("a"), 3); }),
            three.string() +
                ":7: field 'a': the ascii array has 8 values, expected 24 (3 components at each of the 2x2x2 grid's "
                "nodes)");
}

// ---------------------------------------------------------------------------------------------
// PolyData

TEST(CoreVtk, PolyDataFileHasPointsCellsAndData) {
  test::TempDir dir;
  PolyData poly;
  poly.points = {0, 0, 0, 0.1, 0, 0, 0.1, 0.2, -1};
  poly.lines = Cells{{0, 1, 1, 2}, {2, 4}};
  const std::vector<float> weight = {0.5f, 0.1f, 2};
  const std::vector<double> birth = {0.25, 1.0 / 3};
  const std::vector<std::int32_t> generation = {0, -7};
  const std::vector<std::uint8_t> kind = {1, 255};
  poly.point_data = Attributes{{{"weight", weight}}, ""};
  poly.cell_data = Attributes{{{"birth", birth}, {"generation", generation}, {"kind", kind}}, "birth"};
  write_poly_data(dir / "a.vtp", poly);
  EXPECT_EQ(slurp(dir / "a.vtp"),
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
            "  <PolyData>\n"
            "    <Piece NumberOfPoints=\"3\" NumberOfVerts=\"0\" NumberOfLines=\"2\" NumberOfStrips=\"0\" "
            "NumberOfPolys=\"0\">\n"
            "      <Points>\n"
            "        <DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">\n"
            "          0 0 0\n"
            "          0.10000000000000001 0 0\n"
            "          0.10000000000000001 0.20000000000000001 -1\n"
            "        </DataArray>\n"
            "      </Points>\n"
            "      <Lines>\n"
            "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">\n"
            "          0 1\n"
            "          1 2\n"
            "        </DataArray>\n"
            "        <DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">\n"
            "          2\n"
            "          4\n"
            "        </DataArray>\n"
            "      </Lines>\n"
            "      <PointData>\n"
            "        <DataArray type=\"Float32\" Name=\"weight\" format=\"ascii\">\n"
            "          0.5\n"
            "          0.100000001\n"
            "          2\n"
            "        </DataArray>\n"
            "      </PointData>\n"
            "      <CellData Scalars=\"birth\">\n"
            "        <DataArray type=\"Float64\" Name=\"birth\" format=\"ascii\">\n"
            "          0.25\n"
            "          0.33333333333333331\n"
            "        </DataArray>\n"
            "        <DataArray type=\"Int32\" Name=\"generation\" format=\"ascii\">\n"
            "          0\n"
            "          -7\n"
            "        </DataArray>\n"
            "        <DataArray type=\"UInt8\" Name=\"kind\" format=\"ascii\">\n"
            "          1\n"
            "          255\n"
            "        </DataArray>\n"
            "      </CellData>\n"
            "    </Piece>\n"
            "  </PolyData>\n"
            "</VTKFile>\n");
}

TEST(CoreVtk, PolyDataCountsEveryKindOfCellAndWritesEmptyBlocks) {
  test::TempDir dir;
  PolyData poly;
  poly.points = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  poly.verts = Cells{{2}, {1}};
  poly.polys = Cells{{0, 1, 2}, {3}};
  poly.lines = Cells{};  // present and empty: written
  const std::vector<std::int64_t> id = {10, 20};
  poly.cell_data = Attributes{{{"id", id}}, ""};
  write_poly_data(dir / "a.vtp", poly);
  const std::string text = slurp(dir / "a.vtp");
  EXPECT_NE(text.find("NumberOfPoints=\"3\" NumberOfVerts=\"1\" NumberOfLines=\"0\" NumberOfStrips=\"0\" "
                      "NumberOfPolys=\"1\""),
            std::string::npos)
      << text;
  const std::size_t verts = text.find("<Verts>"), lines = text.find("<Lines>"), polys = text.find("<Polys>");
  ASSERT_NE(verts, std::string::npos);
  ASSERT_NE(lines, std::string::npos);
  ASSERT_NE(polys, std::string::npos);
  EXPECT_LT(verts, lines);
  EXPECT_LT(lines, polys);
  EXPECT_NE(text.find("connectivity\" format=\"ascii\">\n          0 1 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("<CellData>\n        <DataArray type=\"Int64\" Name=\"id\" format=\"ascii\">\n          10\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("<PointData"), std::string::npos) << text;

  // No cells at all: no cell blocks.
  PolyData bare;
  bare.points = {1, 2, 3};
  write_poly_data(dir / "bare.vtp", bare);
  const std::string bare_text = slurp(dir / "bare.vtp");
  EXPECT_EQ(bare_text.find("<Lines>"), std::string::npos);
  EXPECT_NE(bare_text.find("          1 2 3\n"), std::string::npos) << bare_text;
}

TEST(CoreVtk, PolyDataWriterRejectsInconsistentInputAndLeavesNoFile) {
  test::TempDir dir;
  const auto expect_internal = [&](const PolyData& poly) {
    EXPECT_THROW(write_poly_data(dir / "a.vtp", poly), InternalError);
    EXPECT_FALSE(fs::exists(dir / "a.vtp"));
  };
  PolyData poly;
  poly.points = {0, 0, 0, 1, 0, 0};
  poly.lines = Cells{{0, 2}, {2}};  // point 2 does not exist
  expect_internal(poly);
  poly.lines = Cells{{0, 1}, {3}};  // offsets beyond the connectivity
  expect_internal(poly);
  poly.lines = Cells{{0, 1, 1}, {2}};  // connectivity left over
  expect_internal(poly);
  poly.lines = Cells{{0, 1}, {2}};
  const std::vector<double> wrong = {1, 2};  // one line, two values
  poly.cell_data = Attributes{{{"x", wrong}}, ""};
  expect_internal(poly);
  poly.cell_data = {};
  poly.points.push_back(1);  // not triples
  expect_internal(poly);
}

// ---------------------------------------------------------------------------------------------
// Collections and parallel ImageData

TEST(CoreVtk, CollectionListsEveryEntry) {
  test::TempDir dir;
  write_collection(dir / "run.pvd",
                   {{0.0, "snapshots/s_0.vti"}, {0.1, "snapshots/s_1.vti"}, {1e20, "a&\"b\".vti", 3, "g<1>"}});
  EXPECT_EQ(slurp(dir / "run.pvd"),
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
            "  <Collection>\n"
            "    <DataSet timestep=\"0\" group=\"\" part=\"0\" file=\"snapshots/s_0.vti\"/>\n"
            "    <DataSet timestep=\"0.10000000000000001\" group=\"\" part=\"0\" file=\"snapshots/s_1.vti\"/>\n"
            "    <DataSet timestep=\"1e+20\" group=\"g&lt;1&gt;\" part=\"3\" "
            "file=\"a&amp;&quot;b&quot;.vti\"/>\n"
            "  </Collection>\n</VTKFile>\n");
  write_collection(dir / "empty.pvd", {});
  EXPECT_EQ(slurp(dir / "empty.pvd"),
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
            "  <Collection>\n  </Collection>\n</VTKFile>\n");
}

TEST(CoreVtk, ParallelImageDataNamesItsPieces) {
  test::TempDir dir;
  const Image whole{{0, 9, 0, 4, 0, 0}, {0, 0, 0}, {0.5, 0.5, 0.5}};
  write_parallel_image_data(dir / "a.pvti", whole, {{"n", DataType::Float32, 1}, {"v", DataType::Float64, 3}}, "n",
                            {{{0, 5, 0, 4, 0, 0}, "a_0.vti"}, {{5, 9, 0, 4, 0, 0}, "a_1.vti"}}, 1);
  EXPECT_EQ(slurp(dir / "a.pvti"),
            "<?xml version=\"1.0\"?>\n"
            "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
            "  <PImageData WholeExtent=\"0 9 0 4 0 0\" GhostLevel=\"1\" Origin=\"0 0 0\" Spacing=\"0.5 0.5 0.5\">\n"
            "    <PPointData Scalars=\"n\">\n"
            "      <PDataArray type=\"Float32\" Name=\"n\" NumberOfComponents=\"1\"/>\n"
            "      <PDataArray type=\"Float64\" Name=\"v\" NumberOfComponents=\"3\"/>\n"
            "    </PPointData>\n"
            "    <Piece Extent=\"0 5 0 4 0 0\" Source=\"a_0.vti\"/>\n"
            "    <Piece Extent=\"5 9 0 4 0 0\" Source=\"a_1.vti\"/>\n"
            "  </PImageData>\n"
            "</VTKFile>\n");
  EXPECT_THROW(write_parallel_image_data(dir / "b.pvti", whole, {}, "", {{{0, 10, 0, 4, 0, 0}, "b_0.vti"}}),
               InternalError);
  EXPECT_FALSE(fs::exists(dir / "b.pvti"));

  // A piece is an ImageData file of the piece's extent; the reader takes it as it is.
  const std::vector<float> n(5 * 5, 1.5f);  // x 5..9, y 0..4
  write_image_data(dir / "a_1.vti", Image{{5, 9, 0, 4, 0, 0}, whole.origin, whole.spacing},
                   Attributes{{{"n", n}}, "n"});
  const ImageDataReader piece(dir / "a_1.vti");
  EXPECT_EQ(piece.info().image.extent, (Extent{5, 9, 0, 4, 0, 0}));
  EXPECT_EQ(piece.read_doubles(*piece.find("n")), std::vector<double>(n.size(), 1.5));
}

TEST(CoreVtk, TypeNamesAndSizes) {
  for (int k = 0; k <= static_cast<int>(DataType::Float64); ++k) {
    const auto type = static_cast<DataType>(k);
    EXPECT_EQ(parse_type(type_name(type)), type) << type_name(type);
  }
  EXPECT_FALSE(parse_type("Float16").has_value());
  EXPECT_EQ(type_size(DataType::UInt16), 2u);
  EXPECT_EQ(type_size(DataType::Float64), 8u);
  EXPECT_EQ(data_type_of<const std::int64_t>(), DataType::Int64);
  EXPECT_EQ(to_doubles(std::vector<std::int8_t>{-3, 4}), (std::vector<double>{-3, 4}));
}

}  // namespace
}  // namespace simkit::vtk
