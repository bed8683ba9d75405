# Optional compute backends. This file is the single switch: it decides whether the CUDA backend is
# compiled and defines DPTRAIN_WITH_CUDA for lib/core/backend.cpp, the only source that branches on it.
#
# Linking, and what a machine needs to START dptrain (not only to use a GPU):
#   - the CUDA runtime is linked statically (CMake's default; never add CUDA::cudart as well, that would
#     link a second runtime), so libcudart.so is never needed; without a driver or GPU the binary starts
#     and reports "no usable GPU";
#   - cuBLAS (libcublas.so.13 + libcublasLt.so.13) and cuDNN (libcudnn.so.9) are linked as shared
#     libraries (their static archives are hundreds of MB). Debian's linker works --as-needed, so a binary
#     records them only once it calls code that uses them: today dptrain calls only device discovery and
#     needs neither. Once a model runs CUDA kernels, a binary built with DPTRAIN_WITH_CUDA=ON will NOT
#     START (exit 127, "error while loading shared libraries") on a machine without these libraries, even
#     to train on the CPU. This image and CI have them; elsewhere build with -DDPTRAIN_WITH_CUDA=OFF, or
#     (not done yet) load the CUDA backend with dlopen.
#   - NCCL (libnccl.so.2) is linked when found: lib/comm/nccl/nccl_queue.cu, multi-GPU data parallelism
#     and MRA; without it nccl_unavailable.cpp reports that. Same --as-needed rule (in the device build
#     only gpu_mra needs it; the GPU machine has it in the nvidia-nccl wheel).
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
  find_package(CUDAToolkit REQUIRED)
  set(_dptrain_cuda_hints ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda-13.0/lib /usr/local/cuda/lib64)
  find_library(DPTRAIN_CUDNN_LIBRARY NAMES cudnn HINTS ${_dptrain_cuda_hints})
  find_path(DPTRAIN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda-13.0/include)
  if(NOT DPTRAIN_CUDNN_LIBRARY OR NOT DPTRAIN_CUDNN_INCLUDE_DIR)
    message(FATAL_ERROR "dptrain: the CUDA backend needs cuDNN 9 (libcudnn.so, cudnn.h) and none was found "
                        "next to the CUDA toolkit; set DPTRAIN_CUDNN_LIBRARY and DPTRAIN_CUDNN_INCLUDE_DIR, "
                        "or configure with -DDPTRAIN_WITH_CUDA=OFF")
  endif()

  file(GLOB DPTRAIN_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/cuda/*.cu)
  add_library(dptrain_cuda STATIC ${DPTRAIN_CUDA_SOURCES})
  target_include_directories(dptrain_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  target_include_directories(dptrain_cuda PRIVATE ${DPTRAIN_CUDNN_INCLUDE_DIR})
  # CMake 3.25 cannot request C++20 for CUDA through CUDA_STANDARD; pass the flag directly.
  set_target_properties(dptrain_cuda PROPERTIES CUDA_STANDARD_REQUIRED OFF CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(dptrain_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 -Xcompiler=-Wall,-Wextra>)
  target_link_libraries(dptrain_cuda PUBLIC CUDA::cublas ${DPTRAIN_CUDNN_LIBRARY})

  find_library(DPTRAIN_NCCL_LIBRARY NAMES nccl HINTS ${_dptrain_cuda_hints})
  find_path(DPTRAIN_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda-13.0/include)
  if(DPTRAIN_NCCL_LIBRARY AND DPTRAIN_NCCL_INCLUDE_DIR)
    target_include_directories(dptrain_cuda PRIVATE ${DPTRAIN_NCCL_INCLUDE_DIR})
    target_link_libraries(dptrain_cuda PUBLIC ${DPTRAIN_NCCL_LIBRARY})
    target_compile_definitions(dptrain_cuda PUBLIC DPTRAIN_WITH_NCCL=1)
    target_sources(dptrain_cuda PRIVATE ${PROJECT_SOURCE_DIR}/lib/comm/nccl/nccl_queue.cu)
    set(DPTRAIN_HAVE_NCCL ON)
    set(_dptrain_nccl "NCCL ${DPTRAIN_NCCL_LIBRARY}")
  else()
    set(_dptrain_nccl "no NCCL")
  endif()

  target_link_libraries(dp_core PUBLIC dptrain_cuda)
  target_compile_definitions(dp_core PUBLIC DPTRAIN_WITH_CUDA=1)
  message(STATUS "dptrain: CUDA backend ON (${CMAKE_CUDA_COMPILER}, arch ${CMAKE_CUDA_ARCHITECTURES}; "
                 "cuBLAS, cuDNN ${DPTRAIN_CUDNN_LIBRARY}, ${_dptrain_nccl})")
else()
  target_compile_definitions(dp_core PUBLIC DPTRAIN_WITH_CUDA=0)
  message(STATUS "dptrain: CUDA backend OFF (CPU only)")
endif()

# Without NCCL, make_nccl_queue says so instead (the device build then leaves gpu_mra out).
if(TARGET dp_comm AND NOT DPTRAIN_HAVE_NCCL)
  target_sources(dp_comm PRIVATE ${PROJECT_SOURCE_DIR}/lib/comm/nccl/nccl_unavailable.cpp)
endif()

# oneDNN for the CPU convolutions (kernels/cpu/conv.cpp, the only source that branches on
# DPTRAIN_WITH_ONEDNN): Debian's libdnnl-dev, whose JIT kernels follow the CPU's instruction set. Without
# it the convolutions run the sgemm reference (conv_gemm.cpp).
# (Debian's dnnl-config.cmake insists on OpenCL headers, which the CPU path never uses: find the library.)
find_library(DPTRAIN_DNNL_LIBRARY NAMES dnnl)
find_path(DPTRAIN_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_package(OpenMP QUIET COMPONENTS CXX)
# The device build's binaries may need only libc and CUDA's libraries: the reference runs there.
if(DPTRAIN_DEVICE_BUILD)
  set(DPTRAIN_WITH_ONEDNN OFF)
elseif(DPTRAIN_DNNL_LIBRARY AND DPTRAIN_DNNL_INCLUDE_DIR AND TARGET OpenMP::OpenMP_CXX)
  option(DPTRAIN_WITH_ONEDNN "Run the CPU convolutions through oneDNN" ON)
else()
  option(DPTRAIN_WITH_ONEDNN "Run the CPU convolutions through oneDNN" OFF)
endif()
if(DPTRAIN_WITH_ONEDNN)
  target_include_directories(dp_kernels PRIVATE ${DPTRAIN_DNNL_INCLUDE_DIR})
  target_link_libraries(dp_kernels PUBLIC ${DPTRAIN_DNNL_LIBRARY} OpenMP::OpenMP_CXX)
  target_compile_definitions(dp_kernels PRIVATE DPTRAIN_WITH_ONEDNN=1)
  message(STATUS "dptrain: CPU convolutions through oneDNN (${DPTRAIN_DNNL_LIBRARY})")
else()
  target_compile_definitions(dp_kernels PRIVATE DPTRAIN_WITH_ONEDNN=0)
  message(STATUS "dptrain: CPU convolutions through the sgemm reference (no oneDNN)")
endif()
