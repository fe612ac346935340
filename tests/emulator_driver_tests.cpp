// The emulator's Driver API provider end to end, through the function table only: memory, copies,
// module load (with the JIT error log), launch, events, stream capture and graph replay, and the
// sticky error a failed launch leaves until the context is released.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda_ptx/emulator/driver_provider.hpp"

using namespace trine::cuda;

namespace {

const char* kScale = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 .ptr .global .align 8 x, .param .f32 s, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [x];
  ld.param.f32 %f1, [s];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f2, [%rd3];
  mul.f32 %f3, %f2, %f1;
  st.global.f32 [%rd3], %f3;
DONE:
  ret;
}
)";

#define DRV(call) REQUIRE((call) == CUDA_SUCCESS)

}  // namespace

TEST_CASE("emulator provider: device, memory, module, launch, events, graphs", "[emulator][driver]") {
  const DriverProvider p = emu::emulator_provider();
  REQUIRE(p.api);
  CHECK(p.emulated);
  CHECK(p.name.find("emulat") != std::string::npos);
  const DriverApi& d = *p.api;
  DRV(d.cuInit(0));
  int count = 0, major = 0, minor = 0;
  DRV(d.cuDeviceGetCount(&count));
  CHECK(count == 1);
  CUdevice dev;
  DRV(d.cuDeviceGet(&dev, 0));
  char name[128];
  DRV(d.cuDeviceGetName(name, sizeof name, dev));
  CHECK(std::string(name).find("emulated") != std::string::npos);
  DRV(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  DRV(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK(major * 10 + minor == 80);
  CUcontext ctx;
  DRV(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  DRV(d.cuCtxSetCurrent(ctx));

  // a module that does not parse: the error log names the line
  char log[256] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, reinterpret_cast<void*>(std::uintptr_t{sizeof log})};
  CUmodule bad;
  CHECK(d.cuModuleLoadDataEx(&bad, ".version 8.0\n.target sm_80\n.visible .entry k()\n{\n  wibble;\n}\n", 2, opts, vals) ==
        CUDA_ERROR_NOT_SUPPORTED);
  CHECK(std::string(log).find("line 5") != std::string::npos);

  CUmodule mod;
  DRV(d.cuModuleLoadDataEx(&mod, kScale, 0, nullptr, nullptr));
  CUfunction fn;
  DRV(d.cuModuleGetFunction(&fn, mod, "scale"));
  CUfunction missing;
  CHECK(d.cuModuleGetFunction(&missing, mod, "nope") == CUDA_ERROR_NOT_FOUND);

  const unsigned n = 1000;
  std::vector<float> host(n), back(n);
  for (unsigned i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  CUdeviceptr x;
  DRV(d.cuMemAlloc(&x, n * sizeof(float)));
  CUstream s;
  DRV(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  DRV(d.cuEventCreate(&e0, 0));
  DRV(d.cuEventCreate(&e1, 0));
  DRV(d.cuMemcpyHtoDAsync(x, host.data(), n * sizeof(float), s));
  DRV(d.cuEventRecord(e0, s));
  float scale = 2.0f;
  unsigned count_arg = n;
  void* params[] = {&x, &scale, &count_arg};
  DRV(d.cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, nullptr));
  DRV(d.cuEventRecord(e1, s));
  DRV(d.cuMemcpyDtoHAsync(back.data(), x, n * sizeof(float), s));
  DRV(d.cuStreamSynchronize(s));
  CHECK(d.cuStreamQuery(s) == CUDA_SUCCESS);
  CHECK(d.cuEventQuery(e1) == CUDA_SUCCESS);
  float ms = -1;
  DRV(d.cuEventElapsedTime(&ms, e0, e1));
  CHECK(ms >= 0);
  for (unsigned i = 0; i < n; ++i) REQUIRE(back[i] == 2.0f * static_cast<float>(i));

  // capture: scale by 3, then copy back; replaying the graph twice scales by 9
  DRV(d.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  scale = 3.0f;
  DRV(d.cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, nullptr));
  DRV(d.cuMemcpyDtoHAsync(back.data(), x, n * sizeof(float), s));
  CUgraph g;
  DRV(d.cuStreamEndCapture(s, &g));
  scale = 100.0f;  // parameters were taken at capture time
  DRV(d.cuMemcpyDtoHAsync(back.data(), x, n * sizeof(float), s));
  DRV(d.cuStreamSynchronize(s));
  CHECK(back[5] == 10.0f);  // nothing ran during capture
  CUgraphExec exec;
  DRV(d.cuGraphInstantiate(&exec, g, 0));
  DRV(d.cuGraphLaunch(exec, s));
  DRV(d.cuGraphLaunch(exec, s));
  DRV(d.cuStreamSynchronize(s));
  for (unsigned i = 0; i < n; ++i) REQUIRE(back[i] == 18.0f * static_cast<float>(i));
  DRV(d.cuGraphExecDestroy(exec));
  DRV(d.cuGraphDestroy(g));

  // an out-of-bounds launch: queued like any launch, it fails on the stream with the checker's
  // report, and the error is sticky from then on
  unsigned too_many = n + 1;
  void* bad_params[] = {&x, &scale, &too_many};
  // (the launch call itself may already see the error if the worker got there first)
  const CUresult queued = d.cuLaunchKernel(fn, (n + 128) / 128, 1, 1, 128, 1, 1, 0, s, bad_params, nullptr);
  CHECK((queued == CUDA_SUCCESS || queued == CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(d.cuStreamSynchronize(s) == CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string report = emu::last_report();
  CHECK(report.find("Invalid __global__ read of size 4 bytes") != std::string::npos);
  CHECK(report.find("[scale]") != std::string::npos);
  CHECK(d.cuStreamQuery(s) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr y;
  CHECK(d.cuMemAlloc(&y, 16) == CUDA_ERROR_ILLEGAL_ADDRESS);
  const char* err_name = nullptr;
  DRV(d.cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &err_name));
  CHECK(std::string(err_name) == "CUDA_ERROR_ILLEGAL_ADDRESS");

  // releasing the primary context resets it; a new one works again
  DRV(d.cuDevicePrimaryCtxRelease(dev));
  DRV(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  DRV(d.cuMemAlloc(&y, 16));
  DRV(d.cuMemFree(y));
  DRV(d.cuEventDestroy(e0));
  DRV(d.cuEventDestroy(e1));
  DRV(d.cuStreamDestroy(s));
  DRV(d.cuDevicePrimaryCtxRelease(dev));
}
