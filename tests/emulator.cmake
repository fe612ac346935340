# The PTX emulator's tests: their own executable, so they build and run without the whole suite.
if(TRINE_CUDA)
  add_executable(trine_emulator_tests emulator_tests.cpp emulator_instr_tests.cpp emulator_warp_tests.cpp emulator_checker_tests.cpp emulator_driver_tests.cpp emulator_cli_tests.cpp emulator_throughput.cpp)
  target_include_directories(trine_emulator_tests PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trine_emulator_tests PRIVATE trine Catch2::Catch2)
  target_compile_options(trine_emulator_tests PRIVATE ${TRINE_WARNINGS} -Wno-restrict)
  add_test(NAME emulator COMMAND trine_emulator_tests)
endif()
