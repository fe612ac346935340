# The cuda_ptx backend (emitter, kernel generators, driver loader, the backend itself), appended to
# libtrine; compiled out (-DTRINE_CUDA=OFF), a stub that says so.
# Nothing here needs CUDA headers or libraries: libcuda is opened at run time.
if(TRINE_CUDA)
  file(GLOB TRINE_PTX_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kernels/*.cpp)
  set(TRINE_PTX_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/ptx/kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ptx/names.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver/libcuda_loader.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver/emulator_loader.cpp
    ${CMAKE_CURRENT_LIST_DIR}/driver/check.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda_launch.cpp
    ${TRINE_PTX_KERNEL_SOURCES})
  target_sources(trine PRIVATE ${TRINE_PTX_SOURCES})
  # The generators build names and messages with std::string operator+, on which GCC 12 warns
  # falsely at -O3 (GCC bug 105329), as tests/CMakeLists.txt notes for the tests.
  set_source_files_properties(${TRINE_PTX_SOURCES} PROPERTIES COMPILE_OPTIONS -Wno-restrict)
  target_link_libraries(trine PRIVATE ${CMAKE_DL_LIBS})
else()
  target_sources(trine PRIVATE ${CMAKE_CURRENT_LIST_DIR}/stub.cpp)
endif()

if(TRINE_CUDA AND TRINE_BUILD_TOOLS)
  add_executable(trine-ptx ${PROJECT_SOURCE_DIR}/tools/trine-ptx.cpp)
  target_include_directories(trine-ptx PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trine-ptx PRIVATE trine trine_ptx_emulator)
  set_target_properties(trine-ptx PROPERTIES INSTALL_RPATH "$ORIGIN/${TRINE_BIN_TO_LIB}")
  target_compile_options(trine-ptx PRIVATE ${TRINE_WARNINGS})
  install(TARGETS trine-ptx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
