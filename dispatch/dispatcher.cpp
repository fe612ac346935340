// Where each call runs: pins first (pinned inputs, DeviceScope, TRINE_DEVICE), then the cost model.
#include "dispatch/dispatcher.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "trine/error.hpp"

namespace trine {
namespace detail {
namespace {

thread_local std::optional<Device> t_scope;
// DeviceScopes alive in any thread: while none is, the sync path skips the thread-local lookup.
std::atomic<int> g_scopes{0};

// -1: follow the environment; 0/1: allow_software() said so.
std::atomic<int> g_software{-1};

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Read once: the sync call path asks for every op.
const bool k_env_software = env_on("TRINE_ALLOW_SOFTWARE");
const bool k_env_vulkan_cpu = env_on("TRINE_VULKAN_ALLOW_CPU");

// Whether automatic placement may use this device (software ones only on opt-in), in opt-in state
// `state` (g_software's values).
bool candidate(const DeviceInfo& info, int state) {
  if (!info.software) return true;
  if (state >= 0) return state == 1;
  return k_env_software || (info.device.kind == DeviceKind::vulkan && k_env_vulkan_cpu);
}
bool candidate(const DeviceInfo& info) { return candidate(info, g_software.load(std::memory_order_relaxed)); }

struct EnvPin {
  std::optional<Device> device;
  std::string error;  // TRINE_DEVICE set to something that is not a device
};

const EnvPin& env_pin() {
  static const EnvPin pin = [] {
    EnvPin p;
    const char* v = std::getenv("TRINE_DEVICE");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return p;
    try {
      p.device = Device::parse(v);
    } catch (const Error& e) {
      p.error = std::string("TRINE_DEVICE=") + v + ": " + e.what();
    }
    return p;
  }();
  return pin;
}

// The only device automatic placement may use when there is exactly one (a machine without a GPU
// and without the software opt-in), else nullopt; computed once per opt-in state.
const std::optional<Device>& sole_candidate() {
  static const std::array<std::optional<Device>, 3> by_state = [] {
    std::array<std::optional<Device>, 3> out;
    for (int state = -1; state <= 1; ++state) {
      std::vector<Device> found;
      for (const auto& slot : backend_slots()) {
        if (!slot.backend) continue;
        for (const auto& info : slot.devices) {
          if (candidate(info, state)) found.push_back(info.device);
        }
      }
      if (found.size() == 1) out[static_cast<std::size_t>(state + 1)] = found[0];
    }
    return out;
  }();
  return by_state[static_cast<std::size_t>(g_software.load(std::memory_order_relaxed) + 1)];
}

}  // namespace

bool log_dispatch() {
  static const bool on = [] {
    const char* v = std::getenv("TRINE_LOG");
    return v && std::strstr(v, "dispatch") != nullptr;
  }();
  return on;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof(buf), "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f s", s);
  }
  return buf;
}

namespace {

double bytes_of(const Tensor& t) { return static_cast<double>(dtype_bytes(t.dtype(), t.numel())); }

// A tensor on `device` with no memory, for asking a backend whether it would run a call: `like` as
// it would arrive there. An eager tensor is moved as a contiguous copy; one recorded in a batch (no
// memory yet) is placed with its whole storage, so its view and its storage's size stay.
Tensor phantom(const Tensor& like, Backend& backend, Device device) {
  if (like.storage() && !like.storage()->handle()) {
    auto s = std::make_shared<Storage>(&backend, device, nullptr, like.storage()->bytes());
    return Tensor(std::move(s), like.shape(), like.strides(), like.offset(), like.dtype());
  }
  auto s = std::make_shared<Storage>(&backend, device, nullptr, static_cast<std::size_t>(bytes_of(like)));
  return Tensor(std::move(s), like.shape(), contiguous_strides(like.shape()), 0, like.dtype());
}

bool all_on(std::span<const Tensor> inputs, Device d) {
  for (const auto& t : inputs)
    if (t.defined() && !(t.storage()->device() == d)) return false;
  return true;
}

// The last automatic decisions of this thread, by call signature: a loop calling the same op on
// same-shaped data asks the cost model once. A new profile or opt-in state misses (the key holds
// both).
class DecisionCache {
 public:
  std::optional<Device> find(OpKind op, std::span<const Tensor> inputs, const OpParams& params,
                             const dispatch::Profile* profile, int software) const {
    for (std::size_t i = 0; i < used_; ++i) {
      const auto& e = entries_[i];
      if (e.op == op && e.profile == profile && e.software == software && e.n == inputs.size() && e.params == params &&
          same_inputs(e, inputs))
        return e.device;
    }
    return std::nullopt;
  }
  void add(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const dispatch::Profile* profile,
           int software, Device device) {
    if (inputs.size() > 3) return;
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % entries_.size();
    used_ = std::min(used_ + 1, entries_.size());
    e.op = op;
    e.params = params;
    e.profile = profile;
    e.software = software;
    e.n = inputs.size();
    for (std::size_t i = 0; i < inputs.size(); ++i) e.in[i] = signature(inputs[i]);
    e.device = device;
  }

 private:
  struct Sig {
    bool defined = false;
    Shape shape;
    DType dtype = DType::f32;
    Device device;
    bool contiguous = false;
    friend bool operator==(const Sig&, const Sig&) = default;
  };
  struct Entry {
    OpKind op = OpKind::copy;
    OpParams params;
    const dispatch::Profile* profile = nullptr;
    int software = 0;
    std::size_t n = 0;
    std::array<Sig, 3> in;
    Device device;
  };
  static Sig signature(const Tensor& t) {
    if (!t.defined()) return {};
    return {true, t.shape(), t.dtype(), t.storage()->device(), t.is_contiguous()};
  }
  static bool same_inputs(const Entry& e, std::span<const Tensor> inputs) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!(e.in[i] == signature(inputs[i]))) return false;
    return true;
  }
  std::array<Entry, 8> entries_;
  std::size_t used_ = 0, next_ = 0;
};

thread_local DecisionCache t_decisions;

void log_decision(OpKind op, std::span<const Tensor> inputs, const dispatch::Decision& d) {
  std::string line = std::string("trine dispatch: [") + op_info(op).name + "]";
  for (const auto& t : inputs)
    if (t.defined()) line += " " + t.str();
  line += " -> " + d.device.str() + " (" + d.why + ")";
  for (const auto& c : d.candidates) {
    line += " | " + c.device.str() + ": ";
    if (!c.eligible) {
      line += "not a candidate (" + c.why_not + ")";
    } else {
      line += format_seconds(c.total_s) + " = compute " + format_seconds(c.compute_s) + " + transfers " +
              format_seconds(c.transfer_s);
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

bool runs_on(Backend& backend, Device device, const OpCall& call, std::string* why) {
  // Every storage the call would need there (its output, inputs moved there) must fit one allocation.
  auto fits = [&](const Tensor& t) {
    if (!t.defined() || (t.device() == device && t.storage()->handle())) return true;
    const std::size_t bytes =
        t.storage() && !t.storage()->handle() ? t.storage()->bytes() : static_cast<std::size_t>(bytes_of(t));
    if (backend.fits(device.index, bytes)) return true;
    if (why)
      *why = "a storage of " + std::to_string(bytes) + " bytes is more than " + device.str() +
             " can hold in one allocation";
    return false;
  };
  if (!fits(call.output)) return false;
  for (const auto& t : call.inputs)
    if (!fits(t)) return false;
  OpCall probe;
  probe.op = call.op;
  probe.params = call.params;
  probe.cost = call.cost;
  for (const auto& t : call.inputs) {
    const bool here = t.defined() && t.device() == device && t.storage()->handle();
    probe.inputs.push_back(!t.defined() || here ? t : phantom(t, backend, device));
  }
  probe.output = phantom(call.output, backend, device);
  if (backend.supports(probe)) return true;
  if (why) *why = backend.unsupported_reason(probe);
  return false;
}

bool is_software(Device d) {
  for (const auto& s : backend_slots())
    for (const auto& info : s.devices)
      if (info.device == d) return info.software;
  return false;
}

std::string pin_source(const Placement& p) {
  switch (p.source) {
    case PinSource::automatic: return {};
    case PinSource::input: return "input " + std::to_string(p.input) + " (pinned to " + p.device.str() + ")";
    case PinSource::scope: return "a DeviceScope (" + p.device.str() + ")";
    case PinSource::environment: {
      const char* v = std::getenv("TRINE_DEVICE");
      return std::string("TRINE_DEVICE=") + (v ? v : "");
    }
  }
  return {};
}

std::optional<Device> pinned_by_scope() {
  if (g_scopes.load(std::memory_order_relaxed) != 0 && t_scope) return t_scope;
  const EnvPin& e = env_pin();
  if (!e.error.empty()) throw Error(ErrorCode::invalid_argument, "[dispatch] " + e.error);
  return e.device;
}

dispatch::Decision estimate_call(OpKind op, std::span<const Tensor> inputs, const OpParams& params,
                                 const InferredOutput& out) {
  const dispatch::Profile& profile = dispatch::active_profile();
  const OpCost cost = op_cost(op, inputs, params, out);
  const bool from_host = all_on(inputs, Device::cpu());
  const double out_bytes = static_cast<double>(out.shape.numel()) * static_cast<double>(dtype_size(out.dtype));
  dispatch::Decision d;
  d.device = Device::cpu();
  double best = std::numeric_limits<double>::infinity();
  int eligible = 0;
  for (const auto& slot : backend_slots()) {
    for (const auto& info : slot.devices) {
      dispatch::Candidate c;
      c.device = info.device;
      if (!slot.backend) {
        c.why_not = "backend unavailable: " + slot.reason;
      } else if (!candidate(info)) {
        c.why_not = "software device; opt in with TRINE_ALLOW_SOFTWARE=1";
      } else {
        OpCall call;
        call.op = op;
        call.params = params;
        call.cost = cost;
        call.inputs.assign(inputs.begin(), inputs.end());
        call.output = Tensor(nullptr, out.shape, contiguous_strides(out.shape), 0, out.dtype);
        if (std::string why; !runs_on(*slot.backend, info.device, call, &why)) {
          c.why_not = "its backend does not run this call" + (why.empty() ? "" : ": " + why);
        } else {
          c.eligible = true;
        }
      }
      c.compute_s = dispatch::predict_compute(profile, info.device, op, cost);
      for (const auto& t : inputs)
        if (t.defined()) c.transfer_s += dispatch::predict_transfer(profile, t.device(), info.device, bytes_of(t));
      // Host data in, host data out: the result goes back where the inputs came from.
      if (from_host) c.transfer_s += dispatch::predict_transfer(profile, info.device, Device::cpu(), out_bytes);
      c.total_s = c.compute_s + c.transfer_s;
      if (c.eligible) {
        ++eligible;
        if (c.total_s < best) {
          best = c.total_s;
          d.device = c.device;
        }
      }
      d.candidates.push_back(std::move(c));
    }
  }
  d.why =
      eligible ? "cheapest of " + std::to_string(eligible) + " candidate" + (eligible > 1 ? "s" : "") : "no candidate";
  return d;
}

Placement place_call(OpKind op, std::span<const Tensor> inputs, const OpParams& params, const InferredOutput& out) {
  const char* name = op_info(op).name;
  std::optional<Device> pin;
  std::size_t pin_input = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.pinned()) continue;
    if (!pin) {
      pin = t.device();
      pin_input = i;
    } else if (!(t.device() == *pin)) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("[") + name + "] input " + std::to_string(pin_input) + " is pinned to " + pin->str() +
                      " and input " + std::to_string(i) + " to " + t.device().str() +
                      "; move one with .to(device) (inputs: " + describe_call(inputs) + ")");
    }
  }
  std::optional<Device> scope;
  if (!pin) {
    scope = pinned_by_scope();
  } else {
    try {  // a malformed TRINE_DEVICE concerns only ops it would pin; this one is pinned already
      scope = pinned_by_scope();
    } catch (const Error&) {
    }
  }
  if (pin && scope && !(*pin == *scope)) {
    throw Error(ErrorCode::invalid_argument, std::string("[") + name + "] input " + std::to_string(pin_input) +
                                                 " is pinned to " + pin->str() + " but the calling scope pins " +
                                                 scope->str() + " (" + (t_scope ? "DeviceScope" : "TRINE_DEVICE") +
                                                 "); inputs: " + describe_call(inputs));
  }
  if (pin) return {*pin, true, PinSource::input, pin_input};
  if (scope) return {*scope, true, t_scope && g_scopes.load(std::memory_order_relaxed) ? PinSource::scope : PinSource::environment};

  // Automatic. The common case, one candidate holding every input, needs no estimate.
  if (const auto& only = sole_candidate(); only && !log_dispatch() && all_on(inputs, *only)) return {*only, false};
  const dispatch::Profile* profile = &dispatch::active_profile();
  const int software = g_software.load(std::memory_order_relaxed);
  if (!log_dispatch()) {
    if (auto hit = t_decisions.find(op, inputs, params, profile, software)) return {*hit, false};
  }
  dispatch::Decision d = estimate_call(op, inputs, params, out);
  if (log_dispatch()) log_decision(op, inputs, d);
  bool any = false;
  for (const auto& c : d.candidates) any = any || c.eligible;
  if (!any) {
    std::string why;
    for (const auto& c : d.candidates)
      why.append(" ").append(c.device.str()).append(": ").append(c.why_not).append(";");
    throw Error(ErrorCode::unsupported,
                std::string("[") + name + "] no device runs " + describe_call(inputs) + ":" + why);
  }
  t_decisions.add(op, inputs, params, profile, software, d.device);
  return {d.device, false};
}

}  // namespace detail

DeviceScope::DeviceScope(Device device) : previous_(detail::t_scope) {
  detail::backend_for(device, "DeviceScope");  // an unavailable device fails here, not at the first op
  detail::t_scope = device;
  detail::g_scopes.fetch_add(1, std::memory_order_relaxed);
}
DeviceScope::~DeviceScope() {
  detail::t_scope = previous_;
  detail::g_scopes.fetch_sub(1, std::memory_order_relaxed);
}

namespace dispatch {

void allow_software(bool allow) { detail::g_software.store(allow ? 1 : 0); }

bool software_allowed(Device device) {
  for (const auto& s : detail::backend_slots())
    for (const auto& info : s.devices)
      if (info.device == device) return detail::candidate(info);
  return true;  // not a device of this machine: nothing to opt in to
}

Decision decide(OpKind op, std::span<const Tensor> inputs, const OpParams& params) {
  if (inputs.empty())
    throw Error(ErrorCode::invalid_argument, std::string("[") + op_info(op).name + "] called with no inputs");
  const detail::InferredOutput out = detail::infer_op(op, inputs, params);
  Decision d = detail::estimate_call(op, inputs, params, out);
  const detail::Placement p = detail::place_call(op, inputs, params, out);
  if (p.pinned) {
    d.pinned = true;
    d.device = p.device;
    d.why = "pinned by " + detail::pin_source(p);
  }
  return d;
}

}  // namespace dispatch
}  // namespace trine
