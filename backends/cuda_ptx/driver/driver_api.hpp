// The CUDA Driver API as a table of function pointers: the one seam between the cuda_ptx backend
// and whatever executes its work. Two providers fill it: libcuda.so.1 opened with dlopen
// (driver/libcuda_loader.cpp) and the PTX emulator (emulator/), so the backend runs the same code,
// driver calls included, on a GPU and on the CPU.
//
// Our own declarations, ABI-compatible with the toolkit's cuda.h (same handle types, enum values
// and argument lists; the symbol each entry is loaded from is named beside it), so trine builds
// where the CUDA toolkit is absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trine::cuda {

// ---- handles and scalar types (cuda.h spellings) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;  // cuda.h: unsigned long long on 64-bit
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUjit_option = int;
using CUdevice_attribute = int;
using CUstreamCaptureMode = int;
using CUhostFn = void (*)(void* user_data);

// ---- the CUresult values trine names (cuda.h's numbers) ----
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
inline constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_INVALID_SOURCE = 300;
inline constexpr CUresult CUDA_ERROR_FILE_NOT_FOUND = 301;
inline constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
inline constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
inline constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;
inline constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
inline constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
inline constexpr CUresult CUDA_ERROR_INVALID_ADDRESS_SPACE = 717;
inline constexpr CUresult CUDA_ERROR_INVALID_PC = 718;
inline constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
inline constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
inline constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
inline constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// ---- the options and attributes trine uses (cuda.h's numbers) ----
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr CUjit_option CU_JIT_LOG_VERBOSE = 12;

inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_RELAXED = 2;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// ---- the table ----
// Each entry has cuda.h's signature; the comment names the libcuda symbol it is loaded from.
struct DriverApi {
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;    // cuGetErrorName
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;  // cuGetErrorString
  CUresult (*cuInit)(unsigned flags) = nullptr;                    // cuInit
  CUresult (*cuDriverGetVersion)(int*) = nullptr;                  // cuDriverGetVersion
  CUresult (*cuDeviceGetCount)(int*) = nullptr;                    // cuDeviceGetCount
  CUresult (*cuDeviceGet)(CUdevice*, int ordinal) = nullptr;       // cuDeviceGet
  CUresult (*cuDeviceGetName)(char*, int len, CUdevice) = nullptr;  // cuDeviceGetName
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;  // cuDeviceGetAttribute
  CUresult (*cuDeviceTotalMem)(std::size_t*, CUdevice) = nullptr;                  // cuDeviceTotalMem_v2

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;  // cuDevicePrimaryCtxRetain
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;            // cuDevicePrimaryCtxRelease_v2
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;                     // cuCtxSetCurrent
  CUresult (*cuCtxSynchronize)() = nullptr;                             // cuCtxSynchronize

  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void* image, unsigned n_options, CUjit_option* options,
                                 void** values) = nullptr;                          // cuModuleLoadDataEx
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;                                   // cuModuleUnload
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char* name) = nullptr;  // cuModuleGetFunction
  CUresult (*cuFuncSetAttribute)(CUfunction, int attrib, int value) = nullptr;         // cuFuncSetAttribute

  CUresult (*cuMemGetInfo)(std::size_t* free, std::size_t* total) = nullptr;  // cuMemGetInfo_v2
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t) = nullptr;                // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                               // cuMemFree_v2
  CUresult (*cuMemAllocHost)(void**, std::size_t) = nullptr;                  // cuMemAllocHost_v2
  CUresult (*cuMemFreeHost)(void*) = nullptr;                                 // cuMemFreeHost
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, std::size_t, CUstream) = nullptr;  // cuMemcpyHtoDAsync_v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, std::size_t, CUstream) = nullptr;  // cuMemcpyDtoHAsync_v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, std::size_t, CUstream) = nullptr;  // cuMemcpyDtoDAsync_v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, std::size_t, CUstream) = nullptr;  // cuMemsetD8Async

  CUresult (*cuStreamCreate)(CUstream*, unsigned flags) = nullptr;         // cuStreamCreate
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;                         // cuStreamDestroy_v2
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;                     // cuStreamSynchronize
  CUresult (*cuStreamQuery)(CUstream) = nullptr;                           // cuStreamQuery
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned flags) = nullptr;  // cuStreamWaitEvent
  CUresult (*cuEventCreate)(CUevent*, unsigned flags) = nullptr;           // cuEventCreate
  CUresult (*cuEventDestroy)(CUevent) = nullptr;                           // cuEventDestroy_v2
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;                  // cuEventRecord
  CUresult (*cuEventQuery)(CUevent) = nullptr;                             // cuEventQuery
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;                       // cuEventSynchronize
  CUresult (*cuEventElapsedTime)(float* ms, CUevent, CUevent) = nullptr;   // cuEventElapsedTime

  // Runs fn(user_data) on a driver thread once the stream's earlier work is done; later work waits
  // for it to return. It must not call the driver.
  CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn fn, void* user_data) = nullptr;  // cuLaunchHostFunc
  CUresult (*cuLaunchKernel)(CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_bytes, CUstream, void** params,
                             void** extra) = nullptr;  // cuLaunchKernel

  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode) = nullptr;      // cuStreamBeginCapture_v2
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;                   // cuStreamEndCapture
  CUresult (*cuGraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long flags) = nullptr;  // cuGraphInstantiateWithFlags
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;                     // cuGraphLaunch
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;                          // cuGraphExecDestroy
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;                                  // cuGraphDestroy
};

// A provider: a filled table, or none with the reason (shown by trine-info).
struct DriverProvider {
  const DriverApi* api = nullptr;  // null: unavailable
  std::string name;                // "libcuda.so.1 (driver 12040)" or "trine PTX emulator"
  std::string reason;              // why unavailable
  bool emulated = false;
};

// The name of a CUresult ("CUDA_ERROR_ILLEGAL_ADDRESS"), from the provider when it knows it, else
// from our own list; never null.
const char* result_name(const DriverApi* api, CUresult r) noexcept;

}  // namespace trine::cuda
