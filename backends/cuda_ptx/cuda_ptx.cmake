# The cuda_ptx backend's emitter, kernel generators and driver loader, appended to libtrine.
# Nothing here needs CUDA headers or libraries: libcuda is opened at run time.
if(TRINE_CUDA)
  file(GLOB TRINE_PTX_KERNEL_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/kernels/*.cpp)
  target_sources(trine PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/ptx/kernel.cpp
    ${CMAKE_CURRENT_LIST_DIR}/ptx/names.cpp
    ${TRINE_PTX_KERNEL_SOURCES})
  target_link_libraries(trine PRIVATE ${CMAKE_DL_LIBS})
endif()

if(TRINE_CUDA AND TRINE_BUILD_TOOLS)
  add_executable(trine-ptx ${PROJECT_SOURCE_DIR}/tools/trine-ptx.cpp)
  target_include_directories(trine-ptx PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trine-ptx PRIVATE trine)
  target_compile_options(trine-ptx PRIVATE ${TRINE_WARNINGS})
  install(TARGETS trine-ptx RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
