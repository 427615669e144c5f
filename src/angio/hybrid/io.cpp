// Files of the hybrid model: the metrics and ensemble tables, the ensemble summary, the network as
// VTK PolyData and a quick-look projection (hybrid_io.hpp).
#include "simkit/angio/hybrid_io.hpp"
#include "simkit/angio/config.hpp"
#include "simkit/angio/io.hpp"
#include "angio/hybrid/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "simkit/core/backend.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"
#include "core/collective.hpp"
#include "core/image.hpp"
#include "core/output.hpp"
#include "core/parallel.hpp"
#include "core/vtk.hpp"

namespace simkit::angio {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Exact round trip for doubles (17 significant digits), as the other angio writers.
std::string exact(double x) { return fmt::format("{:.17g}", x); }

// Total segment length at the end of a realisation (its last metrics row; 0 without rows).
double final_length(const Realisation& r) { return r.metrics.empty() ? 0.0 : r.metrics.back().length; }

struct NodeIjl {
  std::int64_t i = 0, j = 0, l = 0;
};

// A segment naming a node outside the grid is a bug in simkit, not bad input.
NodeIjl node_ijl(const Grid& g, std::int64_t node, std::string_view who) {
  const auto nodes = static_cast<std::int64_t>(g.nodes());
  if (node < 0 || node >= nodes) {
    throw InternalError(
        fmt::format("{}: node {} is outside the {}x{}x{} grid ({} nodes)", who, node, g.nx, g.ny, g.nz, nodes));
  }
  int i, j, l;
  g.coordinates(node, i, j, l);
  return {i, j, l};
}

// Mean and nearest-rank 5th and 95th percentiles of `values`, with their count; null when empty.
json band(std::vector<double> values) {
  json j;
  if (values.empty()) {
    j["mean"] = nullptr;
    j["p05"] = nullptr;
    j["p95"] = nullptr;
    j["count"] = 0;
    return j;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (const double v : values) sum += v;
  const std::size_t n = values.size();
  // Nearest rank: the ceil(q n)-th smallest value (1-based), at least the first.
  const auto rank = [&](double q) {
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return values[std::clamp<std::size_t>(k, 1, n) - 1];
  };
  j["mean"] = sum / static_cast<double>(n);
  j["p05"] = rank(0.05);
  j["p95"] = rank(0.95);
  j["count"] = n;
  return j;
}

}  // namespace

namespace {

// ",anastomoses_own,anastomoses_parent_daughter,anastomoses_sprout,anastomoses_vessel"
std::string kind_columns() {
  std::string text;
  for (const char* name : kFusionKindNames) text += fmt::format(",anastomoses_{}", name);
  return text;
}
std::string kind_values(const std::int64_t (&counts)[kFusionKinds]) {
  std::string text;
  for (const std::int64_t c : counts) text += fmt::format(",{}", c);
  return text;
}
double final_front(const Realisation& r) { return r.metrics.empty() ? 0.0 : r.metrics.back().front; }

}  // namespace

void write_metrics_csv(const fs::path& path, const std::vector<MetricsRow>& rows) {
  std::string text = "step,t,tips,sprouts,branches,anastomoses" + kind_columns() + ",length,front\n";
  for (const MetricsRow& m : rows) {
    text += fmt::format("{},{},{},{},{},{}{},{},{}\n", m.step, exact(m.t), m.tips, m.sprouts, m.branches,
                        m.anastomoses, kind_values(m.anastomoses_by_kind), exact(m.length), exact(m.front));
  }
  write_file_atomic(path, text);
}

void write_ensemble_csv(const fs::path& path, const std::vector<Realisation>& ensemble) {
  std::string text = "realisation,seed,reach_time,branches,anastomoses" + kind_columns() + ",passes,length,front\n";
  for (std::size_t r = 0; r < ensemble.size(); ++r) {
    const Realisation& e = ensemble[r];
    text += fmt::format("{},{},{},{},{}{},{},{},{}\n", r, e.seed, e.reached ? exact(e.reach_time) : std::string(),
                        e.branches, e.anastomoses, kind_values(e.anastomoses_by_kind), e.passes,
                        exact(final_length(e)), exact(final_front(e)));
  }
  write_file_atomic(path, text);
}

json ensemble_summary(const std::vector<Realisation>& ensemble) {
  std::vector<double> reach, branches, anastomoses, length, front;
  std::vector<double> by_kind[kFusionKinds];
  std::int64_t moves = 0, clipped = 0, passes = 0, reached = 0;
  for (const Realisation& r : ensemble) {
    if (r.reached) reach.push_back(r.reach_time);
    reached += r.reached ? 1 : 0;
    branches.push_back(static_cast<double>(r.branches));
    anastomoses.push_back(static_cast<double>(r.anastomoses));
    for (int k = 0; k < kFusionKinds; ++k) by_kind[k].push_back(static_cast<double>(r.anastomoses_by_kind[k]));
    length.push_back(final_length(r));
    front.push_back(final_front(r));
    moves += r.moves;
    clipped += r.clipped_draws;
    passes += r.passes;
  }
  json j;
  j["realisations"] = ensemble.size();
  j["reached"] = reached;
  j["reached_fraction"] = ensemble.empty() ? json(nullptr) : json(static_cast<double>(reached) / static_cast<double>(ensemble.size()));
  j["reach_time"] = band(std::move(reach));
  j["branches"] = band(std::move(branches));
  j["anastomoses"] = band(std::move(anastomoses));
  json kinds = json::object();
  for (int k = 0; k < kFusionKinds; ++k) kinds[kFusionKindNames[k]] = band(std::move(by_kind[k]));
  j["anastomoses_by_kind"] = std::move(kinds);
  j["length"] = band(std::move(length));
  j["front"] = band(std::move(front));
  j["passes"] = passes;
  j["moves"] = moves;
  j["clipped_draws"] = clipped;
  if (moves > 0) {
    j["clipped_draw_fraction"] = static_cast<double>(clipped) / static_cast<double>(moves);
  } else {
    j["clipped_draw_fraction"] = nullptr;  // no draws: the fraction is undefined
  }
  return j;
}

void write_network_vtp(const fs::path& path, const HybridProblem& problem, const Realisation& r) {
  const Grid& g = problem.grid;
  // Points: the segments' nodes, each once, in order of first appearance, at (i h, j h, l h).
  std::unordered_map<std::int64_t, std::int64_t> point_of;
  vtk::PolyData poly;
  vtk::Cells& lines = poly.lines.emplace();
  lines.connectivity.reserve(2 * r.segments.size());
  lines.offsets.reserve(r.segments.size());
  for (const Segment& s : r.segments) {
    for (const std::int64_t node : {s.from, s.to}) {
      const NodeIjl p = node_ijl(g, node, "write_network_vtp");
      const auto [it, added] = point_of.try_emplace(node, static_cast<std::int64_t>(point_of.size()));
      if (added) {
        for (const std::int64_t x : {p.i, p.j, p.l}) poly.points.push_back(static_cast<double>(x) * g.h);
      }
      lines.connectivity.push_back(it->second);
    }
    lines.offsets.push_back(static_cast<std::int64_t>(lines.connectivity.size()));
  }

  std::vector<double> birth_time;
  std::vector<std::int32_t> generation, sprout;
  std::vector<std::uint8_t> kind;
  for (const Segment& s : r.segments) {
    birth_time.push_back(s.birth_step * problem.dt);
    generation.push_back(static_cast<std::int32_t>(s.generation));
    sprout.push_back(static_cast<std::int32_t>(s.sprout));
    kind.push_back(static_cast<std::uint8_t>(s.kind));
  }
  poly.cell_data.scalars = "birth_time";
  poly.cell_data.arrays = {{"birth_time", birth_time}, {"generation", generation}, {"sprout", sprout}, {"kind", kind}};
  vtk::write_poly_data(path, poly);
}

std::vector<fs::path> write_network_png(const fs::path& dir, const HybridProblem& problem, const Realisation& r) {
  const Grid& g = problem.grid;
  if (g.nx < 1 || g.ny < 1 || g.nz < 1) {
    throw InternalError(fmt::format("write_network_png: invalid grid {}x{}x{}", g.nx, g.ny, g.nz));
  }
  const bool xz = g.nz > 1;
  constexpr int kMaxPanel = 800, kGap = 8;
  constexpr std::uint8_t kVessel = 160, kSegment = 0;
  // Pixels per node: the panel's longest side at most ~800 px, but each node at least 2 px.
  const int longest = std::max({g.nx, g.ny, xz ? g.nz : 1});
  const int scale = std::max(2, kMaxPanel / longest);
  const int panel_width = g.nx * scale;
  const int width = xz ? 2 * panel_width + kGap : panel_width;
  const int height = std::max(g.ny, xz ? g.nz : 1) * scale;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3, 255);

  // Strokes are `stroke` px wide, centred in each node's scale x scale cell.
  const int stroke = std::max(2, scale / 2);
  const int inset = (scale - stroke) / 2;
  // Fills the stroke between nodes (a0, b0) and (a1, b1) of a panel: a to the right, b up (row 0
  // of the panel, `rows` nodes high, is the bottom of its cells).
  const auto fill = [&](int panel, int rows, std::int64_t a0, std::int64_t b0, std::int64_t a1, std::int64_t b1,
                        std::uint8_t grey) {
    const int x_left = panel * (panel_width + kGap);
    const int x0 = x_left + static_cast<int>(std::min(a0, a1)) * scale + inset;
    const int x1 = x_left + static_cast<int>(std::max(a0, a1)) * scale + inset + stroke;
    const int y0 = static_cast<int>(std::min(b0, b1)) * scale + inset;
    const int y1 = static_cast<int>(std::max(b0, b1)) * scale + inset + stroke;
    for (int y = y0; y < y1; ++y) {
      const int row = rows * scale - 1 - y;
      for (int x = x0; x < x1; ++x) {
        const std::size_t at = (static_cast<std::size_t>(row) * static_cast<std::size_t>(width) + x) * 3;
        rgb[at] = rgb[at + 1] = rgb[at + 2] = grey;
      }
    }
  };

  // The parent vessel: the x = 0 face, a grey line in each panel.
  fill(0, g.ny, 0, 0, 0, g.ny - 1, kVessel);
  if (xz) fill(1, g.nz, 0, 0, 0, g.nz - 1, kVessel);
  for (const Segment& s : r.segments) {
    const NodeIjl a = node_ijl(g, s.from, "write_network_png");
    const NodeIjl b = node_ijl(g, s.to, "write_network_png");
    fill(0, g.ny, a.i, a.j, b.i, b.j, kSegment);
    if (xz) fill(1, g.nz, a.i, a.l, b.i, b.l, kSegment);
  }
  const fs::path file = dir / "network.png";
  write_png_rgb(file, width, height, rgb);
  return {file};
}

Fields<double> hybrid_fields(const HybridProblem& p, const Realisation& r) {
  const Grid& g = p.grid;
  Fields<double> out = initial_fields<double>(g, p.initial);
  // How many updates of step (4) each node had by the end (the last step is r.steps - 1).
  std::vector<std::int64_t> updates(g.nodes(), 0);
  std::vector<bool> network(g.nodes(), false);
  for (const std::int64_t node : parent_vessel(g)) network[static_cast<std::size_t>(node)] = true;
  if (p.hybrid.uptake == Uptake::Trail) {
    // n = 1 from the step a node was occupied in (segments are born at step + 1) to the end.
    for (const std::int64_t node : parent_vessel(g)) updates[static_cast<std::size_t>(node)] = r.steps;
    for (const Segment& s : r.segments) {
      const auto to = static_cast<std::size_t>(s.to);
      if (s.kind == SegmentKind::Sprout || s.kind == SegmentKind::Move || s.kind == SegmentKind::Branch) {
        network[to] = true;
        updates[to] = r.steps - std::max<std::int64_t>(s.birth_step - 1, 0);
      }
    }
  } else {
    // n = 1 where an active tip stood at the end of a step: follow each sprout's tip from the step
    // it arrived at a node (present at that step's update) to the step it left it or fused.
    std::vector<std::int64_t> at, since;  // per sprout: its tip's node and arrival step (-1: gone)
    auto settle = [&](std::size_t k, std::int64_t until) {
      if (at[k] >= 0) updates[static_cast<std::size_t>(at[k])] += until - since[k];
    };
    for (const Segment& s : r.segments) {
      const auto k = static_cast<std::size_t>(s.sprout);
      if (k >= at.size()) {
        at.resize(k + 1, -1);
        since.resize(k + 1, 0);
      }
      const std::int64_t step = std::max<std::int64_t>(s.birth_step - 1, 0);
      if (s.kind != SegmentKind::Sprout && s.kind != SegmentKind::Branch) settle(k, step);
      at[k] = is_fusion(s.kind) ? -1 : s.to;
      since[k] = step;
      if (!is_fusion(s.kind) && s.kind != SegmentKind::Pass) network[static_cast<std::size_t>(s.to)] = true;
    }
    for (std::size_t k = 0; k < at.size(); ++k) settle(k, r.steps);
  }
  for (std::size_t node = 0; node < g.nodes(); ++node) {
    const std::int64_t m = updates[node];
    out.n[node] = network[node] ? 1.0 : 0.0;
    out.f[node] = occupied_f(out.f[node], p.dt, p.model.fn_production, p.model.fn_uptake, m);
    out.c[node] = r.final_c.empty() ? occupied_c(out.c[node], p.dt, p.model.taf_uptake, m) : r.final_c[node];
  }
  return out;
}

namespace {

// The metrics file of realisation r below the output directory `dir`.
fs::path metrics_file(const fs::path& dir, std::uint64_t r) {
  return dir / "metrics" / fmt::format("realisation_{:05d}.csv", r);
}

// How many of realisations first .. first + count - 1 have a metrics file: those below `files`.
std::uint64_t with_files(std::uint64_t first, std::uint64_t count, std::uint64_t files) {
  return files <= first ? 0 : std::min(count, files - first);
}

// metrics/realisation_NNNNN.csv of realisations first .. first + count - 1 that are below
// info.metrics_files, the k-th from realisations[k], on info.threads threads (0: all;
// effective_threads): each file is its own (formatting, then a create, write and rename; one
// thread took 3-4 s for 20 000 files, ten times the ensemble's GPU run). The first failure is
// raised after the loop; the staging directory they go to is removed with it.
void write_metrics_files(const fs::path& dir, const std::vector<Realisation>& realisations, std::uint64_t first,
                         std::uint64_t count, const HybridRunInfo& info, const StopCallback& stop) {
  if (realisations.size() < count) throw InternalError("write_hybrid_outputs: fewer realisations than the share");
  const std::uint64_t files = with_files(first, count, info.metrics_files);
  parallel_for(0, static_cast<std::int64_t>(files), Schedule{effective_threads(info.threads), 16}, [&](std::int64_t k) {
    if (stop && stop()) throw Stopped();  // (the loop skips the files not started, then rethrows)
    write_metrics_csv(metrics_file(dir, first + static_cast<std::uint64_t>(k)),
                      realisations[static_cast<std::size_t>(k)].metrics);
  });
}

// Every file but the metrics into the staging directory; returns result.json's content.
json write_hybrid_rest(const fs::path& out, const HybridProblem& p, const std::vector<Realisation>& ensemble,
                       const HybridRunInfo& info);

// metrics/ of a run that writes no metrics file into a directory that had some (--metrics-files 0):
// its files went at the commit, and the directory goes too, as if the run had been the first.
void remove_if_empty(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

// Moves the staged files into place; an earlier run's files that this one did not write go (a
// larger ensemble's metrics, a network image this run was not asked for), so that the directory
// describes one run, and metrics/ with them when this run wrote none.
void commit_hybrid(StagedOutput& staged) {
  staged.commit([](const fs::path& rel) {
    for (const char* own : {"ensemble.csv", "network.vtp", "fields.vti", "network.png", "result.json"})
      if (rel == own) return true;
    return matches_output_pattern(rel, "metrics", "realisation_", ".csv");
  });
  remove_if_empty(staged.target() / "metrics");
}

}  // namespace

nlohmann::json write_hybrid_outputs(const fs::path& out_dir, const HybridProblem& p, const std::vector<Realisation>& ensemble,
                                    const HybridRunInfo& info) {
  if (ensemble.empty()) throw InternalError("write_hybrid_outputs: no realisation");
  // Staged (core StagedOutput): `out` changes only when every file is written.
  StagedOutput staged(out_dir);
  ensure_output_directory(staged.dir() / "metrics");
  write_metrics_files(staged.dir(), ensemble, 0, ensemble.size(), info, info.stop);
  json result = write_hybrid_rest(staged.dir(), p, ensemble, info);
  if (info.stop && info.stop()) throw Stopped();  // the last safe point: `out` is still as it was
  commit_hybrid(staged);
  return result;
}

nlohmann::json write_hybrid_outputs_ranks(const fs::path& out_dir, const HybridProblem& p,
                                          const std::vector<Realisation>& ensemble, const HybridShare& share,
                                          const HybridRunInfo& info) {
  const dist::Comm& comm = dist::Comm::world();
  if (!comm.distributed()) return write_hybrid_outputs(out_dir, p, ensemble, info);
  // Rank 0 stages and makes metrics/ before the broadcast, so that the directory exists when the
  // others write; its path is absolute (the ranks may not share a working directory). A failure on
  // any rank (collectively) is raised on every rank, so that rank 0 unwinds and removes its staging.
  std::optional<StagedOutput> staged;
  std::string dir = dist::collectively(comm, [&] {
    if (!comm.root()) return std::string();
    if (ensemble.empty() || share.first != 0 || share.count < 1 || share.count > ensemble.size())
      throw InternalError("write_hybrid_outputs_ranks: rank 0's share is not the ensemble's start");
    staged.emplace(out_dir);
    ensure_output_directory(staged->dir() / "metrics");
    return fs::absolute(staged->dir()).string();
  });
  dir = comm.broadcast(dir);
  // Each rank its own metrics files (rank 0's realisations are the first of the ensemble, the
  // others' in their share); rank 0 the other files meanwhile. Every rank has written when this returns.
  // A stop is asked once every rank has written, and agreed (a rank that threw on its own would
  // end the job with rank 0 inside a collective, its staging directory left behind): every rank
  // throws Stopped together, and rank 0 removes the staging as it unwinds.
  json result = dist::collectively(comm, [&] {
    write_metrics_files(dir, comm.root() ? ensemble : share.realisations, share.first, share.count, info, {});
    return comm.root() ? write_hybrid_rest(dir, p, ensemble, info) : json();
  });
  if (comm.allreduce_max(info.stop && info.stop() ? 1 : 0) != 0) throw Stopped();
  if (!comm.root()) return nullptr;
  // The others' files must be visible here before they are moved (a file system every rank sees).
  for (std::uint64_t r = 0; r < with_files(0, ensemble.size(), info.metrics_files); ++r) {
    const fs::path file = metrics_file(dir, r);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw UserError("out", fmt::format(" {}: {} written by another rank is not visible on rank 0: --out must be "
                                         "on a file system every rank sees",
                                         out_dir.string(), file.filename().string()));
    }
  }
  commit_hybrid(*staged);
  return result;
}

namespace {

json write_hybrid_rest(const fs::path& out, const HybridProblem& p, const std::vector<Realisation>& ensemble,
                       const HybridRunInfo& info) {
  write_ensemble_csv(out / "ensemble.csv", ensemble);
  write_network_vtp(out / "network.vtp", p, ensemble.front());
  {
    // n (the network), f and c of realisation 0 at its end, in fp32 (for ParaView; 12 bytes a node).
    const Fields<double> u = hybrid_fields(p, ensemble.front());
    Fields<float> u32;
    u32.n.assign(u.n.begin(), u.n.end());
    u32.f.assign(u.f.begin(), u.f.end());
    u32.c.assign(u.c.begin(), u.c.end());
    write_vti(out / "fields.vti", p.grid, u32);
  }
  if (info.quicklook) write_network_png(out, p, ensemble.front());
  nlohmann::json result = ensemble_summary(ensemble);
  result["model"] = "hybrid";
  result["grid"] = {p.grid.nx, p.grid.ny, p.grid.nz};
  result["h"] = p.grid.h;
  result["dt"] = p.dt;
  result["seed"] = info.seed;
  result["replicates"] = ensemble.size();
  result["metrics_files"] = with_files(0, ensemble.size(), info.metrics_files);
  result["backend"] = std::string(to_string(info.backend));
  result["seconds"] = info.seconds;
  result["rules"] = {{"anastomosis", anastomosis_name(p.hybrid)},
                     {"fork", p.hybrid.fork_passes ? "pass" : "fuse"},
                     {"uptake", uptake_name(p.hybrid.uptake)},
                     {"sensitivity", sensitivity_name(p.model.sensitivity)},
                     {"branch_probability", p.hybrid.branch_always ? "one" : "table"},
                     {"branch_density", p.hybrid.branch_density},
                     {"daughter", daughter_name(p.hybrid.daughter)},
                     {"back_steps", p.hybrid.back_steps},
                     {"weights", weights_name(p.hybrid.weights)},
                     {"psi", p.hybrid.psi}};
  write_file_atomic(out / "result.json", result.dump(2) + "\n");
  return result;
}

}  // namespace

}  // namespace simkit::angio
