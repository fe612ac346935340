// The one wrapper every Vulkan call goes through: a failing call becomes trine::Error(driver_error)
// (out_of_memory for the two out-of-memory results) naming the call and the VkResult.
#pragma once

#include <string>
#include <utility>

#include <vulkan/vulkan_raii.hpp>

#include "trine/error.hpp"

namespace trine::vulkan {

// The C name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY"), from vulkan-hpp's "ErrorOutOfDeviceMemory".
inline std::string vk_result_name(vk::Result result) {
  const std::string cpp = vk::to_string(result);
  std::string c = "VK_";
  for (std::size_t i = 0; i < cpp.size(); ++i) {
    const char ch = cpp[i];
    const bool upper = ch >= 'A' && ch <= 'Z';
    if (upper && i > 0 && !(cpp[i - 1] >= 'A' && cpp[i - 1] <= 'Z')) c += '_';
    c += upper ? ch : static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  }
  return c;
}

// The error for `result` returned by `call` (text of the call as written).
[[noreturn]] inline void vk_fail(const char* call, vk::Result result, const char* detail = nullptr) {
  const bool oom = result == vk::Result::eErrorOutOfDeviceMemory || result == vk::Result::eErrorOutOfHostMemory;
  std::string msg = std::string("[vulkan] ") + call + " failed: " + vk_result_name(result) + " (VkResult " +
                    std::to_string(static_cast<int>(result)) + ")";
  if (detail) msg += std::string(": ") + detail;
  if (result == vk::Result::eErrorDeviceLost) msg += "; the device was lost and every later call on it fails";
  throw Error(oom ? ErrorCode::out_of_memory : ErrorCode::driver_error, msg);
}

// Runs `f` (one Vulkan call through vulkan-hpp, which throws vk::SystemError on failure) and turns
// its failure into trine::Error. vulkan-hpp also throws vk::LogicError for misuse; that is ours.
template <class F>
decltype(auto) vk_call(const char* call, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const vk::SystemError& e) {
    vk_fail(call, static_cast<vk::Result>(e.code().value()), e.what());
  } catch (const vk::LogicError& e) {
    throw Error(ErrorCode::internal, std::string("[vulkan] ") + call + ": " + e.what());
  }
}

}  // namespace trine::vulkan

// TRINE_VK(device.createBuffer(info)): the call's own text names it in the error.
#define TRINE_VK(expr) ::trine::vulkan::vk_call(#expr, [&]() -> decltype(auto) { return expr; })
