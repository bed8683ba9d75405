# Device build (-DDPTRAIN_DEVICE_BUILD=ON, with scripts/device-build.sh): binaries built on this machine to
# run on the GPU machine, whose image has CUDA 13 (cuBLAS, cuDNN through its Python wheels, a driver) but
# none of Debian's dev libraries (no OpenBLAS, fmt, Boost, MPI, TOML++, CLI11). It builds only
#   dptrain_cuda (cmake/Backends.cmake; static CUDA runtime, shared cuBLAS, cuDNN and NCCL),
#   the CPU kernels as the tests' oracle, with tests/gpu/cblas_reference.cpp standing in for OpenBLAS,
#   the models (models/), the GPU tests (tests/gpu/test_gpu_*.cpp, Boost.Test compiled in) and the
#   benchmarks tests/gpu/bench_gpu_*.cpp (kernels and whole training steps),
# into ${CMAKE_BINARY_DIR}/bin, linked with -static-libstdc++ -static-libgcc and header-only fmt, so that
# each binary needs only glibc (2.36 or newer) plus that machine's libcublas.so.13, libcublasLt.so.13,
# libcudnn.so.9 and (gpu_mra: MRA over NCCL, with lib/comm less its MPI transport, lib/mra and the
# optimizers) libnccl.so.2. The top-level CMakeLists.txt includes it before its find_package calls and stops there:
#   option(DPTRAIN_DEVICE_BUILD "Build only what the GPU machine runs (cmake/Device.cmake)" OFF)
#   if(DPTRAIN_DEVICE_BUILD)
#     include(cmake/Device.cmake)
#     return()
#   endif()
set(DPTRAIN_WITH_CUDA ON CACHE BOOL "Build the CUDA backend (needs nvcc)" FORCE)
find_package(fmt CONFIG REQUIRED)  # fmt::fmt-header-only: no libfmt.so
find_package(Boost 1.74 REQUIRED)  # headers only
find_path(DPTRAIN_CBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread
          /usr/include/x86_64-linux-gnu /usr/include/openblas)
if(NOT DPTRAIN_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "dptrain device build: cblas.h (libopenblas-dev) is needed for the CPU kernels' headers")
endif()
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)

file(GLOB _dp_core_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lib/core/*.cpp)
add_library(dp_core OBJECT ${_dp_core_src})
target_include_directories(dp_core PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_options(dp_core PRIVATE -Wall -Wextra -Wpedantic)
target_compile_definitions(dp_core PUBLIC DPTRAIN_VERSION="${PROJECT_VERSION}")
target_link_libraries(dp_core PUBLIC fmt::fmt-header-only)

file(GLOB _dp_kernels_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/cpu/*.cpp)
add_library(dp_kernels OBJECT ${_dp_kernels_src} ${PROJECT_SOURCE_DIR}/tests/gpu/cblas_reference.cpp)
target_include_directories(dp_kernels PUBLIC ${DPTRAIN_CBLAS_INCLUDE_DIR})
target_compile_options(dp_kernels PRIVATE -Wall -Wextra -Wpedantic -fno-math-errno)
target_link_libraries(dp_kernels PUBLIC dp_core)

# The models: they need only lib/core, the kernel tables and lib/job's plain structs (job.h).
file(GLOB _dp_models_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.cpp)
add_library(dp_models OBJECT ${_dp_models_src})
target_compile_options(dp_models PRIVATE -Wall -Wextra -Wpedantic)
target_link_libraries(dp_models PUBLIC dp_kernels)

include(${CMAKE_CURRENT_LIST_DIR}/Backends.cmake)

# What gpu_mra needs besides the models: the synchronisation over a CollectiveQueue and the optimizers.
file(GLOB _dp_sync_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lib/comm/*.cpp ${PROJECT_SOURCE_DIR}/lib/mra/*.cpp)
list(FILTER _dp_sync_src EXCLUDE REGEX "mpi_communicator\\.cpp$")
add_library(dp_sync OBJECT ${_dp_sync_src} ${PROJECT_SOURCE_DIR}/lib/optim/optimizer.cpp)
target_compile_options(dp_sync PRIVATE -Wall -Wextra -Wpedantic)
target_link_libraries(dp_sync PUBLIC dp_models)

add_library(dp_boost_test OBJECT ${PROJECT_SOURCE_DIR}/tests/gpu/boost_test_static.cpp)
target_link_libraries(dp_boost_test PUBLIC Boost::headers)

enable_testing()
file(GLOB _gpu_tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/gpu/test_gpu_*.cpp
     ${PROJECT_SOURCE_DIR}/tests/gpu/bench_gpu_*.cpp)
foreach(src ${_gpu_tests})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^(test|bench)_gpu_" "" short ${name})
  if(short STREQUAL "mra" AND NOT DPTRAIN_HAVE_NCCL)
    continue()
  endif()
  if(name MATCHES "^bench_")
    set(target gpu_bench_${short})
    add_executable(${target} ${src})
  else()
    set(target gpu_${short})
    add_executable(${target} ${src} $<TARGET_OBJECTS:dp_boost_test>)
    target_link_libraries(${target} PRIVATE Boost::headers)
    add_test(NAME ${target} COMMAND ${target} --color_output=no)
    set_tests_properties(${target} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
  if(short STREQUAL "mra")
    target_link_libraries(${target} PRIVATE dp_sync)
  endif()
  target_link_libraries(${target} PRIVATE dp_models dp_kernels dp_core dptrain_cuda)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc -Wl,--as-needed)
endforeach()
message(STATUS "dptrain: DEVICE BUILD (CUDA kernels, CPU oracle, GPU tests and benchmark only) -> "
               "${CMAKE_BINARY_DIR}/bin")
