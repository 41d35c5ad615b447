// ca-report's numbers and figures (report.h).
#include "filter/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "filter/similarity.h"
#include "synth/mix.h"
#include "torch/op_catalog.h"
#include "util/atomic_file.h"
#include "util/json_field.h"
#include "util/log.h"
#include "util/side_file.h"
#include "util/svg_chart.h"
#include "util/text_format.h"

namespace ca {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_blue = "#1f77b4";
constexpr const char* k_orange = "#ff7f0e";
constexpr const char* k_green = "#2ca02c";
constexpr int k_bins_per_decade = 4;
constexpr int k_similarity_bins = 10;  // [0, 0.1), ..., [0.9, 1), then exactly 1 apart

double share(double part, double whole) {
  return whole > 0 ? part / whole : 0.0;
}

Json stats(std::vector<double> values) {
  if (values.empty()) return {{"count", 0}};
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  return {{"count", values.size()},       {"mean", sum / double(values.size())}, {"min", values.front()},
          {"p10", quantile(values, 0.1)}, {"median", quantile(values, 0.5)},     {"p90", quantile(values, 0.9)},
          {"max", values.back()}};
}

// --- op counts ---

Json op_count_section(const std::vector<ReportTask>& tasks, std::string& figure) {
  std::map<size_t, size_t> histogram;
  for (const ReportTask& task : tasks) ++histogram[task.ops.size()];
  // Bars 1..5 always (the paper's mix), 0 and 6+ when the set has them.
  std::vector<std::string> labels;
  ChartSeries set{"this set", k_blue, {}}, paper{"CUDA-Agent-Ops-6K (paper)", k_orange, {}};
  size_t more = 0;
  for (const auto& [count, tasks_with] : histogram) more += count > 5 ? tasks_with : 0;
  auto bar = [&](std::string label, double tasks_with, double paper_weight) {
    labels.push_back(std::move(label));
    set.values.push_back(100 * share(tasks_with, double(tasks.size())));
    paper.values.push_back(paper_weight);  // the published percentages (they sum to 98.8)
  };
  if (histogram.contains(0)) bar("0", double(histogram[0]), 0);
  for (size_t count = 1; count <= 5; ++count) {
    bar(std::to_string(count), histogram.contains(count) ? double(histogram[count]) : 0.0, k_paper_mix[count - 1]);
  }
  if (more > 0) bar("6+", double(more), 0);
  figure =
      bar_chart("Ops per task (view and copy ops not counted)", labels, {set, paper}, "% of tasks", "ops per task");

  Json counts = Json::object(), shares = Json::object(), paper_shares = Json::object();
  double total_ops = 0;
  for (const auto& [count, tasks_with] : histogram) {
    counts[std::to_string(count)] = tasks_with;
    shares[std::to_string(count)] = share(double(tasks_with), double(tasks.size()));
    total_ops += double(count * tasks_with);
  }
  for (size_t count = 1; count <= 5; ++count) paper_shares[std::to_string(count)] = k_paper_mix[count - 1] / 100;
  Json out = {{"tasks", counts},
              {"share", shares},
              {"mean", share(total_ops, double(tasks.size()))},
              {"paper_share", paper_shares}};
  // ca-synth's own count, for the tasks that carry it: it counts the view and copy ops the composer placed.
  std::map<int64_t, size_t> composed;
  for (const ReportTask& task : tasks) {
    if (task.composed_ops) ++composed[*task.composed_ops];
  }
  if (!composed.empty()) {
    Json composed_counts = Json::object();
    for (const auto& [count, tasks_with] : composed) composed_counts[std::to_string(count)] = tasks_with;
    out["composed"] = {{"measure", "meta.op_count (ca-synth)"}, {"tasks", composed_counts}};
  }
  return out;
}

// --- categories ---

Json category_section(const std::vector<ReportTask>& tasks, std::vector<Json>& rows, std::string& figure) {
  std::map<std::string, std::string> category_of;  // qualified op -> category, looked up once
  std::map<std::string, size_t> occurrences, tasks_with;
  std::map<std::string, size_t> op_occurrences;  // normalized op -> occurrences
  size_t total = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    std::set<std::string> seen;
    Json categories = Json::array();
    for (size_t i = 0; i < tasks[t].qualified_ops.size(); ++i) {
      const std::string& op = tasks[t].qualified_ops[i];
      auto known = category_of.find(op);
      if (known == category_of.end()) known = category_of.emplace(op, op_category(op).value_or("unregistered")).first;
      ++occurrences[known->second];
      ++op_occurrences[tasks[t].ops[i]];
      ++total;
      seen.insert(known->second);
      categories.push_back(known->second);
    }
    for (const std::string& category : seen) ++tasks_with[category];
    rows[t]["categories"] = categories;
  }
  std::vector<std::pair<std::string, size_t>> order(occurrences.begin(), occurrences.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> labels;
  ChartSeries ops_share{"% of ops", k_blue, {}}, task_share{"% of tasks with one", k_green, {}};
  Json by_category = Json::array();
  for (const auto& [category, count] : order) {
    labels.push_back(category);
    ops_share.values.push_back(100 * share(double(count), double(total)));
    task_share.values.push_back(100 * share(double(tasks_with[category]), double(tasks.size())));
    by_category.push_back({{"category", category},
                           {"ops", count},
                           {"ops_share", share(double(count), double(total))},
                           {"tasks", tasks_with[category]},
                           {"tasks_share", share(double(tasks_with[category]), double(tasks.size()))}});
  }
  figure = bar_chart("Op categories (ca-crawl ops, docs/OPS.md)", labels, {ops_share, task_share}, "%");

  std::vector<std::pair<std::string, size_t>> top(op_occurrences.begin(), op_occurrences.end());
  std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Json top_ops = Json::array();
  for (size_t i = 0; i < std::min<size_t>(10, top.size()); ++i)
    top_ops.push_back({{"op", top[i].first}, {"ops", top[i].second}});
  return {{"ops", total}, {"distinct_ops", op_occurrences.size()}, {"categories", by_category}, {"top_ops", top_ops}};
}

// --- runtimes ---

Json runtime_stats(const std::vector<double>& values, double lo, double hi) {
  Json out = stats(values);
  size_t below = 0, inside = 0, above = 0;
  for (double v : values) {
    if (v < lo)
      ++below;
    else if (v > hi)
      ++above;
    else
      ++inside;
  }
  out["below_window"] = below;
  out["in_window"] = inside;
  out["above_window"] = above;
  return out;
}

Json runtime_section(const std::vector<ReportTask>& tasks, double lo, double hi, std::string& figure) {
  std::vector<double> eager, compiled, speedups;
  for (const ReportTask& task : tasks) {
    if (task.eager_ms) eager.push_back(*task.eager_ms);
    if (task.compile_ms) compiled.push_back(*task.compile_ms);
    if (task.eager_ms && task.compile_ms && *task.compile_ms > 0) speedups.push_back(*task.eager_ms / *task.compile_ms);
  }
  // Quarter-decade bins spanning the data and the window, so that both window edges are on the axis.
  double smallest = lo, largest = hi;
  for (const auto* list : {&eager, &compiled}) {
    for (double v : *list) {
      if (v > 0) smallest = std::min(smallest, v);
      largest = std::max(largest, v);
    }
  }
  // A bin of margin beyond each window edge, so that an edge's marker and label are not on the frame.
  int first = std::min(int(std::floor(std::log10(smallest) * k_bins_per_decade)),
                       int(std::floor(std::log10(lo) * k_bins_per_decade)) - 1);
  int last = std::max(int(std::ceil(std::log10(largest) * k_bins_per_decade)),
                      int(std::ceil(std::log10(hi) * k_bins_per_decade)) + 1);
  auto bin_of = [&](double v) {
    if (v <= 0) return 0;
    return std::clamp(int(std::floor(std::log10(v) * k_bins_per_decade)) - first, 0, last - first - 1);
  };
  // Bins are labelled at their edges by ticks at each decade, so that a tick and a window edge line up.
  std::vector<std::string> labels(size_t(last - first));
  auto at = [&](double ms) { return std::log10(ms) * k_bins_per_decade - first; };
  std::vector<ChartMarker> markers;
  for (int b = first; b <= last; ++b) {
    if (b % k_bins_per_decade == 0) {
      double ms = std::pow(10.0, b / k_bins_per_decade);
      markers.push_back({at(ms), format_text("{:g}", ms), true});
    }
  }
  markers.push_back({at(lo), format_text("{:g} ms", lo)});
  markers.push_back({at(hi), format_text("{:g} ms", hi)});
  ChartSeries eager_series{"eager", k_blue, std::vector<double>(labels.size())},
      compile_series{"torch.compile", k_orange, std::vector<double>(labels.size())};
  for (double v : eager) eager_series.values[size_t(bin_of(v))] += 1;
  for (double v : compiled) compile_series.values[size_t(bin_of(v))] += 1;
  std::vector<ChartSeries> series = {eager_series};
  if (!compiled.empty()) series.push_back(compile_series);
  figure = bar_chart(format_text("Eager runtime ({} of {} tasks timed; window {:g}-{:g} ms dashed)", eager.size(),
                                 tasks.size(), lo, hi),
                     labels, series, "tasks", "ms per call, log scale (quarter-decade bins)", markers);
  Json out = {
      {"window_ms", {lo, hi}}, {"untimed", tasks.size() - eager.size()}, {"eager_ms", runtime_stats(eager, lo, hi)}};
  if (!compiled.empty()) {
    out["compile_ms"] = runtime_stats(compiled, lo, hi);
    out["eager_over_compile"] = stats(speedups);
  }
  return out;
}

// --- similarity to the references ---

struct Nearest {
  double value = -1;
  const ReportReference* reference = nullptr;
};

Json similarity_stats(const std::vector<double>& values) {
  Json out = stats(values);
  size_t exact = 0, half = 0;
  for (double v : values) {
    exact += v >= 1.0 ? 1 : 0;
    half += v >= 0.5 ? 1 : 0;
  }
  out["at_1"] = exact;
  out["at_least_0.5"] = half;
  return out;
}

Json similarity_section(const std::vector<ReportTask>& tasks, const std::vector<ReportReference>& references,
                        std::vector<Json>& rows, std::string& figure) {
  std::map<std::string, std::vector<const ReportReference*>> by_level;
  std::map<const ReportReference*, std::vector<std::string>> reference_ops;
  ReferenceSet shingle_set;
  for (const ReportReference& reference : references) {
    by_level[reference.level].push_back(&reference);
    reference_ops[&reference] = normalized_ops(reference.program);
    shingle_set.add(reference.id, reference.program);
  }
  std::map<std::string, std::vector<double>> best_by_level;
  std::vector<double> best_overall, best_shingle;
  std::map<std::string, std::set<std::string>> covered;  // level -> reference ids some task matches at 1
  for (size_t t = 0; t < tasks.size(); ++t) {
    Json nearest = Json::object();
    Nearest overall;
    for (const auto& [level, list] : by_level) {
      Nearest best;
      for (const ReportReference* reference : list) {
        double value = multiset_jaccard(tasks[t].ops, reference_ops[reference]);
        if (value >= 1.0) covered[level].insert(reference->id);
        if (value > best.value) best = {value, reference};
      }
      best_by_level[level].push_back(best.value);
      // No op in common with any problem: no nearest one to name.
      nearest["level" + level] = {{"id", best.value > 0 ? Json(best.reference->id) : Json()}, {"value", best.value}};
      if (best.value > overall.value) overall = best;
    }
    best_overall.push_back(overall.value);
    // ca-filter's contamination measure, for comparison with its --max-similarity.
    Program program;
    auto match = [&]() -> std::optional<ReferenceSet::Match> {
      // The shingles need only the op sequence: a program whose nodes are the task's counted ops in order.
      for (const std::string& op : tasks[t].qualified_ops) {
        Node node;
        node.op = op;
        program.nodes.push_back(std::move(node));
      }
      return shingle_set.best_match(program);
    }();
    best_shingle.push_back(match->similarity);
    rows[t]["kernelbench"] = {
        {"nearest", nearest},
        {"op_multiset_jaccard", overall.value},
        {"op_shingle_jaccard",
         {{"id", match->similarity > 0 ? Json(match->id) : Json()}, {"value", match->similarity}}}};
  }

  std::vector<std::string> labels;
  for (int b = 0; b < k_similarity_bins; ++b) labels.push_back(format_text("{:.1f}", b / double(k_similarity_bins)));
  labels.push_back("1");
  std::vector<ChartSeries> series;
  const char* colors[] = {k_blue, k_orange, k_green, "#9467bd", "#8c564b"};
  Json levels = Json::object();
  for (const auto& [level, values] : best_by_level) {
    ChartSeries s{"KernelBench level " + level, colors[series.size() % 5], std::vector<double>(labels.size())};
    for (double v : values) {
      size_t bin = v >= 1.0 ? size_t(k_similarity_bins) : size_t(std::clamp(int(v * k_similarity_bins), 0, 9));
      s.values[bin] += 100.0 / double(values.size());
    }
    series.push_back(std::move(s));
    Json level_stats = similarity_stats(values);
    level_stats["problems"] = by_level[level].size();
    level_stats["problems_matched_at_1"] = covered[level].size();
    levels[level] = level_stats;
  }
  figure = bar_chart("Similarity to the nearest KernelBench problem (op-multiset Jaccard)", labels, series,
                     "% of tasks", "Jaccard index of normalized op multisets (bins of 0.1 by lower edge; 1: same ops)");
  return {{"references", references.size()},
          {"measure", "op-multiset Jaccard of normalized op names, best over a level's problems"},
          {"levels", levels},
          {"op_multiset_jaccard", similarity_stats(best_overall)},
          {"op_shingle_jaccard", similarity_stats(best_shingle)}};
}

// --- Markdown ---

std::string number(const Json& value, const char* spec = "{:.3g}") {
  return value.is_number() ? format_text(spec, value.get<double>()) : "-";
}

std::string markdown(const Json& summary) {
  std::string out = format_text("# Task set report\n\n{} tasks from {}.\n\n## Ops per task\n\n",
                                summary["tasks"].get<int64_t>(), summary["inputs"].dump());
  out += "| ops | tasks | share | paper |\n|---|---|---|---|\n";
  const Json& counts = summary["op_count"];
  for (const auto& [count, tasks] : counts["tasks"].items()) {
    out += format_text(
        "| {} | {} | {:.1f}% | {} |\n", count, tasks.get<int64_t>(), 100 * counts["share"][count].get<double>(),
        counts["paper_share"].contains(count) ? format_text("{:.1f}%", 100 * counts["paper_share"][count].get<double>())
                                              : std::string("-"));
  }
  out +=
      "\n![ops per task](op_counts.svg)\n\n## Op categories\n\n| category | ops | share | tasks with one "
      "|\n|---|---|---|---|\n";
  for (const Json& row : summary["categories"]["categories"]) {
    out +=
        format_text("| {} | {} | {:.1f}% | {:.1f}% |\n", row["category"].get<std::string>(), row["ops"].get<int64_t>(),
                    100 * row["ops_share"].get<double>(), 100 * row["tasks_share"].get<double>());
  }
  const Json& runtime = summary["runtime"];
  const Json& eager = runtime["eager_ms"];
  out += "\n![op categories](categories.svg)\n\n## Eager runtime\n\n";
  out += format_text(
      "{} tasks timed ({} without meta.eager_ms): median {} ms, p10 {} ms, p90 {} ms; {} in the {:g}-{:g} ms "
      "window, {} below, {} above.\n",
      eager["count"].get<int64_t>(), runtime["untimed"].get<int64_t>(), number(eager["median"]), number(eager["p10"]),
      number(eager["p90"]), eager.value("in_window", 0), runtime["window_ms"][0].get<double>(),
      runtime["window_ms"][1].get<double>(), eager.value("below_window", 0), eager.value("above_window", 0));
  out += "\n![eager runtime](eager_ms.svg)\n";
  if (summary["kernelbench"].is_object()) {
    const Json& kb = summary["kernelbench"];
    out += format_text(
        "\n## Similarity to KernelBench\n\nAgainst {} reference problems; per task the best op-multiset "
        "Jaccard over a level's problems.\n\n| level | problems | median | mean | tasks at 1 | tasks at >= 0.5 "
        "| problems some task matches at 1 |\n|---|---|---|---|---|---|---|\n",
        kb["references"].get<int64_t>());
    for (const auto& [level, s] : kb["levels"].items()) {
      out += format_text("| {} | {} | {} | {} | {} | {} | {} |\n", level, s["problems"].get<int64_t>(),
                         number(s["median"]), number(s["mean"]), s["at_1"].get<int64_t>(),
                         s["at_least_0.5"].get<int64_t>(), s["problems_matched_at_1"].get<int64_t>());
    }
    const Json& shingle = kb["op_shingle_jaccard"];
    out += format_text(
        "\nca-filter's contamination measure (3-shingle Jaccard of op sequences), best over all problems: "
        "median {}, max {}.\n\n![similarity](similarity.svg)\n",
        number(shingle["median"]), number(shingle["max"]));
  }
  return out;
}

}  // namespace

std::expected<ReportTask, std::string> report_task(const Json& record) {
  if (!record.is_object()) return std::unexpected("expected a task record (a JSON object)");
  if (record.value("kind", std::string()) != "task")
    return std::unexpected("expected kind \"task\", got " + record.value("kind", Json("none")).dump());
  auto id = string_field(record, "id", "");
  if (!id) return std::unexpected(id.error());
  auto program_json = require_field(record, "program", "");
  if (!program_json) return std::unexpected(program_json.error());
  auto program = parse_program(**program_json, "program");
  if (!program) return std::unexpected(program.error());
  ReportTask task;
  task.id = *id;
  for (const Node& node : program->nodes) {
    std::string qualified = node.qualified_name();
    std::string op = normalize_op(qualified);
    if (op.empty()) continue;
    task.qualified_ops.push_back(std::move(qualified));
    task.ops.push_back(std::move(op));
  }
  if (record.contains("meta") && record["meta"].is_object()) {
    for (auto [key, slot] : {std::pair{"eager_ms", &task.eager_ms}, std::pair{"compile_ms", &task.compile_ms}}) {
      if (!record["meta"].contains(key)) continue;
      auto value = as_number(record["meta"][key], std::string("meta.") + key);
      if (!value) return std::unexpected(value.error());
      *slot = *value;
    }
    if (record["meta"].contains("op_count")) {
      auto value = as_int(record["meta"]["op_count"], "meta.op_count");
      if (!value) return std::unexpected(value.error());
      task.composed_ops = *value;
    }
  }
  return task;
}

std::expected<ReportReference, std::string> report_reference(const Json& record) {
  if (!record.is_object()) return std::unexpected("expected a task record (a JSON object)");
  auto id = string_field(record, "id", "");
  if (!id) return std::unexpected(id.error());
  auto program_json = require_field(record, "program", "");
  if (!program_json) return std::unexpected(program_json.error());
  auto program = parse_program(**program_json, "program");
  if (!program) return std::unexpected(program.error());
  const Json level = record.value("level", Json());
  return ReportReference{*id, level.is_number_integer() ? std::to_string(level.get<int64_t>()) : "other",
                         std::move(*program)};
}

double multiset_jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() && b.empty()) return 1.0;
  std::map<std::string, std::pair<size_t, size_t>> counts;
  for (const auto& op : a) ++counts[op].first;
  for (const auto& op : b) ++counts[op].second;
  size_t common = 0, all = 0;
  for (const auto& [op, count] : counts) {
    common += std::min(count.first, count.second);
    all += std::max(count.first, count.second);
  }
  return double(common) / double(all);
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double position = q * double(sorted.size() - 1);
  size_t below = size_t(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (position - double(below));
}

SetReport describe_set(const std::vector<ReportTask>& tasks, const std::vector<ReportReference>& references,
                       double window_min_ms, double window_max_ms) {
  SetReport report;
  for (const ReportTask& task : tasks) {
    Json row = {{"id", task.id}, {"op_count", task.ops.size()}, {"ops", task.ops}};
    row["eager_ms"] = task.eager_ms ? Json(*task.eager_ms) : Json();
    if (task.compile_ms) row["compile_ms"] = *task.compile_ms;
    report.rows.push_back(std::move(row));
  }
  report.summary = {{"kind", "set_report"}, {"tasks", tasks.size()}};
  report.summary["op_count"] = op_count_section(tasks, report.figures["op_counts.svg"]);
  report.summary["categories"] = category_section(tasks, report.rows, report.figures["categories.svg"]);
  report.summary["runtime"] = runtime_section(tasks, window_min_ms, window_max_ms, report.figures["eager_ms.svg"]);
  report.summary["kernelbench"] =
      references.empty() ? Json()
                         : similarity_section(tasks, references, report.rows, report.figures["similarity.svg"]);
  return report;
}

ExitCode write_set_report(const SetReportRun& run) {
  std::vector<ReportTask> tasks;
  std::vector<std::string> inputs = run.inputs.empty() ? std::vector<std::string>{"-"} : run.inputs;
  for (const std::string& path : inputs) {
    auto records = read_side_file(path, [&](const Json& record) -> std::expected<void, std::string> {
      auto task = report_task(record);
      if (!task) return std::unexpected(task.error());
      tasks.push_back(std::move(*task));
      return {};
    });
    if (!records) return report_side_file_error(records.error());
  }
  std::vector<ReportReference> references;
  for (const std::string& path : run.references) {
    // A KernelBench import also holds import_error records of the problems it could not import: not problems here.
    auto records = read_side_file(path, [&](const Json& record) -> std::expected<void, std::string> {
      if (record.is_object() && record.value("kind", std::string()) != "task") return {};
      auto reference = report_reference(record);
      if (!reference) return std::unexpected(reference.error());
      references.push_back(std::move(*reference));
      return {};
    });
    if (!records) return report_side_file_error(records.error());
  }
  if (tasks.empty()) {
    error("no task records in the input");
    return ExitCode::data_error;
  }

  SetReport report = describe_set(tasks, references, run.window_min_ms, run.window_max_ms);
  report.summary["inputs"] = inputs;
  report.summary["reference_files"] = run.references;
  report.markdown = markdown(report.summary);

  std::error_code ec;
  fs::create_directories(run.output_dir, ec);
  if (ec) {
    error(run.output_dir, ec.message());
    return ExitCode::io_error;
  }
  std::string rows;
  for (const Json& row : report.rows) rows += row.dump() + "\n";
  std::vector<std::pair<std::string, std::string>> files = {
      {"summary.json", report.summary.dump(2) + "\n"}, {"tasks.jsonl", rows}, {"report.md", report.markdown}};
  for (const auto& [name, svg] : report.figures) files.push_back({name, svg});
  for (const auto& [name, text] : files) {
    if (auto written = write_file_atomic((fs::path(run.output_dir) / name).string(), text); !written) {
      error(written.error());
      return ExitCode::io_error;
    }
  }
  const Json& eager = report.summary["runtime"]["eager_ms"];
  std::string line =
      format_text("{} tasks, {:.2f} ops per task; eager median {} ms, {} of {} timed in {:g}-{:g} ms", tasks.size(),
                  report.summary["op_count"]["mean"].get<double>(), number(eager.value("median", Json())),
                  eager.value("in_window", 0), eager["count"].get<int64_t>(), run.window_min_ms, run.window_max_ms);
  if (report.summary["kernelbench"].is_object()) {
    line += format_text("; nearest KernelBench op-multiset Jaccard median {}",
                        number(report.summary["kernelbench"]["op_multiset_jaccard"]["median"]));
  }
  note(line + "; wrote " + run.output_dir);
  return ExitCode::ok;
}

}  // namespace ca
