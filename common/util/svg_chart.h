// Plots as inline SVG text, without a plotting library: ca-eval's HTML report and ca-report's figures draw with these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ca {

/// One named series of a chart, in one colour ("#1f77b4"); values[i] belongs to category or x position i.
struct ChartSeries {
  std::string name;
  std::string color;
  std::vector<double> values;
};

/// A vertical dashed line across a bar chart, labelled at its top; or, with `tick`, an axis tick labelled below the
/// axis (for bins whose edges, not centres, carry the values). `at` counts category slots from the left edge: 0 is
/// the left edge of the first category, 1 the boundary between the first and the second.
struct ChartMarker {
  double at = 0;
  std::string label;
  bool tick = false;
};

/// `text` with < > & " escaped, for HTML and SVG text.
std::string html_escape(std::string_view text);

/// Grouped bars: one group per category, one bar per series (each series has a value per category), a y axis from 0
/// to the largest value, a legend, an optional x-axis label and markers. One self-contained <svg> element.
std::string bar_chart(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<ChartSeries>& series, const std::string& y_label,
                      const std::string& x_label = "", const std::vector<ChartMarker>& markers = {});

/// Lines over a shared x axis from 0 to xs.back(), y from 0 to 1 (series values are fractions).
std::string line_chart(const std::string& title, const std::vector<double>& xs, const std::vector<ChartSeries>& series,
                       const std::string& x_label, const std::string& y_label);

}  // namespace ca
