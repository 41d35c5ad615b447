// Markdown, HTML (inline SVG) and comparison reports of eval runs.
#include "eval/report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "eval/metrics.h"
#include "util/svg_chart.h"
#include "util/text_format.h"

namespace ca {

namespace {

enum class Unit { count, rate, speedup, number };

struct MetricRow {
  std::string label;
  std::string pointer;  // JSON pointer into a metrics object
  Unit unit;
};

std::vector<MetricRow> metric_rows() {
  std::vector<MetricRow> rows = {
      {"tasks", "/tasks", Unit::count}, {"passed", "/passed", Unit::count}, {"pass rate", "/pass_rate", Unit::rate}};
  for (const char* base : {"vs_eager", "vs_compile"}) {
    for (double p : k_fast_p_thresholds) {
      rows.push_back({format_text("fast_{} {}", threshold_key(p), base),
                      format_text("/fast_p/{}/{}", base, threshold_key(p)), Unit::rate});
    }
  }
  rows.push_back({"faster than compile (paper)", "/faster_than_compile", Unit::rate});
  rows.push_back({"geomean speedup vs eager, passing tasks", "/geomean_speedup_passing/vs_eager", Unit::speedup});
  rows.push_back({"geomean speedup vs compile, passing tasks", "/geomean_speedup_passing/vs_compile", Unit::speedup});
  rows.push_back(
      {"geomean speedup vs eager, failures as 1.0", "/geomean_speedup_failures_as_1/vs_eager", Unit::speedup});
  rows.push_back(
      {"geomean speedup vs compile, failures as 1.0", "/geomean_speedup_failures_as_1/vs_compile", Unit::speedup});
  rows.push_back({"mean reward", "/mean_reward", Unit::number});
  return rows;
}

const Json& at(const Json& metrics, const std::string& pointer) {
  static const Json null_value;
  Json::json_pointer path(pointer);
  return metrics.is_object() && metrics.contains(path) ? metrics.at(path) : null_value;
}

std::string format_value(const Json& value, Unit unit) {
  if (!value.is_number()) return "n/a";
  double x = value.get<double>();
  switch (unit) {
    case Unit::count:
      return format_text("{}", value.get<int64_t>());
    case Unit::rate:
      return format_text("{:.1f}%", 100 * x);
    case Unit::speedup:
      return format_text("{:.3f}x", x);
    case Unit::number:
      return format_text("{:.3f}", x);
  }
  return "n/a";
}

std::string format_optional(const std::optional<double>& value, const char* suffix) {
  return value ? format_text("{:.3f}{}", *value, suffix) : "n/a";
}

// The metrics table: one column for each level, then overall, then the degenerate tasks when there are any.
std::vector<std::vector<std::string>> metrics_table(const Json& summary) {
  std::vector<std::pair<std::string, const Json*>> columns;
  for (const auto& [level, metrics] : summary["levels"].items()) columns.push_back({"level " + level, &metrics});
  columns.push_back({"overall", &summary["overall"]});
  if (summary["degenerate"].value("tasks", 0) > 0) columns.push_back({"degenerate (apart)", &summary["degenerate"]});
  std::vector<std::vector<std::string>> table = {{"metric"}};
  for (const auto& column : columns) table[0].push_back(column.first);
  for (const MetricRow& row : metric_rows()) {
    std::vector<std::string> line = {row.label};
    for (const auto& column : columns) line.push_back(format_value(at(*column.second, row.pointer), row.unit));
    table.push_back(line);
  }
  return table;
}

bool has_kernelbench(const std::vector<TaskResult>& tasks) {
  return std::any_of(tasks.begin(), tasks.end(), [](const TaskResult& task) { return !task.kernelbench.empty(); });
}

// KernelBench-format solutions add KernelBench's own verdict beside this harness's.
std::vector<std::vector<std::string>> task_table(const std::vector<TaskResult>& tasks) {
  const bool kernelbench = has_kernelbench(tasks);
  std::vector<std::vector<std::string>> table = {
      {"task", "level", "verdict", "stage", "vs eager", "vs compile", "reward", "degenerate"}};
  if (kernelbench) table[0].insert(table[0].begin() + 4, "KernelBench eval");
  for (const TaskResult& task : tasks) {
    table.push_back({task.task_id, task.level ? std::to_string(*task.level) : "-",
                     to_json(task)["verdict"].get<std::string>(), task.stage.empty() ? "-" : task.stage,
                     format_optional(task.vs_eager, "x"), format_optional(task.vs_compile, "x"),
                     format_optional(task.reward, ""), task.degenerate.empty() ? "-" : task.degenerate});
    if (kernelbench) table.back().insert(table.back().begin() + 4, task.kernelbench.empty() ? "-" : task.kernelbench);
  }
  return table;
}

// The solutions whose verdict here differs from KernelBench's check (tasks without a solution are left out).
std::vector<std::vector<std::string>> disagreement_table(const std::vector<TaskResult>& tasks) {
  std::vector<std::vector<std::string>> table = {{"task", "this harness", "KernelBench eval"}};
  for (const TaskResult& task : tasks) {
    if (task.kernelbench.empty() || (task.kernelbench == "PASS") == task.pass) continue;
    table.push_back({task.task_id, task.pass ? "PASS" : "FAIL (" + task.stage + ")", task.kernelbench});
  }
  return table;
}

std::string disagreement_heading(const std::vector<std::vector<std::string>>& table) {
  return format_text("Where this harness and KernelBench's check disagree: {} solution(s)", int64_t(table.size() - 1));
}

std::string markdown_table(const std::vector<std::vector<std::string>>& table) {
  std::string out;
  for (size_t i = 0; i < table.size(); ++i) {
    out += "|";
    for (const std::string& cell : table[i]) out += " " + cell + " |";
    out += "\n";
    if (i == 0) {
      out += "|";
      for (size_t j = 0; j < table[0].size(); ++j) out += j == 0 ? "---|" : "---:|";
      out += "\n";
    }
  }
  return out;
}

std::string html_table(const std::vector<std::vector<std::string>>& table) {
  std::string out = "<table>\n";
  for (size_t i = 0; i < table.size(); ++i) {
    out += "<tr>";
    for (const std::string& cell : table[i])
      out += format_text("<{}>{}</{}>", i == 0 ? "th" : "td", html_escape(cell), i == 0 ? "th" : "td");
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string environment_text(const Json& environment, const char* bullet) {
  std::string out;
  for (const auto& [key, value] : environment.items()) {
    out += format_text("{}{}: {}\n", bullet, key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

std::vector<TaskResult> counted(const std::vector<TaskResult>& tasks) {
  std::vector<TaskResult> out;
  std::copy_if(tasks.begin(), tasks.end(), std::back_inserter(out),
               [](const TaskResult& t) { return t.degenerate.empty(); });
  return out;
}

std::string speedup_plot(const std::vector<TaskResult>& tasks) {
  // Bins of log2(speedup), half an octave wide, from 1/16x to 16x; speedups outside go to the end bins.
  constexpr int k_bins = 16;
  std::vector<std::string> labels;
  for (int b = 0; b < k_bins; ++b) labels.push_back(format_text("{:.2g}", std::exp2(-4 + 0.5 * b + 0.25)));
  ChartSeries eager{"vs eager", "#1f77b4", std::vector<double>(k_bins)},
      compile{"vs torch.compile", "#ff7f0e", std::vector<double>(k_bins)};
  for (const TaskResult& task : tasks) {
    auto add = [&](const std::optional<double>& speedup, ChartSeries& series) {
      if (!task.pass || !speedup || *speedup <= 0) return;
      int bin = std::clamp(int(std::floor((std::log2(*speedup) + 4) * 2)), 0, k_bins - 1);
      series.values[size_t(bin)] += 1;
    };
    add(task.vs_eager, eager);
    add(task.vs_compile, compile);
  }
  return bar_chart("Speedup distribution of passing tasks (bin centres, log scale)", labels, {eager, compile}, "tasks");
}

std::string fast_p_plot(const std::vector<TaskResult>& tasks) {
  std::vector<double> ps;
  ChartSeries eager{"fast_p vs eager", "#1f77b4", {}}, compile{"fast_p vs torch.compile", "#ff7f0e", {}};
  for (int i = 0; i <= 80; ++i) {
    double p = 0.05 * i;
    ps.push_back(p);
    eager.values.push_back(fast_p(tasks, p, false).is_number() ? fast_p(tasks, p, false).get<double>() : 0.0);
    compile.values.push_back(fast_p(tasks, p, true).is_number() ? fast_p(tasks, p, true).get<double>() : 0.0);
  }
  return line_chart("fast_p: share of all tasks correct and faster than p", ps, {eager, compile}, "speedup threshold p",
                    "fraction of tasks");
}

std::string level_plot(const Json& summary) {
  std::vector<std::string> levels;
  ChartSeries pass{"pass rate", "#2ca02c", {}}, fast1{"fast_1 vs eager", "#1f77b4", {}},
      ftc{"faster than compile", "#ff7f0e", {}};
  auto add = [&](const std::string& name, const Json& metrics) {
    levels.push_back(name);
    pass.values.push_back(metrics.value("pass_rate", 0.0));
    fast1.values.push_back(
        at(metrics, "/fast_p/vs_eager/1").is_number() ? at(metrics, "/fast_p/vs_eager/1").get<double>() : 0.0);
    ftc.values.push_back(metrics["faster_than_compile"].is_number() ? metrics["faster_than_compile"].get<double>()
                                                                    : 0.0);
  };
  for (const auto& [level, metrics] : summary["levels"].items()) add("level " + level, metrics);
  add("overall", summary["overall"]);
  return bar_chart("Per level", levels, {pass, fast1, ftc}, "fraction of tasks");
}

std::string reward_plot(const std::vector<TaskResult>& tasks) {
  std::map<double, double> counts;
  double missing = 0;
  for (const TaskResult& task : tasks) {
    if (task.reward)
      counts[std::round(*task.reward * 100) / 100] += 1;
    else
      missing += 1;
  }
  std::vector<std::string> labels;
  ChartSeries series{"tasks", "#9467bd", {}};
  for (const auto& [value, count] : counts) {
    labels.push_back(format_text("{:g}", value));
    series.values.push_back(count);
  }
  labels.push_back("none");
  series.values.push_back(missing);
  return bar_chart("Reward histogram (none: no solution or no reward)", labels, {series}, "tasks");
}

}  // namespace

std::expected<EvalRun, std::string> parse_run(const std::vector<Json>& records) {
  EvalRun run;
  for (size_t i = 0; i < records.size(); ++i) {
    std::string kind = records[i].value("kind", std::string());
    if (kind == "eval_summary") {
      run.summary = records[i];
      continue;
    }
    if (kind != "eval_task")
      return std::unexpected(format_text("record {}: kind '{}' is not eval_task or eval_summary", i + 1, kind));
    auto task = result_from_json(records[i]);
    if (!task) return std::unexpected(format_text("record {}: {}", i + 1, task.error()));
    run.tasks.push_back(std::move(*task));
  }
  if (!run.summary.is_object()) return std::unexpected("no eval_summary record");
  return run;
}

std::string markdown_report(const EvalRun& run) {
  std::string out = "# ca-eval report\n\nSuite: " + run.summary.value("suite", std::string()) + "; " +
                    run.summary.value("source", std::string()) + "\n\n## Environment\n\n";
  out += environment_text(run.summary["environment"], "- ");
  out +=
      "\n## Metrics\n\nRates are over all tasks of the column (a failed or missing solution counts as failed); "
      "degenerate tasks (rejected by ca-filter) are counted apart.\n\n";
  out += markdown_table(metrics_table(run.summary));
  out += "\n## Tasks\n\n" + markdown_table(task_table(run.tasks));
  if (has_kernelbench(run.tasks)) {
    auto table = disagreement_table(run.tasks);
    out += "\n## " + disagreement_heading(table) + "\n\n" + (table.size() > 1 ? markdown_table(table) : "");
  }
  return out;
}

std::string html_report(const EvalRun& run) {
  std::vector<TaskResult> tasks = counted(run.tasks);
  std::string out =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ca-eval report</title><style>"
      "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}"
      "svg{display:block;margin:1em 0;border:1px solid #eee}</style></head><body>\n<h1>ca-eval report</h1>\n";
  out += "<p>Suite: " + html_escape(run.summary.value("suite", std::string())) + "; " +
         html_escape(run.summary.value("source", std::string())) + "</p>\n<h2>Environment</h2>\n<ul>\n";
  for (const auto& [key, value] : run.summary["environment"].items()) {
    out += "<li>" + html_escape(key) + ": " + html_escape(value.is_string() ? value.get<std::string>() : value.dump()) +
           "</li>\n";
  }
  out += "</ul>\n<h2>Metrics</h2>\n" + html_table(metrics_table(run.summary)) + "<h2>Plots</h2>\n";
  out += speedup_plot(tasks) + fast_p_plot(tasks) + level_plot(run.summary) + reward_plot(tasks);
  out += "<h2>Tasks</h2>\n" + html_table(task_table(run.tasks));
  if (has_kernelbench(run.tasks)) {
    auto table = disagreement_table(run.tasks);
    out += "<h2>" + html_escape(disagreement_heading(table)) + "</h2>\n" + (table.size() > 1 ? html_table(table) : "");
  }
  out += "</body></html>\n";
  return out;
}

std::string compare_report(const EvalRun& a, const EvalRun& b) {
  std::vector<std::vector<std::string>> table = {{"metric (overall)", "A", "B", "B - A"}};
  for (const MetricRow& row : metric_rows()) {
    const Json& va = at(a.summary["overall"], row.pointer);
    const Json& vb = at(b.summary["overall"], row.pointer);
    std::string delta = "n/a";
    if (va.is_number() && vb.is_number()) {
      double d = vb.get<double>() - va.get<double>();
      delta = row.unit == Unit::rate ? format_text("{:+.1f} pt", 100 * d) : format_text("{:+.3f}", d);
    }
    table.push_back({row.label, format_value(va, row.unit), format_value(vb, row.unit), delta});
  }
  std::string out = "# ca-eval compare\n\nA: " + a.summary.value("source", std::string()) +
                    "\n\nB: " + b.summary.value("source", std::string()) + "\n\n" + markdown_table(table);
  std::map<std::string, const TaskResult*> in_b;
  for (const TaskResult& task : b.tasks) in_b[task.task_id] = &task;
  std::vector<std::vector<std::string>> changed = {{"task", "A", "B"}};
  auto verdict = [](const TaskResult* task) {
    if (task == nullptr) return std::string("absent");
    std::string v = to_json(*task)["verdict"].get<std::string>();
    return task->stage.empty() ? v : v + " (" + task->stage + ")";
  };
  for (const TaskResult& task : a.tasks) {
    const TaskResult* other = in_b.contains(task.task_id) ? in_b[task.task_id] : nullptr;
    if (verdict(&task) != verdict(other)) changed.push_back({task.task_id, verdict(&task), verdict(other)});
    in_b.erase(task.task_id);
  }
  for (const auto& [id, task] : in_b) changed.push_back({id, "absent", verdict(task)});
  out += "\n## Tasks whose verdict changed: " + std::to_string(changed.size() - 1) + "\n\n";
  return changed.size() > 1 ? out + markdown_table(changed) : out;
}

}  // namespace ca
