// Where trine keeps files between runs (the Vulkan pipeline cache, the dispatcher's profile).
#pragma once

#include <filesystem>

namespace trine::detail {

// $XDG_CACHE_HOME/trine, else $HOME/.cache/trine; empty when neither variable is set.
std::filesystem::path cache_dir();

}  // namespace trine::detail
