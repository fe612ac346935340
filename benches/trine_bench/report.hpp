// trine-bench's outputs: the table on stdout, CSV, JSON, a PNG plot per op (gnuplot), one page.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "benches/trine_bench/measure.hpp"

namespace trine_bench {

struct Report {
  std::vector<trine::DeviceInfo> devices;
  std::vector<Row> rows;
  std::vector<Runner::Fixed> fixed;
  std::vector<Runner::Chain> chains;
  std::string profile_source;
  bool quick = false;
  double seconds = 0;  // the whole run
  // Stopped by SIGINT or SIGTERM after `rows` of `planned` grid rows: what was measured is written.
  bool interrupted = false;
  std::size_t planned = 0;
};

// "1.23 ms"
std::string format_time(double s);
// One op's rows as the table's lines (header included), for the terminal and the page.
std::string table_text(const Report& r);

// Regret and model-accuracy figures over the rows.
struct Summary {
  int rows_with_regret = 0;
  double regret_geomean = 0, regret_max = 0;
  std::string worst;  // the row with the largest regret
  struct Model {
    std::string device;
    int n = 0;
    double median_abs_log = 0, p90_abs_log = 0;
  };
  std::vector<Model> model;  // per device: |log(predicted / measured)|
};
Summary summarize(const Report& r);
std::string summary_text(const Report& r, const Summary& s);

void write_csv(const Report& r, const std::filesystem::path& path);
void write_json(const Report& r, const Summary& s, const std::filesystem::path& path);
// One PNG per op under `dir`; returns the files written (empty if gnuplot is missing, with `why`).
std::vector<std::filesystem::path> write_plots(const Report& r, const std::filesystem::path& dir, std::string& why);
void write_page(const Report& r, const Summary& s, const std::vector<std::filesystem::path>& plots,
                const std::filesystem::path& path);

}  // namespace trine_bench
