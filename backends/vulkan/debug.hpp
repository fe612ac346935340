// For tests: the Vulkan validation layer's messages (warnings and errors) since the last call.
// No Vulkan headers; a build without the backend returns none.
#pragma once

#include <string>
#include <vector>

namespace trine::vulkan {

std::vector<std::string> take_validation_messages();

}  // namespace trine::vulkan
