// Op calls to generated kernels: the op table's plan for a call (kernels/<family>.cpp), the launch
// through the Driver API table, and what a device keeps between launches.
#include "backends/cuda_ptx/cuda_launch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "backends/cuda_ptx/driver/check.hpp"
#include "backends/cuda_ptx/kernels/plan.hpp"
#include "trine/error.hpp"

namespace trine::cuda {
namespace {

// The launches for a call, or none when no generated kernel serves it or the op is refused.
std::optional<Steps> plan(const detail::OpCall& c, int sm, const Resources& res, bool gathered) {
  const OpKernel* k = kernels::table().ops.find(c.op);
  if (!k) return std::nullopt;
  return k->plan(c, sm, res, gathered);
}

ptx::Target target_for(int sm) {
  ptx::Target best = ptx::Target::sm_75;
  for (ptx::Target t : ptx::all_targets)
    if (ptx::target_sm(t) <= sm) best = t;
  return best;
}

}  // namespace

CUfunction DeviceKernels::function(const DriverApi& api, const kernels::Generator& generator, std::size_t config,
                                   int sm) {
  const ptx::Target target = target_for(sm);
  const std::string_view config_name = generator.configs[config];
  const std::string key =
      std::string(generator.name) + "/" + std::string(config_name) + "/" + std::string(ptx::target_name(target));
  auto it = loaded_.find(key);
  if (it != loaded_.end()) return it->second.function;
  const auto& registered = kernels::generators();
  if (std::find(registered.begin(), registered.end(), &generator) == registered.end()) {
    throw Error(ErrorCode::internal, "[cuda] kernel generator '" + std::string(generator.name) +
                                         "' is launched but no family file registers it (kernels/<family>.cpp)");
  }
  Loaded l;
  l.module = load_module(&api, generator.generate(config, target), key);
  const std::string entry = kernels::kernel_name(generator.name, config_name);
  TRINE_CU(&api, "cuda", cuModuleGetFunction, &l.function, l.module, entry.c_str());
  loaded_.emplace(key, l);
  return l.function;
}

CUdeviceptr DeviceKernels::dot_partials(const DriverApi& api, std::size_t count) {
  if (!dot_partials_) TRINE_CU(&api, "dot", cuMemAlloc, &dot_partials_, count * sizeof(float));
  return dot_partials_;
}

CUdeviceptr DeviceKernels::rope_frequencies(const DriverApi& api, CUstream stream, std::int64_t d, float base) {
  const auto key = std::pair{d, base};
  if (auto it = rope_.find(key); it != rope_.end()) return it->second.device;
  if (rope_.size() >= 64) {
    // Many distinct (D, base): drop the tables once the stream has passed every kernel reading them.
    TRINE_CU(&api, "rope", cuStreamSynchronize, stream);
    for (auto& [k, t] : rope_) api.cuMemFree(t.device);
    rope_.clear();
  }
  Table t;
  t.host.resize(static_cast<std::size_t>(d / 2));
  for (std::int64_t i = 0; i < d / 2; ++i) {
    t.host[static_cast<std::size_t>(i)] =
        std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(d));
  }
  const std::size_t bytes = t.host.size() * sizeof(double);
  TRINE_CU(&api, "rope", cuMemAlloc, &t.device, bytes);
  if (CUresult r = api.cuMemcpyHtoDAsync(t.device, t.host.data(), bytes, stream); r != CUDA_SUCCESS) {
    api.cuMemFree(t.device);
    check_driver(&api, r, "rope", "cuMemcpyHtoDAsync");
  }
  // The map node keeps `host` where the copy reads it until the table is dropped (after a sync).
  return rope_.emplace(key, std::move(t)).first->second.device;
}

CUdeviceptr DeviceKernels::index_check_slot(const DriverApi& api) {
  if (!index_check_slot_) TRINE_CU(&api, "gather", cuMemAlloc, &index_check_slot_, sizeof(std::uint64_t));
  return index_check_slot_;
}

void DeviceKernels::release(const DriverApi& api) noexcept {
  for (auto& [key, l] : loaded_) api.cuModuleUnload(l.module);
  loaded_.clear();
  if (dot_partials_) api.cuMemFree(dot_partials_);
  dot_partials_ = 0;
  if (index_check_slot_) api.cuMemFree(index_check_slot_);
  index_check_slot_ = 0;
  for (auto& [k, t] : rope_) api.cuMemFree(t.device);
  rope_.clear();
}

std::vector<std::size_t> needs_gather(const detail::OpCall& call, int sm) {
  std::vector<std::size_t> out;
  if (!kernels::table().ops.find(call.op) || plan(call, sm, Resources{}, false)) return out;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    if (t.defined() && !t.is_contiguous()) out.push_back(i);
  }
  return out;
}

std::string refusal(const detail::OpCall& call, int sm) {
  (void)sm;
  const auto& ops = kernels::table().ops;
  const OpKernel* k = ops.find(call.op);
  if (!k) return ops.refusal(call.op);
  if (!k->takes_16bit && detail::has_16bit(call))
    return "its cuda kernels read and write f32 only, and the casts that would run it in f32 (backends/widen.hpp) "
           "have no kernel for these tensors; cast to f32 first";
  if (k->limits) {
    if (auto why = k->limits(call)) return *why;
  }
  return "no generated kernel serves this call (sizes over 2^32 or a grid over 65535 blocks in y/z)";
}

bool can_launch(const detail::OpCall& call, int sm) {
  const OpKernel* k = kernels::table().ops.find(call.op);
  if (!k) return false;  // refused
  if (!k->takes_16bit && detail::has_16bit(call)) return false;
  if (plan(call, sm, Resources{}, false)) return true;
  // Strided inputs gathered into contiguous temporaries first (the gather kernel takes any view).
  bool strided = false;
  for (const Tensor& t : call.inputs) strided = strided || (t.defined() && !t.is_contiguous());
  return strided && plan(call, sm, Resources{}, true).has_value();
}

void require_kernels() { kernels::table(); }

std::optional<std::string> index_check_failure(std::uint64_t word, const IndexCheck& check) {
  if (word == index_check_clean) return std::nullopt;
  const auto index = static_cast<std::int32_t>(static_cast<std::uint32_t>(word));
  if (check.describe) return check.describe(index);
  const std::int64_t rows = check.rows;
  return "index " + std::to_string(index) + " at position " + std::to_string(word >> 32) +
         " is outside the table's rows [0, " + std::to_string(rows) + ")";
}

bool checks_on_device(const detail::OpCall& call) {
  if (detail::writes_at(call)) return true;      // its position
  if (detail::attends_valid(call)) return true;  // its keys' count
  const OpKernel* k = kernels::table().ops.find(call.op);
  return k && k->checks_on_device;
}

std::optional<IndexCheck> planned_check(const detail::OpCall& call, int sm) {
  auto steps = plan(call, sm, Resources{}, false);
  return steps ? steps->index_check : std::nullopt;
}

std::optional<IndexCheck> launch(const DriverApi& api, CUstream stream, const DeviceShape& device,
                                 const detail::OpCall& call, DeviceKernels& kernels) {
  const int sm = device.sm;
  const char* name = op_info(call.op).name;
  auto steps = plan(call, sm, Resources{&api, stream, &kernels}, false);
  if (!steps) throw Error(ErrorCode::unsupported, std::string("[") + name + "] no cuda kernel for this call");
  if (steps->zero_output) {
    TRINE_CU(&api, name, cuMemsetD8Async, Args::device_ptr(call.output), 0,
             static_cast<std::size_t>(call.output.numel()) * dtype_size(call.output.dtype()), stream);
  }
  if (steps->index_check) {  // clean (all ones) until the kernel finds a bad index
    TRINE_CU(&api, name, cuMemsetD8Async, steps->index_check->slot, 0xff, sizeof(std::uint64_t), stream);
  }
  for (auto& p : steps->launches) {
    const kernels::Generator& gen = *p.generator;
    kernels::Launch g = gen.geometry(p.config, p.sizes);
    if (gen.resident_grid) {
      // Any grid covers a grid-stride loop's work: cap it at what the device keeps resident (8 CTAs
      // of 256 threads per SM, 2048 threads, the most any target holds).
      g.grid[0] =
          std::min<std::uint32_t>(g.grid[0], static_cast<std::uint32_t>(std::max(1, device.multiprocessors) * 8));
    }
    CUfunction f = kernels.function(api, gen, p.config, sm);
    auto params = p.args.pointers();
    TRINE_CU(&api, name, cuLaunchKernel, f, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
             g.dynamic_shared_bytes, stream, params.data(), nullptr);
  }
  return steps->index_check;
}

}  // namespace trine::cuda
