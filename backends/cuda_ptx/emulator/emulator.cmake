# The PTX emulator (backends/cuda_ptx/emulator) as a library of its own, libtrine_ptx_emulator:
# libtrine opens it at run time (driver/emulator_loader.cpp) only when TRINE_CUDA_EMULATOR=1 asks
# for the emulated device, so what a user ships is libtrine alone; trine-ptx (`trine-ptx run`) and
# the emulator's own tests link it directly. It is always a shared library, installed beside
# libtrine, where the loader looks first.
if(TRINE_CUDA)
  set(TRINE_EMULATOR_DIR ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda_ptx/emulator)
  add_library(trine_ptx_emulator SHARED
    ${TRINE_EMULATOR_DIR}/parser.cpp
    ${TRINE_EMULATOR_DIR}/decoder.cpp
    ${TRINE_EMULATOR_DIR}/cta.cpp
    ${TRINE_EMULATOR_DIR}/exec_int.cpp
    ${TRINE_EMULATOR_DIR}/exec_float.cpp
    ${TRINE_EMULATOR_DIR}/exec_cvt.cpp
    ${TRINE_EMULATOR_DIR}/exec_mem.cpp
    ${TRINE_EMULATOR_DIR}/exec_warp.cpp
    ${TRINE_EMULATOR_DIR}/checker.cpp
    ${TRINE_EMULATOR_DIR}/driver_provider.cpp
    ${TRINE_EMULATOR_DIR}/driver_streams.cpp
    ${TRINE_EMULATOR_DIR}/run_cli.cpp
    ${TRINE_EMULATOR_DIR}/entry.cpp)
  target_include_directories(trine_ptx_emulator PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                                                        ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(trine_ptx_emulator PRIVATE ${TRINE_WARNINGS})
  target_compile_features(trine_ptx_emulator PUBLIC cxx_std_20)
  # It uses libtrine's Driver API helpers (result names) and its threads.
  target_link_libraries(trine_ptx_emulator PUBLIC trine Threads::Threads)
  set_target_properties(trine_ptx_emulator PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                                                      INSTALL_RPATH "$ORIGIN")
  target_compile_definitions(trine PRIVATE TRINE_EMULATOR_SOVERSION="${PROJECT_VERSION_MAJOR}")
  install(TARGETS trine_ptx_emulator LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
