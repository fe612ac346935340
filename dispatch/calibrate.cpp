// Calibration: measures each device (fixed cost per call, host<->device transfers, each op over a
// ladder of sizes with the inputs resident) and fits the cost model's size classes to it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "dispatch/dispatcher.hpp"
#include "ops/samples.hpp"
#include "trine/error.hpp"
#include "trine/version.hpp"

namespace trine::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

struct Point {
  OpCost cost;
  double seconds = 0;
};

Tensor input(const Shape& s, std::uint64_t seed, Device d) {
  return Tensor::random(s, seed, -1.0f, 1.0f, DType::f32, d);
}

// Ops whose time follows their flops (the op table's bound); the rest follow their bytes.
bool compute_bound(OpKind op) { return op_info(op).bound == OpBound::compute; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median seconds of `f` over enough repetitions to fill ~`budget` (at least 3), after one warm-up
// whose time is returned in `first`.
template <class F>
double time_it(F&& f, double budget, double& first) {
  auto t0 = Clock::now();
  f();
  first = std::chrono::duration<double>(Clock::now() - t0).count();
  const int reps = static_cast<int>(std::clamp(budget / std::max(first, 1e-7), 3.0, 200.0));
  std::vector<double> times;
  times.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  return median(std::move(times));
}

// Medians of `f` and `g` timed alternately (at least 5 pairs, filling ~`budget`), so a change in
// the machine's speed while they run hits both alike: for differences between two timings.
template <class F, class G>
std::pair<double, double> time_pair(F&& f, G&& g, double budget) {
  f();
  g();
  std::vector<double> a, b;
  auto t0 = Clock::now();
  do {
    auto s = Clock::now();
    f();
    a.push_back(std::chrono::duration<double>(Clock::now() - s).count());
    s = Clock::now();
    g();
    b.push_back(std::chrono::duration<double>(Clock::now() - s).count());
  } while (a.size() < 5 || (std::chrono::duration<double>(Clock::now() - t0).count() < budget && a.size() < 200));
  return {median(std::move(a)), median(std::move(b))};
}

// Size classes from the measured points: class i holds point i's rate and reaches halfway (in log
// size) to the next point.
std::vector<SizeClass> fit_classes(OpKind op, std::vector<Point> points, double fixed) {
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.cost.flops + a.cost.bytes < b.cost.flops + b.cost.bytes; });
  std::vector<SizeClass> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const double size = p.cost.flops + p.cost.bytes;
    SizeClass c;
    c.at = size;
    c.fixed_s = std::min(fixed, 0.9 * p.seconds);
    const double work_s = p.seconds - c.fixed_s;
    if (compute_bound(op) && p.cost.flops > 0) {
      c.flops_per_s = p.cost.flops / work_s;
    } else {
      c.bytes_per_s = std::max(p.cost.bytes, 1.0) / work_s;
    }
    if (i + 1 < points.size()) {
      const double next = points[i + 1].cost.flops + points[i + 1].cost.bytes;
      c.upto = std::sqrt(size * next);
    } else {
      c.upto = std::numeric_limits<double>::infinity();
    }
    if (!out.empty() && !(c.upto > out.back().upto)) continue;  // two points of one size: keep the first
    out.push_back(c);
  }
  return out;
}

DeviceModel calibrate_device(const DeviceInfo& info, const CalibrateOptions& o,
                             const std::function<void(const std::string&)>& say) {
  const Device d = info.device;
  DeviceModel m;
  m.device = d.str();
  m.name = info.name;
  m.driver = info.driver;
  m.software = info.software;
  const double budget = o.quick ? 0.05 : 0.2;
  double first = 0;

  // The fixed cost of one sync call: relu on 16 floats, resident.
  {
    Tensor x = input({16}, 1, d);
    m.op_fixed_s = time_it([&] { (void)relu(x); }, budget, first);
    if (say) say(m.device + ": one sync call " + std::to_string(m.op_fixed_s * 1e6) + " us");
  }
  // Moving data as the dispatcher does it, inside calls: an input uploaded before the op that reads
  // it, the result read back after. From relu on 16 floats and on 1M (4M) floats, each timed
  // from host data and resident: the extra time is the fixed cost and the bytes of one upload and
  // one readback, split evenly between the two directions.
  if (d.kind != DeviceKind::cpu) {
    auto from_host = [&](OpKind op, const Tensor& x) {
      DeviceScope on(d);
      Tensor y = run_op(op, std::vector<Tensor>{x}, ActParams{});
      (void)y.to(Device::cpu());
      synchronize();
    };
    const std::int64_t big = o.quick ? (1 << 20) : (1 << 22);
    Tensor small_host = Tensor::random({16}, 3), big_host = Tensor::random({big}, 4);
    Tensor small_dev = input({16}, 3, d), big_dev = input({big}, 4, d);
    const auto [small_moved, small_resident] =
        time_pair([&] { from_host(OpKind::relu, small_host); }, [&] { (void)relu(small_dev); }, 2 * budget);
    const auto [big_moved, big_resident] =
        time_pair([&] { from_host(OpKind::relu, big_host); }, [&] { (void)relu(big_dev); }, 2 * budget);
    const double small_extra = small_moved - small_resident, big_extra = big_moved - big_resident;
    const double fixed = std::max(0.0, small_extra) / 2;
    const double per_byte = std::max(1e-13, (big_extra - small_extra) / (2.0 * 4.0 * static_cast<double>(big)));
    m.upload_fixed_s = m.readback_fixed_s = fixed;
    m.upload_bytes_per_s = m.readback_bytes_per_s = 1.0 / per_byte;
    if (say) {
      say(m.device + ": moving data in a call: " + std::to_string(fixed * 1e6) + " us + " +
          std::to_string(1e-9 / per_byte) + " GB/s each way");
    }
  }

  std::vector<OpKind> ops = o.ops;
  if (ops.empty())
    for (std::size_t k = 0; k < TRINE_OP_COUNT; ++k) ops.push_back(static_cast<OpKind>(k));
  std::vector<double> byte_rates, flop_rates;
  for (OpKind op : ops) {
    std::vector<Point> points;
    double spent = 0;
    std::string skipped;
    for (std::int64_t n : samples::ladder(op, o.quick)) {
      if (spent > o.max_seconds_per_op) {
        skipped = " (larger sizes skipped: over " + std::to_string(o.max_seconds_per_op) + " s)";
        break;
      }
      auto t0 = Clock::now();
      try {
        // The op's sample at size n (ops/samples.cpp), its inputs resident on d.
        const samples::Sample c = samples::sized(op, n);
        const std::vector<Tensor> inputs = samples::make_inputs(c, 1, d);
        const OpCost cost = op_cost(op, inputs, c.params);
        const double s = time_it([&] { (void)run_op(op, inputs, c.params); }, budget, first);
        points.push_back({cost, s});
      } catch (const Error& e) {
        // A device that cannot run the op at this size (unsupported, too large): no point here.
        skipped = std::string(" (stopped at size ") + std::to_string(n) + ": " + e.what() + ")";
        break;
      }
      spent += std::chrono::duration<double>(Clock::now() - t0).count();
      if (first > o.max_seconds_per_op / 4) {
        skipped = " (larger sizes skipped: one call took " + std::to_string(first) + " s)";
        break;
      }
    }
    if (points.empty()) {
      if (say) say(m.device + ": " + op_info(op).name + " not measured" + skipped);
      continue;
    }
    auto classes = fit_classes(op, points, m.op_fixed_s);
    const SizeClass& top = classes.back();
    if (compute_bound(op)) {
      if (top.flops_per_s > 0) flop_rates.push_back(top.flops_per_s);
    } else if (top.bytes_per_s > 0) {
      byte_rates.push_back(top.bytes_per_s);
    }
    if (say) {
      say(m.device + ": " + op_info(op).name + " " + std::to_string(points.size()) + " sizes, largest " +
          std::to_string(points.back().seconds * 1e3) + " ms" + skipped);
    }
    m.ops[op_info(op).name] = std::move(classes);
  }
  // Defaults for ops not measured: the medians of what was.
  const DeviceModel builtin = [&] {
    for (const auto& dm : builtin_profile().devices)
      if (dm.device == m.device) return dm;
    return DeviceModel{};
  }();
  m.bytes_per_s = byte_rates.empty() ? builtin.bytes_per_s : median(byte_rates);
  m.flops_per_s = flop_rates.empty() ? builtin.flops_per_s : median(flop_rates);
  return m;
}

}  // namespace

Profile calibrate(const CalibrateOptions& options, const std::function<void(const std::string&)>& progress) {
  Profile p = builtin_profile();
  p.source = "calibrated";
  p.devices.clear();
  std::vector<DeviceInfo> infos;
  for (const auto& s : detail::backend_slots()) {
    if (!s.backend) continue;
    for (const auto& info : s.devices) {
      bool wanted = options.devices.empty();
      for (const auto& d : options.devices) wanted = wanted || d == info.device;
      if (wanted) infos.push_back(info);
    }
  }
  for (const auto& d : options.devices) {
    bool found = false;
    for (const auto& info : infos) found = found || info.device == d;
    if (!found) throw Error(ErrorCode::device_unavailable, "[calibrate] device " + d.str() + " is not available here");
  }
  for (const auto& info : infos) {
    if (progress) progress("calibrating " + info.device.str() + " (" + info.name + ")");
    p.devices.push_back(calibrate_device(info, options, progress));
  }
  return p;
}

}  // namespace trine::dispatch
