#pragma once
// A small SVG line-plot writer shared by the engines: opens in any browser, no Python needed.
#include <string>
#include <string_view>
#include <vector>

namespace simkit {

struct PlotSeries {
  std::string label;
  std::vector<double> x, y;
  std::vector<double> band_low, band_high;  // optional shaded band (same length as x)
  std::string color = "#1f77b4";
  bool dashed = false;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  bool log_x = false;
  int width = 820, height = 520;
  std::vector<PlotSeries> series;
};

// A histogram as fractions of its total per bin (x: the bins' positions; all zero when empty).
PlotSeries fraction_series(const std::vector<double>& x, const std::vector<double>& counts, std::string label,
                           std::string color, bool dashed = false);

// Escapes & < > " ' for XML text and attribute values (SVG, VTK XML).
std::string xml_escape(std::string_view text);

// Renders the plot; points with non-finite or (on a log axis) non-positive x are left out.
std::string render_svg(const PlotSpec& spec);

}  // namespace simkit
