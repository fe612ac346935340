# The PTX emulator (backends/cuda_ptx/emulator): its sources join the trine library when the
# cuda_ptx backend is built (`trine-ptx run` runs any PTX file through it from the command line).
if(TRINE_CUDA)
  set(TRINE_EMULATOR_DIR ${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda_ptx/emulator)
  target_sources(trine PRIVATE
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
    ${TRINE_EMULATOR_DIR}/run_cli.cpp)
endif()
