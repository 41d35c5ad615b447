// Bar and line charts as SVG text (svg_chart.h).
#include "util/svg_chart.h"

#include <algorithm>

#include "util/text_format.h"

namespace ca {

namespace {

constexpr double k_width = 640, k_height = 300, k_left = 50, k_bottom = 40, k_top = 30;

// `extra_height`: room below the x axis for slanted category labels; the plot area stays where it is.
std::string svg_frame(const std::string& title, double y_max, const std::string& y_label, const std::string& body,
                      double extra_height = 0) {
  std::string out = format_text(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"
      "<text x=\"{}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>",
      k_width, k_height + extra_height, k_left, html_escape(title));
  double plot_h = k_height - k_bottom - k_top;
  for (int i = 0; i <= 4; ++i) {
    double y = k_top + plot_h * (1 - i / 4.0);
    out += format_text(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.3g}</text>",
        k_left, k_width - 10, y, y, k_left - 4, y + 3, y_max * i / 4.0);
  }
  out += format_text(
      "<text x=\"12\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
      k_top + plot_h / 2, k_top + plot_h / 2, html_escape(y_label));
  return out + body + "</svg>\n";
}

std::string legend(const std::vector<ChartSeries>& series) {
  std::string out;
  for (size_t i = 0; i < series.size(); ++i) {
    double x = k_width - 170, y = k_top + 12 + 14.0 * double(i);
    out += format_text(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "font-size=\"11\">{}</text>",
        x, y - 9, series[i].color, x + 14, y, html_escape(series[i].name));
  }
  return out;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string bar_chart(const std::string& title, const std::vector<std::string>& categories,
                      const std::vector<ChartSeries>& series, const std::string& y_label, const std::string& x_label,
                      const std::vector<ChartMarker>& markers) {
  double y_max = 0;
  for (const ChartSeries& s : series) {
    for (double v : s.values) y_max = std::max(y_max, v);
  }
  y_max = y_max > 0 ? y_max : 1;
  double plot_w = k_width - k_left - 10, plot_h = k_height - k_bottom - k_top;
  double group_w = plot_w / double(std::max<size_t>(1, categories.size()));
  double bar_w = group_w * 0.8 / double(std::max<size_t>(1, series.size()));
  // Labels wider than their group (about 6 px a character at font-size 10) are slanted, with room made below.
  size_t longest = 0;
  for (const std::string& category : categories) longest = std::max(longest, category.size());
  bool slanted = 6.0 * double(longest) > group_w;
  double extra_height = slanted ? 0.5 * 6.0 * double(longest) : 0;
  std::string body;
  for (size_t c = 0; c < categories.size(); ++c) {
    double x0 = k_left + group_w * double(c) + group_w * 0.1;
    for (size_t s = 0; s < series.size(); ++s) {
      double h = plot_h * series[s].values[c] / y_max;
      body +=
          format_text("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>",
                      x0 + bar_w * double(s), k_top + plot_h - h, bar_w, h, series[s].color);
    }
    if (slanted) {
      body += format_text(
          "<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" transform=\"rotate(-30 {:.1f} {})\">{}"
          "</text>",
          x0 + group_w * 0.4, k_height - k_bottom + 12, x0 + group_w * 0.4, k_height - k_bottom + 12,
          html_escape(categories[c]));
    } else {
      body += format_text("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                          x0 + group_w * 0.4, k_height - k_bottom + 14, html_escape(categories[c]));
    }
  }
  for (const ChartMarker& marker : markers) {
    double x = k_left + group_w * marker.at;
    if (marker.tick) {
      body += format_text(
          "<line class=\"tick\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\"/><text x=\"{:.1f}\" "
          "y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
          x, x, k_top + plot_h, k_top + plot_h + 4, x, k_height - k_bottom + 14, html_escape(marker.label));
      continue;
    }
    body += format_text(
        "<line class=\"marker\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#d62728\" "
        "stroke-dasharray=\"4 3\"/><text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" fill=\"#d62728\" "
        "text-anchor=\"middle\">{}</text>",
        x, x, k_top, k_top + plot_h, x, k_top - 2, html_escape(marker.label));
  }
  if (!x_label.empty()) {
    body += format_text("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
                        k_left + plot_w / 2, k_height + extra_height - 8, html_escape(x_label));
  }
  return svg_frame(title, y_max, y_label, body + legend(series), extra_height);
}

std::string line_chart(const std::string& title, const std::vector<double>& xs, const std::vector<ChartSeries>& series,
                       const std::string& x_label, const std::string& y_label) {
  double plot_w = k_width - k_left - 10, plot_h = k_height - k_bottom - k_top;
  double x_max = xs.empty() ? 1 : xs.back();
  std::string body;
  for (const ChartSeries& s : series) {
    std::string points;
    for (size_t i = 0; i < xs.size(); ++i) {
      points += format_text("{:.1f},{:.1f} ", k_left + plot_w * xs[i] / x_max, k_top + plot_h * (1 - s.values[i]));
    }
    body += format_text("<polyline class=\"curve\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
                        s.color, points);
  }
  for (int i = 0; i <= 4; ++i) {
    body += format_text("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.3g}</text>",
                        k_left + plot_w * i / 4.0, k_height - k_bottom + 14, x_max * i / 4.0);
  }
  body += format_text("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>", k_left + plot_w / 2,
                      k_height - 8, html_escape(x_label));
  return svg_frame(title, 1.0, y_label, body + legend(series));
}

}  // namespace ca
