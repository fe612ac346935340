# The cuda_ptx tests: the emitter, every generator through ptxas, the driver loader, and the
# compile-fail checks that state-space and register-type mixing does not compile.
if(TRINE_CUDA)
  add_executable(trine_ptx_tests ${CMAKE_CURRENT_LIST_DIR}/ptx_tests.cpp ${CMAKE_CURRENT_LIST_DIR}/catch_main.cpp)
  target_include_directories(trine_ptx_tests PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trine_ptx_tests PRIVATE trine trine_catch)
  # -Wno-restrict: GCC 12 warns falsely on std::string concatenation at -O3 (GCC bug 105329).
  target_compile_options(trine_ptx_tests PRIVATE ${TRINE_WARNINGS} -Wno-restrict)
  add_test(NAME ptx_emitter COMMAND trine_ptx_tests "[emitter],[generators]")
  add_test(NAME ptx_ptxas COMMAND trine_ptx_tests "[ptxas]")
  add_test(NAME ptx_driver COMMAND trine_ptx_tests "[driver]")
  set_tests_properties(ptx_ptxas PROPERTIES TIMEOUT 180)

  set(ptx_fail_source ${CMAKE_CURRENT_LIST_DIR}/ptx_compile_fail/state_space.cpp)
  foreach(case 0 1 2 3 4 5)
    add_test(NAME ptx_compile_fail_${case}
             COMMAND ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only -DCASE=${case} -I${PROJECT_SOURCE_DIR}
                     -I${PROJECT_SOURCE_DIR}/include ${ptx_fail_source})
    if(NOT case EQUAL 0)
      set_tests_properties(ptx_compile_fail_${case} PROPERTIES WILL_FAIL TRUE)
    endif()
  endforeach()
endif()

if(TRINE_CUDA AND TRINE_BUILD_TOOLS)
  add_test(NAME trine_ptx_list COMMAND trine-ptx --list)
  set_tests_properties(trine_ptx_list PROPERTIES PASS_REGULAR_EXPRESSION "matmul_mma")
  add_test(NAME trine_ptx_print COMMAND trine-ptx attention d64 sm_90)
  set_tests_properties(trine_ptx_print PROPERTIES PASS_REGULAR_EXPRESSION "\\.target sm_90")
endif()
