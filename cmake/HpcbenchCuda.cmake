# Whether to compile the project's own CUDA kernels (lib/kernels).
#   HPCBENCH_CUDA_KERNELS=AUTO (default): when LibTorch is a CUDA build and nvcc
#     is found; ON: the same, but an error when either is missing; OFF: never
#     (the ATen composites alone).
# A CUDA LibTorch's CMake config already enables the CUDA language (it needs
# nvcc); elsewhere check_language looks for one, with /usr/local/cuda as the
# usual place when it is not on the PATH.
set(HPCBENCH_CUDA_KERNELS AUTO CACHE STRING "Build the fused CUDA kernels: AUTO, ON or OFF")
set_property(CACHE HPCBENCH_CUDA_KERNELS PROPERTY STRINGS AUTO ON OFF)
# A100 and H100, the GPUs this benchmark runs on (sm_80 code also runs on the other
# 8.x GPUs, sm_90's PTX is compiled for later ones); older GPUs run the composites.
set(HPCBENCH_CUDA_ARCHS "80;90" CACHE STRING "GPU architectures the fused kernels are compiled for")

set(HPCBENCH_CUDA_KERNELS_ON OFF)
if(NOT HPCBENCH_CUDA_KERNELS STREQUAL "OFF")
  set(_why "")
  if(NOT HPCBENCH_TORCH_CUDA)
    set(_why "LibTorch is not a CUDA build")
  else()
    if(NOT CMAKE_CUDA_COMPILER_LOADED)
      include(CheckLanguage)
      if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
        set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
      endif()
      check_language(CUDA)
      if(CMAKE_CUDA_COMPILER)
        enable_language(CUDA)
      endif()
    endif()
    if(NOT CMAKE_CUDA_COMPILER_LOADED)
      set(_why "no CUDA compiler (nvcc) was found")
    endif()
  endif()
  if(_why STREQUAL "")
    find_package(CUDAToolkit REQUIRED)
    set(HPCBENCH_CUDA_KERNELS_ON ON)
    if(HPCBENCH_CCACHE)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${HPCBENCH_CCACHE})
    endif()
    message(STATUS "hpcbench: fused CUDA kernels for ${HPCBENCH_CUDA_ARCHS} (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
  elseif(HPCBENCH_CUDA_KERNELS STREQUAL "ON")
    message(FATAL_ERROR "HPCBENCH_CUDA_KERNELS=ON: ${_why}")
  else()
    message(STATUS "hpcbench: no fused CUDA kernels (${_why}); the ATen composites only")
  endif()
endif()
