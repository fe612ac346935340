# The Vulkan backend (included from the top-level CMakeLists.txt after the trine target exists):
# the sources, and the shaders compiled by glslc, checked by spirv-val and embedded as data. When
# the option is off, or the headers or tools are missing, the stub links instead and says why.
set(TRINE_VULKAN_DIR ${CMAKE_CURRENT_SOURCE_DIR}/backends/vulkan)
set(TRINE_VULKAN_STUB_REASON "")
if(TRINE_VULKAN)
  find_package(Vulkan QUIET)
  find_program(TRINE_GLSLC glslc)
  find_program(TRINE_SPIRV_VAL spirv-val)
  if(NOT Vulkan_FOUND)
    set(TRINE_VULKAN_STUB_REASON "built without the Vulkan headers and loader (install libvulkan-dev)")
  elseif(NOT TRINE_GLSLC)
    set(TRINE_VULKAN_STUB_REASON "built without glslc to compile its shaders (install glslc)")
  elseif(NOT TRINE_SPIRV_VAL)
    set(TRINE_VULKAN_STUB_REASON "built without spirv-val to check its shaders (install spirv-tools)")
  endif()
else()
  set(TRINE_VULKAN_STUB_REASON "compiled out (configure with -DTRINE_VULKAN=ON)")
endif()

if(TRINE_VULKAN_STUB_REASON)
  message(STATUS "trine: Vulkan backend is a stub: ${TRINE_VULKAN_STUB_REASON}")
  target_sources(trine PRIVATE ${TRINE_VULKAN_DIR}/stub.cpp)
  set_source_files_properties(${TRINE_VULKAN_DIR}/stub.cpp PROPERTIES
    COMPILE_DEFINITIONS "TRINE_VULKAN_STUB_REASON=\"${TRINE_VULKAN_STUB_REASON}\"")
  return()
endif()

file(GLOB TRINE_VULKAN_SHADERS CONFIGURE_DEPENDS ${TRINE_VULKAN_DIR}/shaders/*.comp)
file(GLOB TRINE_VULKAN_SHADER_INCLUDES CONFIGURE_DEPENDS ${TRINE_VULKAN_DIR}/shaders/*.glsl)
set(TRINE_VULKAN_SPV)
foreach(src ${TRINE_VULKAN_SHADERS})
  get_filename_component(name ${src} NAME_WE)
  set(spv ${CMAKE_CURRENT_BINARY_DIR}/shaders/${name}.spv)
  add_custom_command(OUTPUT ${spv}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/shaders
    COMMAND ${TRINE_GLSLC} --target-env=vulkan1.2 -O -Werror -I ${TRINE_VULKAN_DIR}/shaders -o ${spv} ${src}
    COMMAND ${TRINE_SPIRV_VAL} --target-env vulkan1.2 ${spv}
    DEPENDS ${src} ${TRINE_VULKAN_SHADER_INCLUDES}
    COMMENT "glslc + spirv-val: ${name}.comp"
    VERBATIM)
  list(APPEND TRINE_VULKAN_SPV ${spv})
  # The workgroup reductions again with subgroup operations (workgroup_reduce.glsl), for devices
  # that have them: <name>_subgroup.
  if(name MATCHES "^(reduce|softmax|norm)$")
    set(spv_sg ${CMAKE_CURRENT_BINARY_DIR}/shaders/${name}_subgroup.spv)
    add_custom_command(OUTPUT ${spv_sg}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/shaders
      COMMAND ${TRINE_GLSLC} --target-env=vulkan1.2 -O -Werror -DTRINE_SUBGROUP=1 -I ${TRINE_VULKAN_DIR}/shaders -o ${spv_sg} ${src}
      COMMAND ${TRINE_SPIRV_VAL} --target-env vulkan1.2 ${spv_sg}
      DEPENDS ${src} ${TRINE_VULKAN_SHADER_INCLUDES}
      COMMENT "glslc + spirv-val: ${name}.comp with subgroup operations"
      VERBATIM)
    list(APPEND TRINE_VULKAN_SPV ${spv_sg})
  endif()
endforeach()
string(REPLACE ";" "|" TRINE_VULKAN_SPV_ARG "${TRINE_VULKAN_SPV}")
set(TRINE_VULKAN_SHADERS_CPP ${CMAKE_CURRENT_BINARY_DIR}/vulkan_shaders.cpp)
add_custom_command(OUTPUT ${TRINE_VULKAN_SHADERS_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${TRINE_VULKAN_SHADERS_CPP} -DSPV_FILES=${TRINE_VULKAN_SPV_ARG}
          -P ${TRINE_VULKAN_DIR}/embed_shaders.cmake
  DEPENDS ${TRINE_VULKAN_SPV} ${TRINE_VULKAN_DIR}/embed_shaders.cmake
  COMMENT "Embedding the SPIR-V of the Vulkan shaders"
  VERBATIM)

target_sources(trine PRIVATE
  ${TRINE_VULKAN_DIR}/context.cpp
  ${TRINE_VULKAN_DIR}/limits.cpp
  ${TRINE_VULKAN_DIR}/memory.cpp
  ${TRINE_VULKAN_DIR}/pool.cpp
  ${TRINE_VULKAN_DIR}/pipelines.cpp
  ${TRINE_VULKAN_DIR}/recorder.cpp
  ${TRINE_VULKAN_DIR}/completion.cpp
  ${TRINE_VULKAN_DIR}/debug.cpp
  ${TRINE_VULKAN_DIR}/vulkan_backend.cpp
  ${TRINE_VULKAN_DIR}/ops.cpp
  ${TRINE_VULKAN_DIR}/ops_elementwise.cpp
  ${TRINE_VULKAN_DIR}/ops_reduce.cpp
  ${TRINE_VULKAN_DIR}/ops_linalg.cpp
  ${TRINE_VULKAN_DIR}/ops_nn.cpp
  ${TRINE_VULKAN_SHADERS_CPP})
# GCC 12 warns falsely on std::string concatenation at -O3 (GCC bug 105329), as in the tests.
set_source_files_properties(${TRINE_VULKAN_DIR}/context.cpp ${TRINE_VULKAN_DIR}/vulkan_backend.cpp
  ${TRINE_VULKAN_DIR}/recorder.cpp ${TRINE_VULKAN_DIR}/memory.cpp ${TRINE_VULKAN_DIR}/pool.cpp PROPERTIES COMPILE_OPTIONS -Wno-restrict)
# vulkan-hpp's RAII header is about 7 s of every Vulkan source's compile (g++ 12, -O2), so it is
# precompiled once: in a release build these sources took 86 CPU-seconds with it (its own 20
# included), 149 without. The top-level CMakeLists.txt keeps every other source of trine off it.
target_precompile_headers(trine PRIVATE <vulkan/vulkan_raii.hpp>)
# Private: public headers never include Vulkan (tests/public_headers.cmake checks).
target_link_libraries(trine PRIVATE Vulkan::Vulkan)
