#include "core/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace simkit {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

namespace {

// "Nice" tick step for a linear axis spanning `span`.
double nice_step(double span) {
  const double raw = span / 6.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

}  // namespace

std::string render_svg(const PlotSpec& spec) {
  const double left = 80, right = 20, top = 40, bottom = 60;
  const double w = spec.width - left - right, h = spec.height - top - bottom;
  auto xt = [&](double x) { return spec.log_x ? std::log10(x) : x; };
  auto usable = [&](double x) { return std::isfinite(x) && (!spec.log_x || x > 0); };

  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y1 = 0;
  for (const auto& s : spec.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i])) continue;
      x0 = std::min(x0, xt(s.x[i]));
      x1 = std::max(x1, xt(s.x[i]));
      if (std::isfinite(s.y[i])) y1 = std::max(y1, s.y[i]);
      if (i < s.band_high.size() && std::isfinite(s.band_high[i])) y1 = std::max(y1, s.band_high[i]);
    }
  }
  if (!(x1 > x0)) {
    x0 = std::isfinite(x0) ? x0 - 1 : 0;
    x1 = x0 + 2;
  }
  if (!(y1 > 0)) y1 = 1;
  y1 *= 1.05;
  auto px = [&](double x) { return left + (xt(x) - x0) / (x1 - x0) * w; };
  auto py = [&](double y) { return top + h - y / y1 * h; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      spec.width, spec.height, spec.width, spec.height);
  out += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n", spec.width / 2,
                     xml_escape(spec.title));
  // Axes and ticks.
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", left, top,
                     w, h);
  if (spec.log_x) {
    for (int d = static_cast<int>(std::ceil(x0)); d <= static_cast<int>(std::floor(x1)); ++d) {
      const double x = left + (d - x0) / (x1 - x0) * w;
      out += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
          "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">1e{4}</text>\n",
          x, top, top + h, top + h + 18, d);
    }
  } else {
    const double step = nice_step(x1 - x0);
    for (double v = std::ceil(x0 / step) * step; v <= x1 + 1e-12 * step; v += step) {
      const double x = left + (v - x0) / (x1 - x0) * w;
      out += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
          "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
          x, top, top + h, top + h + 18, v);
    }
  }
  const double ystep = nice_step(y1);
  for (double v = 0; v <= y1; v += ystep) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        left, py(v), left + w, left - 6, py(v) + 4, v);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + w / 2, spec.height - 15,
                     xml_escape(spec.x_label));
  out += fmt::format("<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + h / 2,
                     xml_escape(spec.y_label));
  // Series: bands first, then lines, then the legend.
  for (const auto& s : spec.series) {
    if (s.band_low.size() != s.x.size() || s.band_high.size() != s.x.size()) continue;
    std::string upper, lower;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s.x[i])) continue;
      upper += fmt::format("{:.2f},{:.2f} ", px(s.x[i]), py(s.band_high[i]));
    }
    for (std::size_t i = s.x.size(); i-- > 0;) {
      if (!usable(s.x[i])) continue;
      lower += fmt::format("{:.2f},{:.2f} ", px(s.x[i]), py(s.band_low[i]));
    }
    out += fmt::format("<polygon points=\"{}{}\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"none\"/>\n", upper, lower,
                       s.color);
  }
  for (const auto& s : spec.series) {
    std::string pts;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (usable(s.x[i]) && std::isfinite(s.y[i])) pts += fmt::format("{:.2f},{:.2f} ", px(s.x[i]), py(s.y[i]));
    }
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{}/>\n", pts, s.color,
                       s.dashed ? " stroke-dasharray=\"5,3\"" : "");
  }
  double ly = top + 16;
  for (const auto& s : spec.series) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
        "<text x=\"{5}\" y=\"{6}\">{7}</text>\n",
        left + w - 170, ly, left + w - 145, s.color, s.dashed ? " stroke-dasharray=\"5,3\"" : "", left + w - 138,
        ly + 4, xml_escape(s.label));
    ly += 18;
  }
  out += "</svg>\n";
  return out;
}

PlotSeries fraction_series(const std::vector<double>& x, const std::vector<double>& counts, std::string label,
                           std::string color, bool dashed) {
  PlotSeries s;
  s.label = std::move(label);
  s.color = std::move(color);
  s.dashed = dashed;
  double total = 0;
  for (double c : counts) total += c;
  s.x = x;
  for (double c : counts) s.y.push_back(total > 0 ? c / total : 0.0);
  return s;
}

}  // namespace simkit
