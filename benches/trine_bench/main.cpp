// trine-bench: which backend wins where, measured, plotted, and what the dispatcher chose.
//
//   trine-bench --quick                      every op, a few sizes, every device of this machine
//   trine-bench --ops matmul,softmax         a sweep of those ops
//   trine-bench --calibrate                  measure this machine, write the dispatcher's profile
//
// Writes the table (stdout and table.txt), results.csv, results.json, plots/<op>.png and index.md
// under --out (default ./trine-bench-out). Software devices (lavapipe, the PTX emulator) are timed
// and opted in to automatic placement; every output labels them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "benches/trine_bench/grid.hpp"
#include "benches/trine_bench/measure.hpp"
#include "benches/trine_bench/report.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;
std::timespec g_stop_at{};

// The first SIGINT/SIGTERM asks the grid loop to stop; one more, half a second or later, ends the
// process at once. `timeout` (without --foreground) signals the child and then its whole process
// group, so the same stop arrives twice within microseconds: that second one is ignored.
extern "C" void on_stop_signal(int sig) {
  std::timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  if (!g_stop) {
    g_stop = sig;
    g_stop_at = now;
    return;
  }
  const double since = static_cast<double>(now.tv_sec - g_stop_at.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec - g_stop_at.tv_nsec);
  if (since >= 0.5) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

using namespace trine_bench;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A progress bar on a terminal, plain lines otherwise.
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), tty_(isatty(STDERR_FILENO) != 0) {}
  void step(const std::string& what) {
    ++done_;
    if (tty_) {
      const int width = 30, filled = static_cast<int>(width * done_ / std::max<std::size_t>(total_, 1));
      std::fprintf(stderr, "\r[%s%s] %zu/%zu %-50.50s", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                   std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done_, total_, what.c_str());
      if (done_ == total_) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "[%zu/%zu] %s\n", done_, total_, what.c_str());
    }
    std::fflush(stderr);
  }

 private:
  std::size_t total_, done_ = 0;
  bool tty_;
};

int run(int argc, char** argv) {
  CLI::App app{"trine-bench: times every op on every device of this machine, against the dispatcher's choice"};
  bool quick = false, calibrate = false, calibrate_only = false, no_plots = false;
  std::string ops_arg, devices_arg, out_arg = "trine-bench-out";
  double budget = 0;
  app.add_flag("--quick", quick, "a few sizes per op (under two minutes on 2 cores)");
  app.add_option("--ops", ops_arg, "comma-separated ops (default: every op of the table)");
  app.add_option("--devices", devices_arg, "comma-separated devices, e.g. cpu,vulkan:0 (default: all)");
  app.add_option("--out", out_arg, "output directory")->capture_default_str();
  app.add_option("--budget", budget, "seconds one call may take before larger sizes of that op are skipped on that device");
  app.add_flag("--calibrate", calibrate, "measure this machine first and write the dispatcher's profile");
  app.add_flag("--calibrate-only", calibrate_only, "write the profile and stop");
  app.add_flag("--no-plots", no_plots, "skip the PNG plots");
  CLI11_PARSE(app, argc, argv);

  std::vector<trine::OpKind> ops;
  for (const auto& name : split(ops_arg)) {
    trine::OpKind op;
    if (!op_from_name(name, op)) {
      std::fprintf(stderr, "trine-bench: no op named '%s' (see docs/ops.md)\n", name.c_str());
      return 2;
    }
    ops.push_back(op);
  }
  std::vector<trine::DeviceInfo> devices;
  for (const auto& info : trine::devices()) {
    bool wanted = devices_arg.empty();
    for (const auto& d : split(devices_arg)) wanted = wanted || trine::Device::parse(d) == info.device;
    if (wanted) devices.push_back(info);
  }
  for (const auto& d : split(devices_arg)) {
    bool found = false;
    for (const auto& info : devices) found = found || info.device == trine::Device::parse(d);
    if (!found) {
      std::fprintf(stderr, "trine-bench: device %s is not available here (trine-info lists them)\n", d.c_str());
      return 2;
    }
  }
  trine::dispatch::allow_software(true);

  if (calibrate || calibrate_only) {
    trine::dispatch::CalibrateOptions co;
    for (const auto& d : devices) co.devices.push_back(d.device);
    co.ops = ops;
    co.quick = quick;
    const auto p = trine::dispatch::calibrate(co, [](const std::string& s) { std::fprintf(stderr, "calibrate: %s\n", s.c_str()); });
    const auto path = trine::dispatch::profile_path();
    if (path.empty()) {
      std::fprintf(stderr, "trine-bench: neither XDG_CACHE_HOME nor HOME is set: the profile is used for this run only\n");
    } else {
      trine::dispatch::save_profile(p, path);
      std::printf("calibration profile written to %s\n", path.c_str());
    }
    trine::dispatch::set_profile(p);
    if (calibrate_only) return 0;
  }

  Report report;
  report.devices = devices;
  report.quick = quick;
  report.profile_source = trine::dispatch::active_profile().source;
  std::printf("trine-bench%s: %zu device(s):", quick ? " --quick" : "", devices.size());
  for (const auto& d : devices) std::printf(" %s%s", d.device.str().c_str(), d.software ? " (software)" : "");
  std::printf("; software devices opted in to automatic placement; cost model from %s\n", report.profile_source.c_str());

  Options o;
  o.target_s = quick ? 0.02 : 0.2;
  o.budget_s = budget > 0 ? budget : (quick ? 0.5 : 5.0);
  Runner runner(o, devices);
  const auto grid = make_grid(ops, quick);
  report.planned = grid.size();
  Progress progress(grid.size() + 2 * devices.size());
  const auto t0 = std::chrono::steady_clock::now();
  // Ctrl-C or a `timeout` (SIGTERM) ends the run after the row being measured, and what was
  // measured is written as usual, marked incomplete; a second signal ends it at once.
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  for (const auto& c : grid) {
    if (g_stop) break;
    progress.step(std::string(trine::op_info(c.op).name) + " " + c.size);
    report.rows.push_back(runner.run(c));
  }
  report.interrupted = g_stop != 0;
  if (report.interrupted)
    std::fprintf(stderr, "\ntrine-bench: interrupted after %zu of %zu rows; writing what was measured\n", report.rows.size(),
                 grid.size());
  for (const auto& d : devices) {
    if (report.interrupted) break;
    progress.step("fixed cost on " + d.device.str());
    report.fixed.push_back(runner.fixed_cost(d.device));
  }
  for (const auto& d : devices) {
    if (report.interrupted) break;
    progress.step("64-op chains on " + d.device.str());
    // 4K floats (where the fixed cost per call dominates) and 1M (where memory does); the emulator
    // only the small one.
    report.chains.push_back(runner.chain(d.device, 4096));
    if (!(d.software && d.device.kind == trine::DeviceKind::cuda)) report.chains.push_back(runner.chain(d.device, 1 << 20));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const Summary s = summarize(report);
  const std::string table = table_text(report);
  std::printf("\n%s\n%s", table.c_str(), summary_text(report, s).c_str());

  const std::filesystem::path out(out_arg);
  std::filesystem::create_directories(out);
  std::ofstream(out / "table.txt") << table << "\n" << summary_text(report, s);
  write_csv(report, out / "results.csv");
  write_json(report, s, out / "results.json");
  std::vector<std::filesystem::path> plots;
  std::string why;
  if (!no_plots) {
    plots = write_plots(report, out / "plots", why);
    if (!why.empty()) std::fprintf(stderr, "trine-bench: no plots: %s\n", why.c_str());
  }
  write_page(report, s, plots, out / "index.md");
  std::printf("\nwrote %s/{table.txt,results.csv,results.json,index.md} and %zu plot(s) in %s/plots (%.0f s)\n",
              out.string().c_str(), plots.size(), out.string().c_str(), report.seconds);
  return report.interrupted ? 128 + static_cast<int>(g_stop) : 0;  // as a shell reports a signal's end
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trine-bench: %s\n", e.what());
    return 1;
  }
}
