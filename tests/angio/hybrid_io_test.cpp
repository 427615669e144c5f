// The hybrid model's files (hybrid_io.hpp): exact CSV contents, the ensemble summary's numbers,
// the network's VTK PolyData and the quick-look PNG.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "simkit/angio/hybrid.hpp"
#include "simkit/angio/hybrid_io.hpp"
#include "simkit/core/error.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using simkit::test::lines_of;
using simkit::test::slurp;

std::int64_t node_of(const Grid& g, int i, int j, int l) { return static_cast<std::int64_t>(g.index(i, j, l)); }

// A metrics row; `kinds` are the anastomoses by FusionKind (own, parent-daughter, sprout, vessel).
MetricsRow row(std::int64_t step, double t, std::int64_t tips, std::int64_t sprouts, std::int64_t branches,
               std::array<std::int64_t, kFusionKinds> kinds, double length, double front) {
  MetricsRow m;
  m.step = step;
  m.t = t;
  m.tips = tips;
  m.sprouts = sprouts;
  m.branches = branches;
  for (int k = 0; k < kFusionKinds; ++k) {
    m.anastomoses_by_kind[k] = kinds[static_cast<std::size_t>(k)];
    m.anastomoses += kinds[static_cast<std::size_t>(k)];
  }
  m.length = length;
  m.front = front;
  return m;
}

// ---------------------------------------------------------------------------------------------
// CSV files

TEST(AngioHybridIo, MetricsCsvHasTheHeaderAndExactRows) {
  test::TempDir dir;
  std::vector<MetricsRow> rows(2);
  rows[0] = row(0, 0.0, 3, 3, 0, {0, 0, 0, 0}, 0.15, 0.05);
  rows[1] = row(1, 0.1, 4, 4, 1, {1, 0, 0, 1}, 1.0 / 3, 0.1);
  write_metrics_csv(dir / "m.csv", rows);
  const std::string header =
      "step,t,tips,sprouts,branches,anastomoses,anastomoses_own,anastomoses_parent_daughter,anastomoses_sprout,"
      "anastomoses_vessel,length,front\n";
  EXPECT_EQ(slurp(dir / "m.csv"), header +
                                      "0,0,3,3,0,0,0,0,0,0,0.14999999999999999,0.050000000000000003\n"
                                      "1,0.10000000000000001,4,4,1,2,1,0,0,1,0.33333333333333331,0.10000000000000001\n");

  write_metrics_csv(dir / "empty.csv", {});
  EXPECT_EQ(slurp(dir / "empty.csv"), header);
}

TEST(AngioHybridIo, EnsembleCsvLeavesReachTimeEmptyWhenNotReached) {
  test::TempDir dir;
  std::vector<Realisation> ensemble(3);
  ensemble[0].seed = 7;
  ensemble[0].reached = true;
  ensemble[0].reach_time = 1.25;
  ensemble[0].branches = 4;
  ensemble[0].anastomoses = 2;
  ensemble[0].anastomoses_by_kind[1] = 1;
  ensemble[0].anastomoses_by_kind[3] = 1;
  ensemble[0].passes = 3;
  ensemble[0].metrics = {row(0, 0, 1, 1, 0, {0, 0, 0, 0}, 0.05, 0.05), row(1, 0.1, 1, 1, 0, {0, 0, 0, 0}, 0.7, 0.3)};
  ensemble[1].seed = 8;
  ensemble[1].reached = false;
  ensemble[1].reach_time = 99;  // ignored: not reached
  ensemble[1].branches = 0;
  ensemble[1].anastomoses = 5;
  ensemble[1].anastomoses_by_kind[2] = 5;
  ensemble[1].metrics = {row(0, 0, 1, 1, 0, {0, 0, 0, 0}, 0.1, 0.05)};
  ensemble[2].seed = 18446744073709551615ULL;  // the largest seed prints in full
  ensemble[2].reached = true;
  ensemble[2].reach_time = 0.1;
  write_ensemble_csv(dir / "ensemble.csv", ensemble);
  EXPECT_EQ(slurp(dir / "ensemble.csv"),
            "realisation,seed,reach_time,branches,anastomoses,anastomoses_own,anastomoses_parent_daughter,"
            "anastomoses_sprout,anastomoses_vessel,passes,length,front\n"
            "0,7,1.25,4,2,0,1,0,1,3,0.69999999999999996,0.29999999999999999\n"
            "1,8,,0,5,0,0,5,0,0,0.10000000000000001,0.050000000000000003\n"
            "2,18446744073709551615,0.10000000000000001,0,0,0,0,0,0,0,0,0\n");
}

// ---------------------------------------------------------------------------------------------
// Summary

Realisation with_totals(std::int64_t branches, std::int64_t anastomoses, double length) {
  Realisation r;
  r.branches = branches;
  r.anastomoses = anastomoses;
  r.metrics = {MetricsRow{}, MetricsRow{}};
  r.metrics.back().length = length;
  return r;
}

TEST(AngioHybridIo, SummaryHasMeanNearestRankBandAndCount) {
  // 21 realisations: branches 0..20, anastomoses 100 + 2 k, length k / 4, in shuffled order.
  // Nearest rank: p05 is the ceil(0.05 * 21) = 2nd smallest, p95 the ceil(0.95 * 21) = 20th.
  std::vector<int> order(21);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 shuffle(12345);
  std::shuffle(order.begin(), order.end(), shuffle);
  std::vector<Realisation> ensemble;
  for (const int k : order) {
    Realisation r = with_totals(k, 100 + 2 * k, k / 4.0);
    r.moves = 100;
    r.clipped_draws = k % 2;  // 10 odd k: 10 of 2100 draws clipped
    // The realisations with k = 3, 6, ..., 18 (6 of them) reached, at t = k / 2.
    if (k % 3 == 0 && k > 0) {
      r.reached = true;
      r.reach_time = k / 2.0;
    } else {
      r.reach_time = 1000;  // must not count
    }
    ensemble.push_back(r);
  }
  const json s = ensemble_summary(ensemble);
  SCOPED_TRACE(s.dump(2));
  EXPECT_EQ(s.at("realisations").get<int>(), 21);

  const json& b = s.at("branches");
  EXPECT_DOUBLE_EQ(b.at("mean").get<double>(), 10.0);
  EXPECT_EQ(b.at("p05").get<double>(), 1.0);
  EXPECT_EQ(b.at("p95").get<double>(), 19.0);
  EXPECT_EQ(b.at("count").get<int>(), 21);

  const json& a = s.at("anastomoses");
  EXPECT_DOUBLE_EQ(a.at("mean").get<double>(), 120.0);
  EXPECT_EQ(a.at("p05").get<double>(), 102.0);
  EXPECT_EQ(a.at("p95").get<double>(), 138.0);

  const json& l = s.at("length");
  EXPECT_DOUBLE_EQ(l.at("mean").get<double>(), 2.5);
  EXPECT_EQ(l.at("p05").get<double>(), 0.25);
  EXPECT_EQ(l.at("p95").get<double>(), 4.75);

  // Reach time over the 6 that reached (1.5, 3, ..., 9): p05 is the 1st, p95 the ceil(5.7) = 6th.
  const json& t = s.at("reach_time");
  EXPECT_EQ(t.at("count").get<int>(), 6);
  EXPECT_DOUBLE_EQ(t.at("mean").get<double>(), (1.5 + 3 + 4.5 + 6 + 7.5 + 9) / 6);
  EXPECT_EQ(t.at("p05").get<double>(), 1.5);
  EXPECT_EQ(t.at("p95").get<double>(), 9.0);

  EXPECT_DOUBLE_EQ(s.at("clipped_draw_fraction").get<double>(), 10.0 / 2100.0);
}

TEST(AngioHybridIo, SummaryOfOneRealisationIsItsValue) {
  Realisation r = with_totals(3, 1, 0.4);
  r.reached = true;
  r.reach_time = 2.5;
  const json s = ensemble_summary({r});
  for (const char* key : {"mean", "p05", "p95"}) {
    EXPECT_EQ(s.at("reach_time").at(key).get<double>(), 2.5) << key;
    EXPECT_EQ(s.at("branches").at(key).get<double>(), 3.0) << key;
    EXPECT_EQ(s.at("length").at(key).get<double>(), 0.4) << key;
  }
  EXPECT_EQ(s.at("reach_time").at("count").get<int>(), 1);
}

TEST(AngioHybridIo, SummaryWithNoneReachedHasNullReachTime) {
  std::vector<Realisation> ensemble = {with_totals(1, 0, 0.5), with_totals(3, 2, 1.5)};
  ensemble[0].reach_time = 4;  // not reached: ignored
  ensemble[0].moves = 10;
  const json s = ensemble_summary(ensemble);
  SCOPED_TRACE(s.dump(2));
  const json& t = s.at("reach_time");
  EXPECT_EQ(t.at("count").get<int>(), 0);
  for (const char* key : {"mean", "p05", "p95"}) EXPECT_TRUE(t.at(key).is_null()) << key;
  EXPECT_DOUBLE_EQ(s.at("branches").at("mean").get<double>(), 2.0);
  EXPECT_EQ(s.at("clipped_draw_fraction").get<double>(), 0.0);
  // What lands in result.json: null, never NaN (which is not JSON).
  const std::string text = s.dump();
  EXPECT_NE(text.find("\"mean\":null"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("NaN"), std::string::npos) << text;
}

TEST(AngioHybridIo, SummaryOfAnEmptyEnsembleIsAllNull) {
  const json s = ensemble_summary({});
  SCOPED_TRACE(s.dump(2));
  EXPECT_EQ(s.at("realisations").get<int>(), 0);
  for (const char* band : {"reach_time", "branches", "anastomoses", "length"}) {
    EXPECT_EQ(s.at(band).at("count").get<int>(), 0) << band;
    for (const char* key : {"mean", "p05", "p95"}) EXPECT_TRUE(s.at(band).at(key).is_null()) << band << " " << key;
  }
  EXPECT_TRUE(s.at("clipped_draw_fraction").is_null());  // no draws at all
}

// ---------------------------------------------------------------------------------------------
// VTK PolyData

struct Tag {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::size_t content_begin = 0;  // just past '>'
};

// A small XML-ish scanner: every tag with its attributes; fails the test when tags do not nest.
std::vector<Tag> scan_xml(const std::string& text) {
  std::vector<Tag> tags;
  std::vector<std::string> open;
  std::size_t pos = 0;
  while ((pos = text.find('<', pos)) != std::string::npos) {
    const std::size_t end = text.find('>', pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated tag at " << pos;
      break;
    }
    std::string inner = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (inner.starts_with("?")) continue;
    if (inner.starts_with("/")) {
      const std::string name = inner.substr(1);
      if (open.empty() || open.back() != name) {
        ADD_FAILURE() << "</" << name << "> closes " << (open.empty() ? "nothing" : "<" + open.back() + ">");
      } else {
        open.pop_back();
      }
      continue;
    }
    const bool self_closing = inner.ends_with("/");
    if (self_closing) inner.pop_back();
    Tag tag;
    tag.content_begin = pos;
    std::istringstream words(inner);
    words >> tag.name;
    std::string rest;
    std::getline(words, rest);
    std::size_t k = 0;
    while ((k = rest.find('=', k)) != std::string::npos) {
      std::size_t key_start = rest.rfind(' ', k);
      key_start = key_start == std::string::npos ? 0 : key_start + 1;
      const std::string key = rest.substr(key_start, k - key_start);
      EXPECT_EQ(rest[k + 1], '"') << key;
      const std::size_t close = rest.find('"', k + 2);
      tag.attributes[key] = rest.substr(k + 2, close - k - 2);
      k = close + 1;
    }
    if (!self_closing) open.push_back(tag.name);
    tags.push_back(tag);
  }
  EXPECT_TRUE(open.empty()) << "unclosed <" << (open.empty() ? "" : open.back()) << ">";
  return tags;
}

struct Vtp {
  long points = -1, lines = -1;
  std::map<std::string, std::vector<double>> arrays;  // by Name; the points' array as "Points"
  std::map<std::string, std::string> types;
};

Vtp parse_vtp(const std::string& text) {
  Vtp v;
  const std::vector<Tag> tags = scan_xml(text);
  bool in_points = false;
  for (const Tag& t : tags) {
    if (t.name == "VTKFile") {
      EXPECT_EQ(t.attributes.at("type"), "PolyData");
    } else if (t.name == "Piece") {
      v.points = std::stol(t.attributes.at("NumberOfPoints"));
      v.lines = std::stol(t.attributes.at("NumberOfLines"));
    } else if (t.name == "Points") {
      in_points = true;
    } else if (t.name == "DataArray") {
      const std::string name = in_points ? "Points" : t.attributes.at("Name");
      in_points = false;
      EXPECT_EQ(t.attributes.at("format"), "ascii") << name;
      v.types[name] = t.attributes.at("type");
      const std::size_t end = text.find("</DataArray>", t.content_begin);
      std::istringstream values(text.substr(t.content_begin, end - t.content_begin));
      std::vector<double>& out = v.arrays[name];
      std::string token;
      while (values >> token) {
        char* stop = nullptr;
        out.push_back(std::strtod(token.c_str(), &stop));
        EXPECT_EQ(*stop, '\0') << name << ": " << token;
      }
    }
  }
  return v;
}

TEST(AngioHybridIo, NetworkVtpHasPointsLinesAndCellData) {
  HybridProblem p;
  p.grid = Grid{5, 4, 3, 0.25};
  p.dt = 0.01;
  const Grid& g = p.grid;
  Realisation r;
  // A sprout from the vessel along x, and a branch in y from its second node.
  r.segments = {Segment{node_of(g, 0, 1, 2), node_of(g, 1, 1, 2), 0, 0, 0, SegmentKind::Move},
                Segment{node_of(g, 1, 1, 2), node_of(g, 2, 1, 2), 3, 0, 0, SegmentKind::Move},
                Segment{node_of(g, 1, 1, 2), node_of(g, 1, 2, 2), 7, 1, 0, SegmentKind::Move}};
  test::TempDir dir;
  write_network_vtp(dir / "network.vtp", p, r);
  const std::string text = slurp(dir / "network.vtp");
  SCOPED_TRACE(text);
  ASSERT_TRUE(text.starts_with("<?xml")) << text;
  const Vtp v = parse_vtp(text);
  EXPECT_EQ(v.points, 4);  // shared nodes are one point
  EXPECT_EQ(v.lines, 3);
  EXPECT_EQ(v.types.at("Points"), "Float64");
  EXPECT_EQ(v.types.at("birth_time"), "Float64");
  EXPECT_EQ(v.types.at("generation"), "Int32");
  const std::vector<double>& xyz = v.arrays.at("Points");
  const std::vector<double>& conn = v.arrays.at("connectivity");
  ASSERT_EQ(xyz.size(), 3u * 4);
  ASSERT_EQ(conn.size(), 2u * 3);
  EXPECT_EQ(v.arrays.at("offsets"), (std::vector<double>{2, 4, 6}));

  // Each line's two points are its segment's nodes at (i h, j h, l h), exactly.
  const std::array<std::array<std::array<int, 3>, 2>, 3> ends = {
      {{{{0, 1, 2}, {1, 1, 2}}}, {{{1, 1, 2}, {2, 1, 2}}}, {{{1, 1, 2}, {1, 2, 2}}}}};
  for (int s = 0; s < 3; ++s) {
    for (int e = 0; e < 2; ++e) {
      const double id = conn[static_cast<std::size_t>(2 * s + e)];
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 4);
      const auto at = static_cast<std::size_t>(id) * 3;
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(xyz[at + static_cast<std::size_t>(c)], ends[s][e][c] * 0.25)
            << "segment " << s << " end " << e << " component " << c;
      }
    }
  }
  // The shared node (1, 1, 2) is one point.
  EXPECT_EQ(conn[1], conn[2]);
  EXPECT_EQ(conn[2], conn[4]);

  EXPECT_EQ(v.arrays.at("birth_time"), (std::vector<double>{0 * 0.01, 3 * 0.01, 7 * 0.01}));
  EXPECT_EQ(v.arrays.at("generation"), (std::vector<double>{0, 0, 1}));
}

TEST(AngioHybridIo, EmptyNetworkVtpIsValid) {
  HybridProblem p;
  p.grid = Grid{5, 5, 1, 0.25};
  p.dt = 0.01;
  test::TempDir dir;
  write_network_vtp(dir / "network.vtp", p, Realisation{});
  const Vtp v = parse_vtp(slurp(dir / "network.vtp"));
  EXPECT_EQ(v.points, 0);
  EXPECT_EQ(v.lines, 0);
  EXPECT_TRUE(v.arrays.at("birth_time").empty());
}

TEST(AngioHybridIo, SegmentOutsideTheGridIsAnInternalError) {
  HybridProblem p;
  p.grid = Grid{4, 4, 1, 0.25};
  p.dt = 0.01;
  Realisation r;
  r.segments = {Segment{0, 16, 0, 0, 0, SegmentKind::Move}};
  test::TempDir dir;
  EXPECT_THROW(write_network_vtp(dir / "network.vtp", p, r), InternalError);
  EXPECT_THROW(write_network_png(dir.path(), p, r), InternalError);
  EXPECT_FALSE(fs::exists(dir / "network.vtp"));
}

// ---------------------------------------------------------------------------------------------
// PNG

struct Png {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  std::array<std::uint8_t, 3> at(int x, int y) const {
    const std::size_t k = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + x) * 3;
    return {rgb[k], rgb[k + 1], rgb[k + 2]};
  }
};

std::optional<Png> read_png(const fs::path& path) {
  const std::string bytes = slurp(path);
  EXPECT_TRUE(bytes.starts_with("\x89PNG\r\n\x1a\n")) << path;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    ADD_FAILURE() << path << ": " << image.message;
    return std::nullopt;
  }
  image.format = PNG_FORMAT_RGB;
  Png out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    ADD_FAILURE() << path << ": " << image.message;
    return std::nullopt;
  }
  return out;
}

using Rgb = std::array<std::uint8_t, 3>;
constexpr Rgb kWhite = {255, 255, 255};

bool dark(const Rgb& c) { return c[0] < 64 && c[0] == c[1] && c[1] == c[2]; }
bool grey(const Rgb& c) { return c[0] >= 64 && c[0] < 255 && c[0] == c[1] && c[1] == c[2]; }

// The pixel at the centre of node (a, b) of a panel `rows` nodes high, `scale` px per node, whose
// left edge is at x0 (b upwards).
std::pair<int, int> centre(int a, int b, int rows, int scale, int x0 = 0) {
  return {x0 + a * scale + scale / 2, rows * scale - 1 - (b * scale + scale / 2)};
}

TEST(AngioHybridIo, NetworkPng2dHasOnePanelWithVesselAndSegments) {
  HybridProblem p;
  p.grid = Grid{21, 11, 1, 0.05};
  p.dt = 0.01;
  const Grid& g = p.grid;
  Realisation r;
  r.segments = {Segment{node_of(g, 0, 5, 0), node_of(g, 1, 5, 0), 0, 0, 0, SegmentKind::Move},
                Segment{node_of(g, 1, 5, 0), node_of(g, 2, 5, 0), 1, 0, 0, SegmentKind::Move},
                Segment{node_of(g, 2, 5, 0), node_of(g, 2, 6, 0), 2, 1, 0, SegmentKind::Move}};
  test::TempDir dir;
  const std::vector<fs::path> files = write_network_png(dir.path(), p, r);
  ASSERT_EQ(files, std::vector<fs::path>{dir / "network.png"});
  const auto png = read_png(dir / "network.png");
  ASSERT_TRUE(png);
  const int scale = 800 / 21;  // 38 px per node: the longest side at most 800 px
  ASSERT_EQ(png->width, 21 * scale);
  ASSERT_EQ(png->height, 11 * scale);
  for (const auto& [i, j] : std::vector<std::pair<int, int>>{{1, 5}, {2, 5}, {2, 6}}) {
    const auto [x, y] = centre(i, j, g.ny, scale);
    EXPECT_TRUE(dark(png->at(x, y))) << "node " << i << "," << j;
  }
  // Between nodes (1, 5) and (2, 5): the segment is drawn continuously.
  EXPECT_TRUE(dark(png->at(centre(1, 5, g.ny, scale).first + scale / 2, centre(1, 5, g.ny, scale).second)));
  // The parent vessel at x = 0, away from the sprout.
  for (const int j : {0, 3, 10}) {
    const auto [x, y] = centre(0, j, g.ny, scale);
    EXPECT_TRUE(grey(png->at(x, y))) << "vessel at j = " << j;
  }
  // Nodes that no segment touches are white; y points up (node (2, 6) is above (2, 5)).
  for (const auto& [i, j] : std::vector<std::pair<int, int>>{{2, 4}, {3, 5}, {10, 5}, {20, 10}, {1, 6}}) {
    const auto [x, y] = centre(i, j, g.ny, scale);
    EXPECT_EQ(png->at(x, y), kWhite) << "node " << i << "," << j;
  }
  EXPECT_EQ(png->at(png->width - 1, 0), kWhite);
}

TEST(AngioHybridIo, NetworkPng3dHasXyAndXzPanels) {
  HybridProblem p;
  p.grid = Grid{10, 6, 4, 0.1};
  p.dt = 0.01;
  const Grid& g = p.grid;
  Realisation r;
  // Along x at (j, l) = (2, 1), then up in z.
  r.segments = {Segment{node_of(g, 0, 2, 1), node_of(g, 1, 2, 1), 0, 0, 0, SegmentKind::Move},
                Segment{node_of(g, 1, 2, 1), node_of(g, 1, 2, 2), 1, 0, 0, SegmentKind::Move}};
  test::TempDir dir;
  write_network_png(dir.path(), p, r);
  const auto png = read_png(dir / "network.png");
  ASSERT_TRUE(png);
  const int scale = 800 / 10;
  const int panel = 10 * scale;
  ASSERT_GT(png->width, 2 * panel - 1);
  ASSERT_LT(png->width, 2 * panel + 64);  // two panels side by side, a small gap between
  ASSERT_EQ(png->height, 6 * scale);      // the taller of ny and nz
  const int x_xz = png->width - panel;    // the xz panel is the right one
  // xy panel: node (1, 2) dark, vessel grey at (0, 5), (1, 3) white.
  EXPECT_TRUE(dark(png->at(centre(1, 2, g.ny, scale).first, centre(1, 2, g.ny, scale).second)));
  EXPECT_TRUE(grey(png->at(centre(0, 5, g.ny, scale).first, centre(0, 5, g.ny, scale).second)));
  EXPECT_EQ(png->at(centre(1, 3, g.ny, scale).first, centre(1, 3, g.ny, scale).second), kWhite);
  // xz panel: nodes (1, 1) and (1, 2) dark, (2, 1) white, vessel grey at (0, 3).
  for (const auto& [i, l] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}}) {
    const auto [x, y] = centre(i, l, g.nz, scale, x_xz);
    EXPECT_TRUE(dark(png->at(x, y))) << "xz node " << i << "," << l;
  }
  EXPECT_EQ(png->at(centre(2, 1, g.nz, scale, x_xz).first, centre(2, 1, g.nz, scale, x_xz).second), kWhite);
  EXPECT_TRUE(grey(png->at(centre(0, 3, g.nz, scale, x_xz).first, centre(0, 3, g.nz, scale, x_xz).second)));
  // The gap between the panels is white.
  EXPECT_EQ(png->at(panel + (x_xz - panel) / 2, 0), kWhite);
}

TEST(AngioHybridIo, NetworkPngKeepsAtLeastTwoPixelsPerNode) {
  HybridProblem p;
  p.grid = Grid{1000, 3, 1, 0.001};
  p.dt = 0.01;
  test::TempDir dir;
  write_network_png(dir.path(), p, Realisation{});
  const auto png = read_png(dir / "network.png");
  ASSERT_TRUE(png);
  EXPECT_EQ(png->width, 2000);
  EXPECT_EQ(png->height, 6);
}

// ---------------------------------------------------------------------------------------------
// A real realisation

TEST(AngioHybridIo, FilesOfAReferenceRealisationAgreeWithIt) {
  HybridProblem p;
  p.grid = Grid{21, 21, 1, 1.0 / 20};
  p.dt = 0.002;
  p.hybrid.t_max = 0.5;
  const Realisation r = run_hybrid_reference(p, 3);
  ASSERT_FALSE(r.metrics.empty());
  ASSERT_FALSE(r.segments.empty());
  test::TempDir dir;
  write_metrics_csv(dir / "metrics.csv", r.metrics);
  write_ensemble_csv(dir / "ensemble.csv", {r, r});
  write_network_vtp(dir / "network.vtp", p, r);
  write_network_png(dir.path(), p, r);

  const std::vector<std::string> lines = lines_of(slurp(dir / "metrics.csv"));
  ASSERT_EQ(lines.size(), r.metrics.size() + 1);
  for (std::size_t k = 0; k < r.metrics.size(); ++k) {
    const MetricsRow& m = r.metrics[k];
    const std::int64_t* kinds = m.anastomoses_by_kind;
    EXPECT_EQ(lines[k + 1],
              fmt::format("{},{:.17g},{},{},{},{},{},{},{},{},{:.17g},{:.17g}", m.step, m.t, m.tips, m.sprouts,
                          m.branches, m.anastomoses, kinds[0], kinds[1], kinds[2], kinds[3], m.length, m.front));
  }
  const std::vector<std::string> rows = lines_of(slurp(dir / "ensemble.csv"));
  ASSERT_EQ(rows.size(), 3u);
  const std::string reach = r.reached ? fmt::format("{:.17g}", r.reach_time) : "";
  const std::int64_t* kinds = r.anastomoses_by_kind;
  EXPECT_EQ(rows[2], fmt::format("1,3,{},{},{},{},{},{},{},{},{:.17g},{:.17g}", reach, r.branches, r.anastomoses,
                                 kinds[0], kinds[1], kinds[2], kinds[3], r.passes, r.metrics.back().length,
                                 r.metrics.back().front));

  const Vtp v = parse_vtp(slurp(dir / "network.vtp"));
  EXPECT_EQ(v.lines, static_cast<long>(r.segments.size()));
  ASSERT_EQ(v.arrays.at("birth_time").size(), r.segments.size());
  ASSERT_EQ(v.arrays.at("sprout").size(), r.segments.size());
  ASSERT_EQ(v.arrays.at("kind").size(), r.segments.size());
  for (std::size_t s = 0; s < r.segments.size(); ++s) {
    EXPECT_EQ(v.arrays.at("birth_time")[s], r.segments[s].birth_step * p.dt) << s;
    EXPECT_EQ(v.arrays.at("sprout")[s], r.segments[s].sprout) << s;
    EXPECT_EQ(v.arrays.at("kind")[s], static_cast<int>(r.segments[s].kind)) << s;
  }
  const auto png = read_png(dir / "network.png");
  ASSERT_TRUE(png);
  EXPECT_EQ(png->width, 21 * (800 / 21));
  EXPECT_EQ(png->height, 21 * (800 / 21));
}

// A stop asked while the outputs are written (its many metrics files) ends the write with Stopped
// and leaves the directory as the earlier run left it: no file of the stopped run, no staging
// directory. The stop comes true at the 5th question (while the metrics files are written) and at
// the last one (after every file is staged, before they move into place).
TEST(AngioHybridIo, AStopWhileWritingLeavesTheOutputAsItWas) {
  HybridProblem p;
  p.grid = Grid{21, 21, 1, 1.0 / 20};
  p.dt = 0.002;
  p.hybrid.t_max = 0.1;
  test::TempDir dir;
  const fs::path out = dir / "out";
  const std::vector<Realisation> earlier{run_hybrid_reference(p, 3), run_hybrid_reference(p, 4)};
  write_hybrid_outputs(out, p, earlier, HybridRunInfo{3, Backend::Reference, 0.1, false, 1, {}});
  const auto before = test::snapshot(dir.path());
  ASSERT_TRUE(before.count("out/metrics/realisation_00001.csv")) << "the earlier run's files";
  std::vector<Realisation> larger;
  for (int r = 0; r < 40; ++r) larger.push_back(run_hybrid_reference(p, 10 + static_cast<std::uint64_t>(r)));
  int questions = 0;
  const HybridRunInfo fifth{10, Backend::Reference, 0.1, false, 1, [&] { return ++questions == 5; }};
  EXPECT_THROW(write_hybrid_outputs(out, p, larger, fifth), Stopped);
  EXPECT_EQ(questions, 5) << "the files not started are skipped";
  EXPECT_EQ(test::snapshot(dir.path()), before) << "stopped among the metrics files";
  // The last question: a run that would have gone through asks 41 times (40 files, then once more).
  const HybridRunInfo last{10, Backend::Reference, 0.1, false, 1, [&] { return ++questions == 41; }};
  questions = 0;
  EXPECT_THROW(write_hybrid_outputs(out, p, larger, last), Stopped);
  EXPECT_EQ(questions, 41);
  EXPECT_EQ(test::snapshot(dir.path()), before) << "stopped before the files moved";
  // Never stopped: the larger ensemble's files replace the earlier ones.
  questions = 0;
  const HybridRunInfo never{10, Backend::Reference, 0.1, false, 1, [&] { return ++questions < 0; }};
  write_hybrid_outputs(out, p, larger, never);
  EXPECT_EQ(questions, 41);
  EXPECT_TRUE(fs::exists(out / "metrics" / "realisation_00039.csv"));
}

TEST(AngioHybridIo, WritingIntoAMissingDirectoryIsAUserError) {
  test::TempDir dir;
  const std::string message = test::user_error([&] { write_metrics_csv(dir / "no" / "such" / "m.csv", {}); });
  EXPECT_NE(message.find("m.csv"), std::string::npos) << message;
}

}  // namespace
}  // namespace simkit::angio
