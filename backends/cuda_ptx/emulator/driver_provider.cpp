// The emulator's Driver API entries for the device, context, memory, modules and launches; streams,
// events and graphs are in driver_streams.cpp. Errors follow cuda.h's codes, and a failed launch
// leaves the sticky error CUDA does until the primary context is released.
#include <cstdlib>
#include <cstring>

#include "backends/cuda_ptx/emulator/driver_state.hpp"
#include "backends/cuda_ptx/emulator/parser.hpp"

namespace trine::cuda::emu {
namespace {

constexpr const char* kDeviceName = "trine PTX emulator (emulated sm_80)";

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult get_error_name(CUresult r, const char** out) {
  for (const auto& e : kErrors)
    if (e.code == r) return *out = e.name, CUDA_SUCCESS;
  *out = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult get_error_string(CUresult r, const char** out) {
  for (const auto& e : kErrors)
    if (e.code == r) return *out = e.text, CUDA_SUCCESS;
  *out = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// The gate every call after cuInit goes through: not initialised, or a sticky launch error.
#define EMU_ENTER()                                             \
  DriverState& st = state();                                    \
  std::lock_guard lock(st.mu);                                  \
  if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;       \
  if (st.sticky != CUDA_SUCCESS) return st.sticky

CUresult init(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  DriverState& st = state();
  std::lock_guard lock(st.mu);
  st.initialized = true;
  return CUDA_SUCCESS;
}
CUresult driver_version(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 12000;
  return CUDA_SUCCESS;
}
CUresult device_count(int* n) {
  EMU_ENTER();
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult device_get(CUdevice* d, int ordinal) {
  EMU_ENTER();
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult device_name(char* name, int len, CUdevice d) {
  EMU_ENTER();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::strncpy(name, kDeviceName, static_cast<std::size_t>(len) - 1);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}
CUresult device_attribute(int* v, CUdevice_attribute a, CUdevice d) {
  EMU_ENTER();
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 108; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 8; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 163 * 1024; break;
    case 2: case 3: case 4: *v = a == 4 ? 64 : 1024; break;  // max block dim x, y, z
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult device_total_mem(std::size_t* bytes, CUdevice d) {
  EMU_ENTER();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

CUresult ctx_retain(CUcontext* ctx, CUdevice d) {
  EMU_ENTER();
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  ++st.context_refs;
  *ctx = reinterpret_cast<CUcontext>(&st);
  return CUDA_SUCCESS;
}
// Releasing the last reference destroys the context: its memory, modules and the sticky error.
CUresult ctx_release(CUdevice d) {
  DriverState& st = state();
  drain_all_streams();  // the context's memory may still be in use by queued work
  std::lock_guard lock(st.mu);
  if (!st.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (st.context_refs > 0 && --st.context_refs == 0) {
    for (auto& [base, block] : st.blocks) st.allocations.remove(base);
    st.blocks.clear();
    st.allocated = 0;
    for (auto* f : st.functions) delete f;
    for (auto* m : st.modules) delete m;
    st.functions.clear();
    st.modules.clear();
    st.sticky = CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}
CUresult ctx_set_current(CUcontext c) {
  EMU_ENTER();
  return (c == nullptr || c == reinterpret_cast<CUcontext>(&st)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult ctx_synchronize() {
  {
    EMU_ENTER();
  }
  drain_all_streams();
  std::lock_guard lock(state().mu);
  return state().sticky;
}

// The sticky error an earlier operation left (later ones are not run, as on a GPU), or success.
CUresult sticky_now(DriverState& st) {
  std::lock_guard lock(st.mu);
  return st.sticky;
}

CUresult module_load(CUmodule* out, const void* image, unsigned n, CUjit_option* options, void** values) {
  EMU_ENTER();
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  char* log = nullptr;
  std::size_t log_size = 0;
  int size_slot = -1;
  for (unsigned i = 0; i < n && options && values; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) log = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      log_size = reinterpret_cast<std::uintptr_t>(values[i]);
      size_slot = static_cast<int>(i);
    }
  }
  auto m = std::make_unique<EmuModule>();
  try {
    m->module = load_ptx(static_cast<const char*>(image));
  } catch (const PtxError& e) {
    const std::string msg = std::string("ptx emulator: ") + e.what();
    if (log && log_size > 0) {
      const std::size_t k = std::min(log_size - 1, msg.size());
      std::memcpy(log, msg.data(), k);
      log[k] = 0;
      values[size_slot] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(k + 1));
    }
    st.last_report = msg;
    return e.code();
  }
  *out = reinterpret_cast<CUmodule>(m.get());
  st.modules.insert(m.release());
  return CUDA_SUCCESS;
}
CUresult module_unload(CUmodule h) {
  EMU_ENTER();
  auto* m = reinterpret_cast<EmuModule*>(h);
  if (!st.modules.erase(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto it = st.functions.begin(); it != st.functions.end();)
    if ((*it)->module == m) delete *it, it = st.functions.erase(it);
    else ++it;
  delete m;
  return CUDA_SUCCESS;
}
CUresult module_function(CUfunction* out, CUmodule h, const char* name) {
  EMU_ENTER();
  auto* m = reinterpret_cast<EmuModule*>(h);
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!st.modules.count(m)) return CUDA_ERROR_INVALID_HANDLE;
  const Kernel* k = m->module.find(name);
  if (!k) return CUDA_ERROR_NOT_FOUND;
  auto* f = new EmuFunction{m, k};
  st.functions.insert(f);
  *out = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}
CUresult func_set_attribute(CUfunction h, int attrib, int value) {
  EMU_ENTER();
  auto* f = reinterpret_cast<EmuFunction*>(h);
  if (!st.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 || static_cast<std::uint32_t>(value) + f->kernel->dynamic_offset > 163u * 1024) return CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult mem_info(std::size_t* free_bytes, std::size_t* total) {
  EMU_ENTER();
  if (free_bytes) *free_bytes = kTotalMemory - st.allocated;
  if (total) *total = kTotalMemory;
  return CUDA_SUCCESS;
}
CUresult mem_alloc(CUdeviceptr* p, std::size_t bytes) {
  EMU_ENTER();
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (st.allocated + bytes > kTotalMemory) return CUDA_ERROR_OUT_OF_MEMORY;
  // 256-byte aligned like cudaMalloc; the allocation table holds exactly the requested size so
  // the checker reports a read one past the end
  std::unique_ptr<std::uint8_t[]> block(new (std::nothrow) std::uint8_t[bytes + 256]);
  if (!block) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto raw = reinterpret_cast<std::uint64_t>(block.get());
  const std::uint64_t base = (raw + 255) & ~std::uint64_t{255};
  std::memset(reinterpret_cast<void*>(base), 0, bytes);
  st.allocations.add(base, bytes);
  st.blocks[base] = std::move(block);
  st.allocated += bytes;
  *p = base;
  return CUDA_SUCCESS;
}
// cuMemFree, cuMemAllocHost and cuMemFreeHost synchronize implicitly on a real driver (the CUDA
// programming guide's list): they wait for the device's queued work, a host function blocked on the
// caller's own progress included. The emulator waits the same way, so a deadlock that a real GPU
// would hit shows here too.
CUresult mem_free(CUdeviceptr p) {
  drain_all_streams();
  EMU_ENTER();
  if (p == 0) return CUDA_SUCCESS;
  const auto it = st.blocks.find(p);
  if (it == st.blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  st.allocated -= st.allocations.size_of(p);
  st.allocations.remove(p);
  st.blocks.erase(it);
  return CUDA_SUCCESS;
}
CUresult mem_alloc_host(void** p, std::size_t bytes) {
  drain_all_streams();
  EMU_ENTER();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  st.host_blocks.emplace(*p, bytes);
  return CUDA_SUCCESS;
}
CUresult mem_free_host(void* p) {
  drain_all_streams();
  EMU_ENTER();
  if (!st.host_blocks.erase(p)) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}

bool device_range(DriverState& st, CUdeviceptr p, std::size_t n) { return n == 0 || st.allocations.contains(p, n); }

// Whether [p, p + n) lies in one page-locked block of cuMemAllocHost.
bool pinned_range(const DriverState& st, const void* p, std::size_t n) {
  auto it = st.host_blocks.upper_bound(p);
  if (it == st.host_blocks.begin()) return false;
  --it;
  const auto* base = static_cast<const std::uint8_t*>(it->first);
  const auto* at = static_cast<const std::uint8_t*>(p);
  return at >= base && static_cast<std::size_t>(at - base) <= it->second && n <= it->second - static_cast<std::size_t>(at - base);
}

CUresult memcpy_htod(CUdeviceptr dst, const void* src, std::size_t n, CUstream s) {
  EMU_ENTER();
  if (!device_range(st, dst, n) || (!src && n)) return CUDA_ERROR_INVALID_VALUE;
  // From pageable memory the driver may stage the source into its own page-locked buffer during
  // the call, before the stream's earlier work has run (CUDA's API synchronization notes). The
  // emulator always does, so that code relying on the copy reading the source later fails here as
  // on a GPU. Page-locked sources are read when the stream reaches the copy. Stream capture keeps
  // the pointer (a graph's memcpy node reads it at each launch).
  EmuStream* es = s ? find_stream(s) : nullptr;
  if (n && !pinned_range(st, src, n) && !(es && es->capturing)) {
    auto copy = std::make_shared<std::vector<std::uint8_t>>(static_cast<const std::uint8_t*>(src),
                                                            static_cast<const std::uint8_t*>(src) + n);
    return submit(s, [=, &st] {
      if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
      std::memcpy(reinterpret_cast<void*>(dst), copy->data(), n);
      return CUDA_SUCCESS;
    });
  }
  return submit(s, [=, &st] {
    if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
    std::memcpy(reinterpret_cast<void*>(dst), src, n);
    return CUDA_SUCCESS;
  });
}
CUresult memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t n, CUstream s) {
  EMU_ENTER();
  if (!device_range(st, src, n) || (!dst && n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=, &st] {
    if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
    std::memcpy(dst, reinterpret_cast<const void*>(src), n);
    return CUDA_SUCCESS;
  });
}
CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, std::size_t n, CUstream s) {
  EMU_ENTER();
  if (!device_range(st, dst, n) || !device_range(st, src, n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=, &st] {
    if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
    return CUDA_SUCCESS;
  });
}
CUresult memset_d8(CUdeviceptr dst, unsigned char v, std::size_t n, CUstream s) {
  EMU_ENTER();
  if (!device_range(st, dst, n)) return CUDA_ERROR_INVALID_VALUE;
  return submit(s, [=, &st] {
    if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
    std::memset(reinterpret_cast<void*>(dst), v, n);
    return CUDA_SUCCESS;
  });
}

CUresult launch(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared_bytes, CUstream s, void** params, void** extra) {
  EMU_ENTER();
  auto* f = reinterpret_cast<EmuFunction*>(h);
  if (!st.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (extra) return CUDA_ERROR_NOT_SUPPORTED;
  if (!params && !f->kernel->params.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 || gz > 65535 || bz > 64 ||
      std::uint64_t{bx} * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared_bytes > static_cast<unsigned>(f->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
  // parameters are copied now, as cuLaunchKernel does, so callers may reuse their storage
  auto packed = std::make_shared<std::vector<std::uint8_t>>(pack_params(*f->kernel, params));
  const Kernel* kernel = f->kernel;
  const Module* module = &f->module->module;
  // The checker options and CTA threads in force when the launch is issued.
  const CheckOptions check = st.check;
  const int threads = st.threads;
  return submit(s, [=, &st] {
    if (const CUresult r = sticky_now(st); r != CUDA_SUCCESS) return r;
    LaunchConfig c;
    c.grid[0] = gx, c.grid[1] = gy, c.grid[2] = gz;
    c.block[0] = bx, c.block[1] = by, c.block[2] = bz;
    c.dynamic_shared = shared_bytes;
    c.params = packed->data();
    c.check = check;
    c.allocations = &st.allocations;
    c.threads = threads;
    const LaunchResult r = launch_kernel(*module, *kernel, c);
    if (r.result != CUDA_SUCCESS) {
      std::lock_guard lock(st.mu);
      st.last_report = "[" + kernel->name + "] " + r.report;
      // Run on a stream's worker, every failure must be sticky to be seen at all.
      st.sticky = r.result;
    }
    return r.result;
  });
}

DriverApi make_api() {
  DriverApi a;
  a.cuGetErrorName = get_error_name;
  a.cuGetErrorString = get_error_string;
  a.cuInit = init;
  a.cuDriverGetVersion = driver_version;
  a.cuDeviceGetCount = device_count;
  a.cuDeviceGet = device_get;
  a.cuDeviceGetName = device_name;
  a.cuDeviceGetAttribute = device_attribute;
  a.cuDeviceTotalMem = device_total_mem;
  a.cuDevicePrimaryCtxRetain = ctx_retain;
  a.cuDevicePrimaryCtxRelease = ctx_release;
  a.cuCtxSetCurrent = ctx_set_current;
  a.cuCtxSynchronize = ctx_synchronize;
  a.cuModuleLoadDataEx = module_load;
  a.cuModuleUnload = module_unload;
  a.cuModuleGetFunction = module_function;
  a.cuFuncSetAttribute = func_set_attribute;
  a.cuMemGetInfo = mem_info;
  a.cuMemAlloc = mem_alloc;
  a.cuMemFree = mem_free;
  a.cuMemAllocHost = mem_alloc_host;
  a.cuMemFreeHost = mem_free_host;
  a.cuMemcpyHtoDAsync = memcpy_htod;
  a.cuMemcpyDtoHAsync = memcpy_dtoh;
  a.cuMemcpyDtoDAsync = memcpy_dtod;
  a.cuMemsetD8Async = memset_d8;
  a.cuLaunchKernel = launch;
  fill_stream_entries(a);
  return a;
}

}  // namespace

DriverState& state() {
  static DriverState* s = [] {
    auto* d = new DriverState;  // never destroyed: entries may run during static destruction
    if (const char* c = std::getenv("TRINE_EMU_CHECK"); c && std::string(c) == "0") d->check.enabled = false;
    if (const char* t = std::getenv("TRINE_EMU_THREADS"); t && std::atoi(t) > 0) d->threads = std::atoi(t);
    return d;
  }();
  return *s;
}

DriverProvider emulator_provider() {
  static const DriverApi api = make_api();
  DriverProvider p;
  p.api = &api;
  p.name = kDeviceName;
  p.emulated = true;
  return p;
}

std::string last_report() {
  std::lock_guard lock(state().mu);
  return state().last_report;
}
void set_check_options(const CheckOptions& options) {
  std::lock_guard lock(state().mu);
  state().check = options;
}
void set_cta_threads(int threads) {
  std::lock_guard lock(state().mu);
  state().threads = std::max(1, threads);
}

}  // namespace trine::cuda::emu
