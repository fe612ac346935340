# Checks that libtrine holds none of the PTX emulator: its code lives in libtrine_ptx_emulator,
# which libtrine opens only when TRINE_CUDA_EMULATOR=1 asks for it (driver/emulator_loader.cpp).
# A source of backends/cuda_ptx/emulator/ linked into libtrine would define trine::cuda::emu::*.
execute_process(COMMAND ${NM} --defined-only --dynamic --demangle ${LIBTRINE} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIBTRINE}")
endif()
string(REGEX MATCHALL "[^\n]*trine::cuda::emu::[^\n]*" found "${out}")
if(found)
  list(LENGTH found n)
  list(SUBLIST found 0 5 shown)
  string(REPLACE ";" "\n" shown "${shown}")
  message(FATAL_ERROR "${LIBTRINE} defines ${n} symbols of the emulator (trine::cuda::emu), e.g.:\n${shown}")
endif()
execute_process(COMMAND ${NM} --defined-only --dynamic --demangle ${EMULATOR} OUTPUT_VARIABLE emu RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT emu MATCHES "trine_ptx_emulator_provider")
  message(FATAL_ERROR "${EMULATOR} does not export trine_ptx_emulator_provider")
endif()
message(STATUS "libtrine holds no emulator code; ${EMULATOR} exports its provider")
