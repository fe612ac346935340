// Timing one case every way trine-bench reports: on each device (pinned), automatic, async, batch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "benches/trine_bench/grid.hpp"

namespace trine_bench {

// One timed variant of a case. Times are medians, end to end: host data in, the result read back.
struct Timing {
  std::string status = "ok";  // "ok", "skipped (...)", "error: ..."
  double seconds = 0;         // when ok
  int reps = 0;
  bool ok() const { return status == "ok"; }
};

struct DeviceResult {
  trine::Device device;
  Timing measured;
  double predicted_s = 0;  // the cost model's estimate for this device (inputs and result moved)
  bool candidate = false;  // automatic placement could choose it
};

struct Row {
  const Case* c = nullptr;
  double flops = 0, bytes = 0;
  std::vector<DeviceResult> devices;
  std::optional<trine::Device> winner;  // the fastest measured device
  trine::Device auto_choice;
  Timing auto_sync, auto_async, auto_batch;
  double auto_predicted_s = 0;
  double regret = 0;  // auto / the winner, timed alternately call by call (medians); 0 when either is missing
};

// The fastest measured device's time (infinity when none was measured).
double best_of(const Row& row);

struct Options {
  double target_s = 0.2;  // the time each variant's repetitions should fill
  double budget_s = 2.0;  // a variant whose one call takes longer stops that op's larger sizes there
};

class Runner {
 public:
  Runner(Options o, std::vector<trine::DeviceInfo> devices) : o_(o), devices_(std::move(devices)) {}

  Row run(const Case& c);

  // The fixed cost of one call on `device` by spelling (relu on 16 floats, resident): sync, async,
  // and one entry of a replayed 64-op batch.
  struct Fixed {
    trine::Device device;
    Timing sync, async, batch_entry;
    Timing bare_submit;  // an empty submission waited for (trine::debug::bare_submit); unsupported on the cpu
  };
  Fixed fixed_cost(trine::Device device);

  // A chain of 64 element-wise ops on `n` floats on `device`: 64 sync calls vs one batch.
  struct Chain {
    trine::Device device;
    std::int64_t n = 0;
    Timing sync_calls, batch;
  };
  Chain chain(trine::Device device, std::int64_t n);

 private:
  Options o_;
  std::vector<trine::DeviceInfo> devices_;
  // Per (op, device): the size at which a call went over budget; larger sizes are skipped.
  std::vector<std::pair<std::string, std::string>> over_budget_;
  bool skipped(const Case& c, const std::string& who) const;
  void note_budget(const Case& c, const std::string& who, const Timing& t);
};

}  // namespace trine_bench
