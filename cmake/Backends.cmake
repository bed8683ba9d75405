# Optional compute backends. This file is the single switch: it decides whether the CUDA backend is
# compiled and defines DPTRAIN_WITH_CUDA for lib/core/backend.cpp, the only source that branches on it.
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_dptrain_cuda_default ON)
else()
  set(_dptrain_cuda_default OFF)
endif()
option(DPTRAIN_WITH_CUDA "Build the CUDA backend (needs nvcc)" ${_dptrain_cuda_default})

if(DPTRAIN_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # sm_90 code + PTX (H100/H200); "native" fails without a GPU
  endif()
  enable_language(CUDA)
  file(GLOB DPTRAIN_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/cuda/*.cu)
  add_library(dptrain_cuda STATIC ${DPTRAIN_CUDA_SOURCES})
  target_include_directories(dptrain_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  # CMake 3.25 cannot request C++20 for CUDA through CUDA_STANDARD; pass the flag directly.
  set_target_properties(dptrain_cuda PROPERTIES CUDA_STANDARD_REQUIRED OFF CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(dptrain_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
  target_link_libraries(dp_core PUBLIC dptrain_cuda)
  target_compile_definitions(dp_core PUBLIC DPTRAIN_WITH_CUDA=1)
  message(STATUS "dptrain: CUDA backend ON (${CMAKE_CUDA_COMPILER}, arch ${CMAKE_CUDA_ARCHITECTURES})")
else()
  target_compile_definitions(dp_core PUBLIC DPTRAIN_WITH_CUDA=0)
  message(STATUS "dptrain: CUDA backend OFF (CPU only)")
endif()
