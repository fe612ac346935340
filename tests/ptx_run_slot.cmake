# trine-ptx run: until the emulator lands it prints that it is not built and exits 2.
execute_process(COMMAND ${TOOL} run RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT rc EQUAL 2 OR NOT err MATCHES "trine-ptx run: not built in this build")
  message(FATAL_ERROR "trine-ptx run: expected exit 2 and the not-built message, got ${rc}: ${out}${err}")
endif()
