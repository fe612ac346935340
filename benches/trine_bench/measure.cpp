// trine-bench's timing: medians of adaptive repetitions, end to end from host data.
#include "benches/trine_bench/measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "trine/debug.hpp"

namespace trine_bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One warm-up call, then repetitions filling `target` (3 to 50), median. A call slower than
// `budget` is reported from the warm-up alone (one sample).
template <class F>
Timing time_it(F&& f, double target, double budget) {
  Timing t;
  try {
    auto t0 = Clock::now();
    f();
    const double first = since(t0);
    if (first > budget) {
      t.seconds = first;
      t.reps = 1;
      return t;
    }
    const int reps = static_cast<int>(std::clamp(target / std::max(first, 1e-7), 3.0, 50.0));
    std::vector<double> s;
    for (int i = 0; i < reps; ++i) {
      auto a = Clock::now();
      f();
      s.push_back(since(a));
    }
    std::sort(s.begin(), s.end());
    t.seconds = s[s.size() / 2];
    t.reps = reps;
  } catch (const std::exception& e) {
    t.status = std::string("error: ") + e.what();
  }
  return t;
}

// The result where the host can read it: a cpu tensor is host memory already (the sync call has
// finished it); another device's is read back into one, and waited for (to() returns at once).
// This is what "host data out" costs.
trine::Tensor on_host(const trine::Tensor& t) {
  if (t.device() == trine::Device::cpu()) return t;
  trine::Tensor h = t.to(trine::Device::cpu());
  trine::synchronize();
  return h;
}

Timing skipped_timing(const std::string& why) {
  Timing t;
  t.status = "skipped (" + why + ")";
  return t;
}

}  // namespace

bool Runner::skipped(const Case& c, const std::string& who) const {
  for (const auto& [op, w] : over_budget_)
    if (op == trine::op_info(c.op).name && w == who) return true;
  return false;
}

void Runner::note_budget(const Case& c, const std::string& who, const Timing& t) {
  if (t.ok() && t.seconds > o_.budget_s) over_budget_.emplace_back(trine::op_info(c.op).name, who);
}

Row Runner::run(const Case& c) {
  Row row;
  row.c = &c;
  const std::vector<trine::Tensor> in = c.inputs();
  const trine::OpCost cost = trine::op_cost(c.op, in, c.params);
  row.flops = cost.flops;
  row.bytes = cost.bytes;
  const trine::dispatch::Decision d = trine::dispatch::decide(c.op, in, c.params);
  row.auto_choice = d.device;
  auto call = [&] { (void)on_host(trine::run_op(c.op, in, c.params)); };

  for (const auto& info : devices_) {
    DeviceResult r;
    r.device = info.device;
    for (const auto& cand : d.candidates) {
      if (cand.device == info.device) {
        r.predicted_s = cand.total_s;
        r.candidate = cand.eligible;
        if (cand.device == d.device) row.auto_predicted_s = cand.total_s;
      }
    }
    const std::string who = info.device.str();
    std::string unsupported;
    for (const auto& cand : d.candidates)
      if (cand.device == info.device && !cand.eligible && cand.why_not.find("does not run") != std::string::npos)
        unsupported = cand.why_not;
    if (!unsupported.empty()) {
      r.measured.status = "unsupported (" + unsupported + ")";
    } else if (skipped(c, who)) {
      r.measured = skipped_timing("a smaller size took over " + std::to_string(o_.budget_s) + " s");
    } else if (r.predicted_s > 20 * o_.budget_s) {
      r.measured = skipped_timing("predicted " + std::to_string(r.predicted_s) + " s");
    } else {
      r.measured = time_it(
          [&] {
            trine::DeviceScope on(info.device);
            call();
          },
          o_.target_s, o_.budget_s);
      note_budget(c, who, r.measured);
    }
    if (r.measured.ok() && (!row.winner || r.measured.seconds < best_of(row))) row.winner = info.device;
    row.devices.push_back(std::move(r));
  }

  // Automatic placement, sync, async and batch. A choice whose device was skipped for the budget
  // is not run again here.
  const DeviceResult* chosen = nullptr;
  for (const auto& r : row.devices)
    if (r.device == row.auto_choice) chosen = &r;
  if (chosen && !chosen->measured.ok() && chosen->measured.status.rfind("skipped", 0) == 0) {
    row.auto_sync = row.auto_async = row.auto_batch = skipped_timing("auto chose " + row.auto_choice.str() + ", over budget");
  } else {
    row.auto_sync = time_it(call, o_.target_s, o_.budget_s);
    row.auto_async = time_it([&] { (void)on_host(trine::async::run_op(c.op, in, c.params).get()); }, o_.target_s,
                             o_.budget_s);
    // A batch that uploads the inputs, runs the op and reads the result; placed at its first run.
    std::vector<std::vector<float>> host;
    for (const auto& t : in) host.push_back(t.defined() ? t.to_vector() : std::vector<float>{});
    try {
      trine::Batch batch;
      std::vector<trine::Tensor> bin;
      for (std::size_t i = 0; i < in.size(); ++i)
        bin.push_back(in[i].defined() ? batch.upload(host[i], in[i].shape()) : trine::Tensor());
      trine::BatchRead out = batch.read(trine::run_op(c.op, bin, c.params));
      row.auto_batch = time_it([&] { batch.run(); }, o_.target_s, o_.budget_s);
    } catch (const std::exception& e) {
      row.auto_batch.status = std::string("error: ") + e.what();
    }
  }
  // Regret side by side: the fastest device and automatic placement alternate, call by call, in
  // ABBA order, so a change in the machine's speed (shared memory bandwidth moves within seconds)
  // hits both alike; the regret is the median of the pairs' ratios, which one slow call cannot move.
  if (row.auto_sync.ok() && row.winner) {
    const trine::Device best = *row.winner;
    std::vector<double> ratios;
    const int reps = std::clamp(row.auto_sync.reps, 9, 41);
    auto pinned = [&] {
      const auto t0 = Clock::now();
      trine::DeviceScope on(best);
      call();
      return since(t0);
    };
    auto automatic = [&] {
      const auto t0 = Clock::now();
      call();
      return since(t0);
    };
    try {
      for (int i = 0; i < reps; ++i) {
        double ta = 0, tb = 0;
        if (i % 2 == 0) {
          tb = pinned();
          ta = automatic();
        } else {
          ta = automatic();
          tb = pinned();
        }
        ratios.push_back(ta / tb);
      }
      std::sort(ratios.begin(), ratios.end());
      row.regret = ratios[ratios.size() / 2];
    } catch (const std::exception&) {  // measured once already; a failure here leaves no regret
    }
  }
  return row;
}

double best_of(const Row& row) {
  double best = INFINITY;
  for (const auto& r : row.devices)
    if (r.measured.ok()) best = std::min(best, r.measured.seconds);
  return best;
}

Runner::Fixed Runner::fixed_cost(trine::Device device) {
  Fixed f;
  f.device = device;
  const trine::Tensor x = trine::Tensor::random({16}, 1, -1.0f, 1.0f, trine::DType::f32, device);
  f.sync = time_it([&] { (void)trine::relu(x); }, o_.target_s, o_.budget_s);
  f.async = time_it([&] { (void)trine::async::relu(x).get(); }, o_.target_s, o_.budget_s);
  try {
    trine::debug::bare_submit(device);  // unsupported: the device has no submission of its own
    f.bare_submit = time_it([&] { trine::debug::bare_submit(device); }, o_.target_s, o_.budget_s);
  } catch (const trine::Error& e) {
    f.bare_submit.status = e.code() == trine::ErrorCode::unsupported ? "unsupported" : std::string("error: ") + e.what();
  }
  try {
    std::vector<float> host(16, 0.5f);
    trine::Batch batch(device);
    trine::Tensor t = batch.upload(host, {16});
    for (int i = 0; i < 64; ++i) t = trine::relu(t);
    trine::BatchRead out = batch.read(t);
    f.batch_entry = time_it([&] { batch.run(); }, o_.target_s, o_.budget_s);
    if (f.batch_entry.ok()) f.batch_entry.seconds /= 64;
  } catch (const std::exception& e) {
    f.batch_entry.status = std::string("error: ") + e.what();
  }
  return f;
}

Runner::Chain Runner::chain(trine::Device device, std::int64_t n) {
  Chain ch;
  ch.device = device;
  ch.n = n;
  std::vector<float> host(static_cast<std::size_t>(n), 0.25f);
  ch.sync_calls = time_it(
      [&] {
        trine::Tensor t = trine::Tensor::from(host, {n}, trine::DType::f32, device);
        for (int i = 0; i < 64; ++i) t = trine::scale(t, 0.5f, 0.25f);
        (void)t.to_vector();
      },
      o_.target_s, o_.budget_s);
  try {
    trine::Batch batch(device);
    trine::Tensor t = batch.upload(host, {n});
    for (int i = 0; i < 64; ++i) t = trine::scale(t, 0.5f, 0.25f);
    trine::BatchRead out = batch.read(t);
    ch.batch = time_it([&] { batch.run(); }, o_.target_s, o_.budget_s);
  } catch (const std::exception& e) {
    ch.batch.status = std::string("error: ") + e.what();
  }
  return ch;
}

}  // namespace trine_bench
