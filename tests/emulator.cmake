# The PTX emulator's tests: their own executable, so they build and run without the whole suite.
if(TRINE_CUDA)
  add_executable(trine_emulator_tests catch_main.cpp emulator_tests.cpp emulator_instr_tests.cpp emulator_warp_tests.cpp emulator_checker_tests.cpp emulator_driver_tests.cpp emulator_cli_tests.cpp emulator_throughput.cpp)
  target_include_directories(trine_emulator_tests PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trine_emulator_tests PRIVATE trine trine_ptx_emulator trine_catch)
  target_compile_options(trine_emulator_tests PRIVATE ${TRINE_WARNINGS} -Wno-restrict)
  add_test(NAME emulator COMMAND trine_emulator_tests)
endif()
if(TRINE_CUDA AND TRINE_BUILD_TOOLS)
  # `trine-ptx run` on a broken kernel and its correct twin.
  set(TRINE_PTX_RUN_ARGS --kernel scale --grid 4 --block 256 --arg buf:f32:1000 --arg f32:2 --arg u32:1000)
  add_test(NAME emulator_cli_off_by_one
           COMMAND trine-ptx run ${CMAKE_CURRENT_SOURCE_DIR}/emulator/off_by_one.ptx ${TRINE_PTX_RUN_ARGS})
  set_tests_properties(emulator_cli_off_by_one PROPERTIES WILL_FAIL TRUE)
  add_test(NAME emulator_cli_off_by_one_output
           COMMAND trine-ptx run ${CMAKE_CURRENT_SOURCE_DIR}/emulator/off_by_one.ptx ${TRINE_PTX_RUN_ARGS})
  set_tests_properties(emulator_cli_off_by_one_output PROPERTIES
    PASS_REGULAR_EXPRESSION "Invalid __global__ read of size 4 bytes.*by thread \\(232,0,0\\) in block \\(3,0,0\\).*ERROR SUMMARY: 1 error")
  add_test(NAME emulator_cli_off_by_one_fixed
           COMMAND trine-ptx run ${CMAKE_CURRENT_SOURCE_DIR}/emulator/off_by_one_fixed.ptx ${TRINE_PTX_RUN_ARGS})
  set_tests_properties(emulator_cli_off_by_one_fixed PROPERTIES PASS_REGULAR_EXPRESSION "ERROR SUMMARY: 0 errors")
endif()
