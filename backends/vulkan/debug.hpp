// For tests: the Vulkan validation layer's messages (warnings and errors) since the last call,
// which shaders a run dispatched, and a dispatch that can be made to access out of bounds, for the
// GPU-assisted validation test. No Vulkan headers; a build without the backend has no messages,
// no shaders, and refuses the dispatch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trine/tensor.hpp"

namespace trine::vulkan {

std::vector<std::string> take_validation_messages();

// The embedded shaders (backends/vulkan/shaders/*.comp) this process never made a pipeline of,
// on any device: the ones a test run did not dispatch.
std::vector<std::string> shaders_never_dispatched();
// The embedded shaders dispatched so far in this process (pipelines made), by name.
std::vector<std::string> shaders_dispatched();
// How many dispatches of `shader` this process has recorded so far, on any device, by the name the
// op files dispatch ("softmax", "reduce_rows", "binary_b16"; the device's float-controls form of
// it counts): a count before a call and after it says which shaders the call ran, where one shader
// serves several dtypes through its specialization constants. A replayed batch records once.
std::uint64_t dispatches_of(const std::string& shader);

// Test-only, never on an op's path: y[y_off + i] = x[x_off + i] for i < n by the unary shader,
// x and y bound whole, the offsets and n not checked against their sizes: so the shader can be
// made to read or write past the end of its buffers. Runs after all earlier work and waits for
// the result. As for an op's submission, a validation-layer message is Error(internal) with the
// messages (left in the log for take_validation_messages). Under TRINE_VULKAN_VALIDATION=gpu the
// layer skips and reports each access whose offset from the binding's start is past the VkBuffer's
// size (a read gives 0); otherwise such accesses hit whatever memory is there unless
// robustBufferAccess discards them.
// x and y: contiguous f32 at offset 0 on one vulkan device, else Error(invalid_argument);
// Error(unsupported) without the backend.
void copy_at_offsets_for_test(const Tensor& x, std::uint32_t x_off, const Tensor& y, std::uint32_t y_off,
                              std::uint32_t n);

}  // namespace trine::vulkan
