// trine-bench's outputs.
#include "benches/trine_bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace trine_bench {
namespace {

std::string device_title(const trine::DeviceInfo& d) { return d.device.str() + (d.software ? " (sw)" : ""); }

std::string cell(const Timing& t) {
  if (t.ok()) return format_time(t.seconds);
  if (t.status.rfind("skipped", 0) == 0) return "skipped";
  if (t.status.rfind("unsupported", 0) == 0) return "unsupported";
  return "error";
}

// Throughput of `seconds` for the row: GFLOP/s for compute-bound ops, else GB/s.
double rate(const Row& r, double seconds) { return (r.c->compute_bound ? r.flops : r.bytes) / seconds / 1e9; }
const char* unit(const Row& r) { return r.c->compute_bound ? "GFLOP/s" : "GB/s"; }

std::vector<std::string> ops_in_order(const Report& r) {
  std::vector<std::string> out;
  for (const auto& row : r.rows) {
    const std::string name = trine::op_info(row.c->op).name;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::min<double>(static_cast<double>(v.size() - 1), q * static_cast<double>(v.size())));
  return v[i];
}

nlohmann::json timing_json(const Timing& t) {
  nlohmann::json j;
  j["status"] = t.status;
  if (t.ok()) {
    j["measured_s"] = t.seconds;
    j["reps"] = t.reps;
  }
  return j;
}

}  // namespace

std::string format_time(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string table_text(const Report& r) {
  std::string out = fmt::format("{:<11} {:<28}", "op", "size");
  for (const auto& d : r.devices) out += fmt::format(" {:>24}", device_title(d) + " (model)");
  out += fmt::format(" {:>16} {:>9} {:>7} {:>10} {:>10}\n", "best rate", "auto ->", "regret", "async", "batch");
  for (const auto& row : r.rows) {
    out += fmt::format("{:<11} {:<28}", trine::op_info(row.c->op).name, row.c->size);
    for (const auto& d : row.devices) {
      out += fmt::format(" {:>24}", cell(d.measured) + " (" + format_time(d.predicted_s) + ")");
    }
    const std::string best = row.winner ? fmt::format("{:.2f} {}", rate(row, best_of(row)), unit(row)) : "-";
    const std::string regret = row.regret > 0 ? fmt::format("{:.2f}", row.regret) : "-";
    out += fmt::format(" {:>16} {:>9} {:>7} {:>10} {:>10}\n", best, row.auto_choice.str(), regret, cell(row.auto_async),
                       cell(row.auto_batch));
  }
  return out;
}

Summary summarize(const Report& r) {
  Summary s;
  double log_sum = 0;
  for (const auto& row : r.rows) {
    if (row.regret <= 0) continue;
    ++s.rows_with_regret;
    log_sum += std::log(row.regret);
    if (row.regret > s.regret_max) {
      s.regret_max = row.regret;
      s.worst = std::string(trine::op_info(row.c->op).name) + " " + row.c->size + " (auto chose " +
                row.auto_choice.str() + (row.winner ? ", best " + row.winner->str() : "") + ")";
    }
  }
  if (s.rows_with_regret) s.regret_geomean = std::exp(log_sum / s.rows_with_regret);
  for (const auto& d : r.devices) {
    std::vector<double> errs;
    for (const auto& row : r.rows)
      for (const auto& x : row.devices)
        if (x.device == d.device && x.measured.ok() && x.predicted_s > 0)
          errs.push_back(std::abs(std::log(x.predicted_s / x.measured.seconds)));
    s.model.push_back({d.device.str(), static_cast<int>(errs.size()), quantile(errs, 0.5), quantile(errs, 0.9)});
  }
  return s;
}

std::string summary_text(const Report& r, const Summary& s) {
  std::string out = r.interrupted ? fmt::format("interrupted: {} of {} grid rows measured; the fixed costs and chains were not\n",
                                                r.rows.size(), r.planned)
                                  : std::string();
  out += fmt::format("regret (auto's time / the best device's, {} rows): geometric mean {:.3f}, worst {:.2f}{}\n",
                                s.rows_with_regret, s.regret_geomean, s.regret_max, s.worst.empty() ? "" : " at " + s.worst);
  for (const auto& m : s.model) {
    out += fmt::format("model vs measured on {}: median |log(pred/meas)| {:.2f}, 90th percentile {:.2f} ({} cells)\n",
                       m.device, m.median_abs_log, m.p90_abs_log, m.n);
  }
  for (const auto& f : r.fixed) {
    out += fmt::format("fixed cost of one call on {} (relu, 16 floats): sync {}, async {}, batch entry {}", f.device.str(),
                       cell(f.sync), cell(f.async), cell(f.batch_entry));
    if (f.bare_submit.ok()) {
      out += fmt::format("; an empty submission waited for {}{}", cell(f.bare_submit),
                         f.sync.ok() ? fmt::format(" (sync call / empty submission {:.1f}x)", f.sync.seconds / f.bare_submit.seconds) : "");
    }
    out += "\n";
  }
  for (const auto& c : r.chains) {
    out += fmt::format("64 element-wise ops on {} floats on {}: 64 sync calls {}, one batch {}{}\n", c.n, c.device.str(),
                       cell(c.sync_calls), cell(c.batch),
                       c.sync_calls.ok() && c.batch.ok() ? fmt::format(" ({:.1f}x)", c.sync_calls.seconds / c.batch.seconds)
                                                         : std::string());
  }
  return out;
}

void write_csv(const Report& r, const std::filesystem::path& path) {
  std::ofstream out(path);
  out << "op,size,flops,bytes,variant,device,status,measured_s,predicted_s,reps,winner,auto_choice,regret\n";
  auto line = [&](const Row& row, const std::string& variant, const std::string& device, const Timing& t, double predicted) {
    std::string status = t.status;
    std::replace(status.begin(), status.end(), ',', ';');
    std::replace(status.begin(), status.end(), '\n', ' ');
    out << trine::op_info(row.c->op).name << ",\"" << row.c->size << "\"," << row.flops << "," << row.bytes << ","
        << variant << "," << device << ",\"" << status << "\"," << (t.ok() ? fmt::format("{:.9g}", t.seconds) : "")
        << "," << fmt::format("{:.9g}", predicted) << "," << t.reps << "," << (row.winner ? row.winner->str() : "")
        << "," << row.auto_choice.str() << "," << (row.regret > 0 ? fmt::format("{:.4f}", row.regret) : "") << "\n";
  };
  for (const auto& row : r.rows) {
    for (const auto& d : row.devices) line(row, "device", d.device.str(), d.measured, d.predicted_s);
    line(row, "auto_sync", row.auto_choice.str(), row.auto_sync, row.auto_predicted_s);
    line(row, "auto_async", row.auto_choice.str(), row.auto_async, row.auto_predicted_s);
    line(row, "auto_batch", row.auto_choice.str(), row.auto_batch, 0);
  }
}

void write_json(const Report& r, const Summary& s, const std::filesystem::path& path) {
  nlohmann::json j;
  j["trine_version"] = trine::version();
  j["quick"] = r.quick;
  j["profile"] = r.profile_source;
  j["seconds"] = r.seconds;
  j["complete"] = !r.interrupted;
  j["rows_planned"] = r.planned;
  for (const auto& d : r.devices) j["devices"].push_back({{"device", d.device.str()}, {"name", d.name}, {"software", d.software}});
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json x;
    x["op"] = trine::op_info(row.c->op).name;
    x["size"] = row.c->size;
    x["flops"] = row.flops;
    x["bytes"] = row.bytes;
    x["unit"] = unit(row);
    for (const auto& d : row.devices) {
      nlohmann::json dj = timing_json(d.measured);
      dj["device"] = d.device.str();
      dj["predicted_s"] = d.predicted_s;
      dj["candidate"] = d.candidate;
      x["devices"].push_back(dj);
    }
    x["winner"] = row.winner ? row.winner->str() : "";
    x["auto"] = {{"device", row.auto_choice.str()},
                 {"predicted_s", row.auto_predicted_s},
                 {"sync", timing_json(row.auto_sync)},
                 {"async", timing_json(row.auto_async)},
                 {"batch", timing_json(row.auto_batch)}};
    if (row.regret > 0) x["regret"] = row.regret;
    j["rows"].push_back(x);
  }
  j["summary"]["regret_rows"] = s.rows_with_regret;
  j["summary"]["regret_geomean"] = s.regret_geomean;
  j["summary"]["regret_max"] = s.regret_max;
  j["summary"]["regret_worst"] = s.worst;
  for (const auto& m : s.model)
    j["summary"]["model"][m.device] = {{"cells", m.n}, {"median_abs_log", m.median_abs_log}, {"p90_abs_log", m.p90_abs_log}};
  for (const auto& f : r.fixed)
    j["fixed_cost"].push_back({{"device", f.device.str()},
                               {"sync", timing_json(f.sync)},
                               {"async", timing_json(f.async)},
                               {"batch_entry", timing_json(f.batch_entry)},
                               {"bare_submit", timing_json(f.bare_submit)}});
  for (const auto& c : r.chains)
    j["chain64"].push_back(
        {{"device", c.device.str()}, {"n", c.n}, {"sync_calls", timing_json(c.sync_calls)}, {"batch", timing_json(c.batch)}});
  std::ofstream(path) << j.dump(1) << "\n";
}

std::vector<std::filesystem::path> write_plots(const Report& r, const std::filesystem::path& dir, std::string& why) {
  std::vector<std::filesystem::path> out;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    why = "gnuplot not found (scripts/install-deps.sh installs gnuplot-nox)";
    return out;
  }
  std::filesystem::create_directories(dir);
  for (const auto& op : ops_in_order(r)) {
    std::vector<const Row*> rows;
    for (const auto& row : r.rows)
      if (op == trine::op_info(row.c->op).name) rows.push_back(&row);
    const auto script = dir / (op + ".gp");
    const auto png = dir / (op + ".png");
    std::ofstream gp(script);
    // noenhanced: labels as the table prints them (enhanced text made 32^3 a superscript, "323")
    gp << "set terminal png noenhanced size 900,520\nset output '" << png.string() << "'\n";
    gp << "set title '" << op << ": throughput by size (" << unit(*rows[0]) << ", host data in and out)'\n";
    gp << "set ylabel '" << unit(*rows[0]) << "'\nset logscale y\nset grid\nset key outside right\n";
    gp << "set datafile missing '?'\nset xtics rotate by -30 font ',8'\nset xrange [-0.5:" << rows.size() - 0.5 << "]\n";
    // Columns: index, label, one per device, auto.
    gp << "$d << EOD\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& row = *rows[i];
      gp << i << " \"" << row.c->size << "\"";
      for (const auto& d : row.devices) gp << " " << (d.measured.ok() ? fmt::format("{:.6g}", rate(row, d.measured.seconds)) : "?");
      gp << " " << (row.auto_sync.ok() ? fmt::format("{:.6g}", rate(row, row.auto_sync.seconds)) : "?") << "\n";
    }
    gp << "EOD\n";
    // The crossovers: where the fastest device changes from one size to the next.
    for (std::size_t i = 1; i < rows.size(); ++i) {
      if (rows[i]->winner && rows[i - 1]->winner && !(*rows[i]->winner == *rows[i - 1]->winner)) {
        gp << "set arrow from " << i - 0.5 << ", graph 0 to " << i - 0.5 << ", graph 1 nohead dt 2 lc rgb 'gray'\n";
        gp << "set label 'crossover: " << rows[i - 1]->winner->str() << " -> " << rows[i]->winner->str() << "' at "
           << i - 0.5 << ", graph 0.95 center font ',8'\n";
      }
    }
    gp << "plot ";
    for (std::size_t k = 0; k < r.devices.size(); ++k) {
      gp << "$d using 1:" << k + 3 << ":xtic(2) with linespoints lw 2 title '" << device_title(r.devices[k]) << "', ";
    }
    gp << "$d using 1:" << r.devices.size() + 3 << " with points pt 6 ps 2.5 lc rgb 'black' title 'auto (its choice)'\n";
    gp.close();
    const std::string cmd = "gnuplot '" + script.string() + "' 2>&1";
    if (std::system(cmd.c_str()) == 0 && std::filesystem::exists(png)) out.push_back(png);
  }
  return out;
}

void write_page(const Report& r, const Summary& s, const std::vector<std::filesystem::path>& plots,
                const std::filesystem::path& path) {
  std::ofstream md(path);
  md << "# trine-bench" << (r.quick ? " --quick" : "") << "\n\n";
  if (r.interrupted)
    md << "**Interrupted:** " << r.rows.size() << " of " << r.planned << " grid rows measured; no fixed costs or chains.\n\n";
  md << "trine " << trine::version() << ", cost model from " << r.profile_source << ", " << fmt::format("{:.0f}", r.seconds)
     << " s. Devices:\n\n";
  for (const auto& d : r.devices) md << "- `" << d.device.str() << "` " << d.name << (d.software ? " (software)" : "") << "\n";
  md << "\nEvery time is end to end from host data (inputs uploaded, result read back), the median of repeated calls. "
        "A device cell is `measured (model's prediction)`. Regret = auto's time / the fastest device's time "
        "(1.00: auto chose the best).\n\n```\n"
     << summary_text(r, s) << "```\n\n";
  for (const auto& op : ops_in_order(r)) {
    md << "## " << op << "\n\n```\n";
    Report one = r;
    one.rows.clear();
    for (const auto& row : r.rows)
      if (op == trine::op_info(row.c->op).name) one.rows.push_back(row);
    md << table_text(one) << "```\n\n";
    for (const auto& p : plots)
      if (p.stem() == op) md << "![" << op << "](" << std::filesystem::relative(p, path.parent_path()).string() << ")\n\n";
  }
}

}  // namespace trine_bench
