#include "simkit/prolif/writers.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/output.hpp"
#include "core/svg.hpp"

namespace simkit::prolif {

namespace {

nlohmann::json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// One run's facts at output time t.
nlohmann::json time_entry(const Report& r, const Result& run, std::size_t t, bool with_target) {
  const Binned binned = bin_result(run, r.initial, t, r.binning);
  nlohmann::json by_population = nlohmann::json::object();
  const auto pops = run.by_population(t);
  for (std::size_t p = 0; p < pops.size(); ++p) by_population[r.model.populations[p].name] = pops[p];
  std::optional<Hellinger> h;
  if (with_target) h = hellinger(binned.counts, bin_histogram(*r.target, r.binning).counts);
  return {{"t", r.model.times[t]},
          {"total", run.total(t)},
          {"by_generation", run.by_generation(t)},
          {"by_population", by_population},
          {"overflow", binned.overflow},
          {"hellinger", number_or_null(h ? std::optional<double>(h->distance) : std::nullopt)},
          {"hellinger_normalized", number_or_null(h ? std::optional<double>(h->normalized) : std::nullopt)}};
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

}  // namespace

nlohmann::json result_json(const Report& r) {
  nlohmann::json times = nlohmann::json::array();
  const std::size_t last = r.model.times.size() - 1;
  for (std::size_t t = 0; t < r.model.times.size(); ++t) {
    const bool with_target = r.target.has_value() && t == last;
    if (r.runs.size() == 1) {
      times.push_back(time_entry(r, r.runs[0], t, with_target));
      continue;
    }
    // Replicates: means over runs (and 5-95 % bands of the total), each run kept under "runs".
    nlohmann::json runs = nlohmann::json::array();
    std::vector<double> totals, overflow, hel, heln;
    std::vector<double> by_gen;
    nlohmann::json by_pop = nlohmann::json::object();
    for (const Result& run : r.runs) {
      nlohmann::json e = time_entry(r, run, t, with_target);
      e["seed"] = run.seed;
      totals.push_back(e["total"].get<double>());
      overflow.push_back(e["overflow"].get<double>());
      if (!e["hellinger"].is_null()) {
        hel.push_back(e["hellinger"].get<double>());
        heln.push_back(e["hellinger_normalized"].get<double>());
      }
      const auto g = e["by_generation"].get<std::vector<double>>();
      if (g.size() > by_gen.size()) by_gen.resize(g.size(), 0.0);
      for (std::size_t k = 0; k < g.size(); ++k) by_gen[k] += g[k] / static_cast<double>(r.runs.size());
      for (auto it = e["by_population"].begin(); it != e["by_population"].end(); ++it) {
        by_pop[it.key()] = by_pop.value(it.key(), 0.0) + it.value().get<double>() / static_cast<double>(r.runs.size());
      }
      runs.push_back(std::move(e));
    }
    nlohmann::json entry = {
        {"t", r.model.times[t]},
        {"total", mean_of(totals)},
        {"total_p05", percentile(totals, 5)},
        {"total_p95", percentile(totals, 95)},
        {"by_generation", by_gen},
        {"by_population", by_pop},
        {"overflow", mean_of(overflow)},
        {"hellinger", hel.empty() ? nlohmann::json(nullptr) : nlohmann::json(mean_of(hel))},
        {"hellinger_normalized", heln.empty() ? nlohmann::json(nullptr) : nlohmann::json(mean_of(heln))},
        {"runs", runs}};
    times.push_back(std::move(entry));
  }
  std::uint64_t divisions = 0;
  for (const Result& run : r.runs) divisions += run.divisions;
  return {{"seed", r.runs.front().seed},
          {"backend", r.backend},
          {"device", r.device},
          {"wall_seconds", r.wall_seconds},
          {"replicates", r.runs.size()},
          {"initial_cells", r.initial.total_cells()},
          {"divisions", divisions},
          {"start", r.model.start == StartMode::Sync ? "sync" : "procell-async"},
          {"phi_min", r.model.phi_min},
          {"bins", {{"count", r.binning.bins}, {"low", r.binning.low}, {"high", r.binning.high}}},
          {"times", times}};
}

nlohmann::json write_outputs(const std::filesystem::path& out, const Report& r) {
  const Result& first = r.runs.front();
  const std::size_t last = r.model.times.size() - 1;

  std::string tsv;
  for (const auto& [value, count] : exact_histogram(first, r.initial, last))
    tsv += fmt::format("{}\t{}\n", value, count);

  std::string exact = "t,value,generation,population,count\n";
  for (std::size_t t = 0; t < first.times; ++t)
    for (std::size_t i = 0; i < first.rows; ++i)
      for (std::size_t k = 0; k < first.generations; ++k)
        for (std::size_t p = 0; p < first.populations; ++p)
          if (const auto c = first.at(t, i, k, p); c > 0)
            exact +=
                fmt::format("{},{},{},{},{}\n", r.model.times[t], std::ldexp(r.initial.values[i], -static_cast<int>(k)),
                            k, r.model.populations[p].name, c);

  const std::vector<double> edges = r.binning.edges();
  std::optional<Binned> target_binned;
  if (r.target) target_binned = bin_histogram(*r.target, r.binning);
  const bool replicates = r.runs.size() > 1;
  std::string binned = replicates ? "t,edge,mean,p05,p95" : "t,edge,count";
  binned += target_binned ? ",target\n" : "\n";

  PlotSpec plot;
  plot.title =
      fmt::format("prolif: {} initial cells, {} run{}", r.initial.total_cells(), r.runs.size(), replicates ? "s" : "");
  plot.x_label = "fluorescence";
  plot.y_label = "fraction of cells per bin";
  plot.log_x = true;
  static const char* colors[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

  for (std::size_t t = 0; t < r.model.times.size(); ++t) {
    std::vector<std::vector<double>> per_run;
    for (const Result& run : r.runs) per_run.push_back(bin_result(run, r.initial, t, r.binning).counts);
    PlotSeries series;
    series.label = fmt::format("simulated, t = {} h", r.model.times[t]);
    series.color = colors[t % 6];
    double total = 0;
    std::vector<double> mean(edges.size()), lo(edges.size()), hi(edges.size());
    for (std::size_t b = 0; b < edges.size(); ++b) {
      std::vector<double> v;
      for (const auto& pr : per_run) v.push_back(pr[b]);
      mean[b] = mean_of(v);
      lo[b] = percentile(v, 5);
      hi[b] = percentile(v, 95);
      total += mean[b];
      binned += replicates ? fmt::format("{},{},{},{},{}", r.model.times[t], edges[b], mean[b], lo[b], hi[b])
                           : fmt::format("{},{},{}", r.model.times[t], edges[b], mean[b]);
      if (target_binned) binned += t == last ? fmt::format(",{}", target_binned->counts[b]) : std::string(",");
      binned += "\n";
    }
    const double scale = total > 0 ? 1.0 / total : 0.0;
    for (std::size_t b = 0; b < edges.size(); ++b) {
      series.x.push_back(edges[b]);
      series.y.push_back(mean[b] * scale);
      if (replicates) {
        series.band_low.push_back(lo[b] * scale);
        series.band_high.push_back(hi[b] * scale);
      }
    }
    plot.series.push_back(std::move(series));
  }
  auto add_reference = [&](const Binned& b, const std::string& label, const std::string& color, bool dashed) {
    plot.series.push_back(fraction_series(edges, b.counts, label, color, dashed));
  };
  if (target_binned) add_reference(*target_binned, "target", "#d62728", false);
  add_reference(bin_histogram(r.initial, r.binning), "H(0)", "#7f7f7f", true);

  // Everything is rendered before anything is written; the files are then staged and moved into
  // `out` together (core StagedOutput), so a failed write leaves `out` as it was.
  nlohmann::json doc = result_json(r);
  const std::string json = doc.dump(2) + "\n";
  const std::string svg = render_svg(plot);
  StagedOutput staged(out);
  const std::filesystem::path& dir = staged.dir();
  write_file_atomic(dir / "histogram.tsv", tsv);
  write_file_atomic(dir / "exact.csv", exact);
  write_file_atomic(dir / "binned.csv", binned);
  write_file_atomic(dir / "plot.svg", svg);
  write_file_atomic(dir / "result.json", json);
  staged.commit();  // the same five files every run: nothing of an earlier run can be stale
  return doc;
}

}  // namespace simkit::prolif
