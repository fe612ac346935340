// Fills the Driver API table from libcuda.so.1 with dlopen/dlsym (the versioned symbol names of
// driver_api.hpp), and names CUresults.
#include "backends/cuda_ptx/driver/libcuda_loader.hpp"

#include <dlfcn.h>

#include <memory>


namespace trine::cuda {
namespace {

// Resolves one symbol into a table entry; false (and the name in `missing`) when absent.
template <class Fn>
bool bind(void* lib, Fn& entry, const char* symbol, std::string& missing) {
  entry = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!entry && missing.empty()) missing = symbol;
  return entry != nullptr;
}

bool bind_all(void* lib, DriverApi& a, std::string& missing) {
  bool ok = true;
  ok &= bind(lib, a.cuGetErrorName, "cuGetErrorName", missing);
  ok &= bind(lib, a.cuGetErrorString, "cuGetErrorString", missing);
  ok &= bind(lib, a.cuInit, "cuInit", missing);
  ok &= bind(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
  ok &= bind(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
  ok &= bind(lib, a.cuDeviceGet, "cuDeviceGet", missing);
  ok &= bind(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
  ok &= bind(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  ok &= bind(lib, a.cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
  ok &= bind(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  ok &= bind(lib, a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
  ok &= bind(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  ok &= bind(lib, a.cuCtxSynchronize, "cuCtxSynchronize", missing);
  ok &= bind(lib, a.cuModuleLoadDataEx, "cuModuleLoadDataEx", missing);
  ok &= bind(lib, a.cuModuleUnload, "cuModuleUnload", missing);
  ok &= bind(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
  ok &= bind(lib, a.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
  ok &= bind(lib, a.cuMemGetInfo, "cuMemGetInfo_v2", missing);
  ok &= bind(lib, a.cuMemAlloc, "cuMemAlloc_v2", missing);
  ok &= bind(lib, a.cuMemFree, "cuMemFree_v2", missing);
  ok &= bind(lib, a.cuMemAllocHost, "cuMemAllocHost_v2", missing);
  ok &= bind(lib, a.cuMemFreeHost, "cuMemFreeHost", missing);
  ok &= bind(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  ok &= bind(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  ok &= bind(lib, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  ok &= bind(lib, a.cuMemsetD8Async, "cuMemsetD8Async", missing);
  ok &= bind(lib, a.cuStreamCreate, "cuStreamCreate", missing);
  ok &= bind(lib, a.cuStreamDestroy, "cuStreamDestroy_v2", missing);
  ok &= bind(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
  ok &= bind(lib, a.cuStreamQuery, "cuStreamQuery", missing);
  ok &= bind(lib, a.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
  ok &= bind(lib, a.cuEventCreate, "cuEventCreate", missing);
  ok &= bind(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing);
  ok &= bind(lib, a.cuEventRecord, "cuEventRecord", missing);
  ok &= bind(lib, a.cuEventQuery, "cuEventQuery", missing);
  ok &= bind(lib, a.cuEventSynchronize, "cuEventSynchronize", missing);
  ok &= bind(lib, a.cuEventElapsedTime, "cuEventElapsedTime", missing);
  ok &= bind(lib, a.cuLaunchHostFunc, "cuLaunchHostFunc", missing);
  ok &= bind(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
  ok &= bind(lib, a.cuStreamBeginCapture, "cuStreamBeginCapture_v2", missing);
  ok &= bind(lib, a.cuStreamEndCapture, "cuStreamEndCapture", missing);
  ok &= bind(lib, a.cuGraphInstantiate, "cuGraphInstantiateWithFlags", missing);
  ok &= bind(lib, a.cuGraphLaunch, "cuGraphLaunch", missing);
  ok &= bind(lib, a.cuGraphExecDestroy, "cuGraphExecDestroy", missing);
  ok &= bind(lib, a.cuGraphDestroy, "cuGraphDestroy", missing);
  return ok;
}

}  // namespace

DriverProvider load_libcuda(const char* path) {
  DriverProvider p;
  p.name = path;
  // RTLD_LOCAL: libcuda's symbols stay out of the global namespace. The handle is never closed:
  // a table handed out must stay valid for the life of the process.
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    p.reason = std::string("cannot open ") + path + ": " + (why ? why : "unknown dlopen error") +
               " (no NVIDIA driver installed?)";
    return p;
  }
  auto api = std::make_unique<DriverApi>();
  std::string missing;
  if (!bind_all(lib, *api, missing)) {
    p.reason = std::string(path) + " lacks " + missing + " (driver too old?)";
    return p;
  }
  CUresult r = api->cuInit(0);
  if (r != CUDA_SUCCESS) {
    p.reason = std::string("cuInit(0) failed: ") + result_name(api.get(), r) + " (" + std::to_string(r) + ")";
    return p;
  }
  int version = 0;
  if (api->cuDriverGetVersion(&version) == CUDA_SUCCESS) p.name += " (driver " + std::to_string(version) + ")";
  p.api = api.release();  // lives as long as the library it points into
  return p;
}

const DriverProvider& libcuda_provider() {
  static const DriverProvider provider = load_libcuda("libcuda.so.1");
  return provider;
}

const char* result_name(const DriverApi* api, CUresult r) noexcept {
  if (api && api->cuGetErrorName) {
    const char* name = nullptr;
    if (api->cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  }
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_INVALID_SOURCE: return "CUDA_ERROR_INVALID_SOURCE";
    case CUDA_ERROR_FILE_NOT_FOUND: return "CUDA_ERROR_FILE_NOT_FOUND";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case CUDA_ERROR_LAUNCH_TIMEOUT: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case CUDA_ERROR_HARDWARE_STACK_ERROR: return "CUDA_ERROR_HARDWARE_STACK_ERROR";
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case CUDA_ERROR_MISALIGNED_ADDRESS: return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case CUDA_ERROR_INVALID_ADDRESS_SPACE: return "CUDA_ERROR_INVALID_ADDRESS_SPACE";
    case CUDA_ERROR_INVALID_PC: return "CUDA_ERROR_INVALID_PC";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
  }
  return "CUDA_ERROR_(unnamed)";
}

}  // namespace trine::cuda
