# Third-party libraries. Debian's packages (or any installed CMake package)
# are used when present; elsewhere FetchContent builds them from source.
include(FetchContent)

# --- LibTorch -------------------------------------------------------------
# Either the torch wheel (tools/setup.sh passes torch.utils.cmake_prefix_path)
# or an official LibTorch unpacked somewhere and named in CMAKE_PREFIX_PATH.
#
# The PyPI wheel of torch 2.11 is built for CUDA 13.0, and its TorchConfig
# insists on a CUDA toolkit (nvcc) being found; /usr/local/cuda (13.0) serves.
# See README "Building against LibTorch" for machines without one.
# We compile no CUDA kernels of our own, so naming the architectures spares
# Caffe2's CMake a GPU-detection try_run (which fails on machines without a
# GPU and trips over CMAKE_CXX_STANDARD 20 leaking into its CUDA test project).
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures for LibTorch's CMake")
endif()
find_package(Torch REQUIRED)
message(STATUS "hpcbench: LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX} (CUDA: ${CAFFE2_USE_CUDA})")
if(CAFFE2_USE_CUDA)
  set(HPCBENCH_TORCH_CUDA 1)
else()
  set(HPCBENCH_TORCH_CUDA 0)
endif()
# The libraries' own folder goes into the rpath so that the binary runs with
# no virtual environment active and no LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH "${TORCH_INSTALL_PREFIX}/lib")
set(CMAKE_INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib")

# --- libcurl ----------------------------------------------------------------
# `hpcbench fetch` downloads through the system's libcurl (Debian: libcurl4),
# which brings TLS, proxies and the CA bundle the site configured. Only its
# headers are needed to build (Debian: libcurl4-openssl-dev, or a staged
# folder, below): lib/hub loads libcurl.so.4 with dlopen when a download
# needs it, so that the binary starts, and runs, where it is missing.
if(HPCBENCH_DEPS_DIR)
  set(HPCBENCH_CURL_INCLUDE_DIR ${HPCBENCH_DEPS_DIR}/include)
  if(NOT EXISTS ${HPCBENCH_CURL_INCLUDE_DIR}/curl/curl.h)
    message(FATAL_ERROR "${HPCBENCH_CURL_INCLUDE_DIR}/curl/curl.h is missing: stage it again with tools/gpu/stage-deps.sh")
  endif()
else()
  find_path(HPCBENCH_CURL_INCLUDE_DIR curl/curl.h)
  if(NOT HPCBENCH_CURL_INCLUDE_DIR)
    message(FATAL_ERROR "curl/curl.h not found: install libcurl's headers (Debian: libcurl4-openssl-dev)")
  endif()
endif()
add_library(hpcbench_curl_headers INTERFACE)
target_include_directories(hpcbench_curl_headers SYSTEM INTERFACE ${HPCBENCH_CURL_INCLUDE_DIR})

# --- A staged dependency folder (machines without Debian's -dev packages) --
# tools/gpu/stage-deps.sh copies the headers of fmt, spdlog, CLI11,
# nlohmann-json, toml++, Gloo and utf8proc (plus libutf8proc.a) into one
# folder; with HPCBENCH_DEPS_DIR pointing at it, fmt and spdlog are used
# header-only and nothing else is searched for. This is how the project
# builds on the GPU machines, which have CMake, nvcc and torch but no network.
set(HPCBENCH_DEPS_DIR "" CACHE PATH "Folder made by tools/gpu/stage-deps.sh")
if(HPCBENCH_DEPS_DIR)
  set(_inc ${HPCBENCH_DEPS_DIR}/include)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_inc}
    INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
  add_library(spdlog::spdlog INTERFACE IMPORTED)
  set_target_properties(spdlog::spdlog PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_inc}
    INTERFACE_COMPILE_DEFINITIONS "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL"
    INTERFACE_LINK_LIBRARIES fmt::fmt)
  foreach(t CLI11::CLI11 nlohmann_json::nlohmann_json tomlplusplus::tomlplusplus)
    add_library(${t} INTERFACE IMPORTED)
    set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_inc})
  endforeach()
  add_library(hpcbench_utf8proc STATIC IMPORTED)
  set_target_properties(hpcbench_utf8proc PROPERTIES IMPORTED_LOCATION ${HPCBENCH_DEPS_DIR}/lib/libutf8proc.a
    INTERFACE_INCLUDE_DIRECTORIES ${_inc} INTERFACE_COMPILE_DEFINITIONS UTF8PROC_STATIC)
  set(HPCBENCH_GLOO_INCLUDE_DIR ${_inc} CACHE PATH "" FORCE)
  set(HPCBENCH_FMT_SHADOW ${CMAKE_BINARY_DIR}/fmt-shadow)
  file(MAKE_DIRECTORY ${HPCBENCH_FMT_SHADOW})
  file(CREATE_LINK ${_inc}/fmt ${HPCBENCH_FMT_SHADOW}/fmt SYMBOLIC)
  include_directories(BEFORE ${HPCBENCH_FMT_SHADOW})
  return()
endif()

# --- fmt ------------------------------------------------------------------
# One fmt for the whole program: the system's (or fetched) compiled fmt, which
# spdlog is built against too. See README "One fmt".
find_package(fmt 9 QUIET)
if(NOT fmt_FOUND)
  FetchContent_Declare(fmt GIT_REPOSITORY https://github.com/fmtlib/fmt GIT_TAG 10.2.1)
  FetchContent_MakeAvailable(fmt)
endif()

# LibTorch's include folder carries fmt 12 headers of its own and is searched
# before /usr/include, so `#include <fmt/format.h>` would otherwise mix torch's
# headers with the system's compiled libfmt. A folder holding only a link to
# the chosen fmt's headers, put first on every target's include path, makes all
# translation units (ours and torch's headers alike) see the one fmt we link.
get_target_property(_fmt_inc fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
list(GET _fmt_inc 0 _fmt_inc)
set(HPCBENCH_FMT_SHADOW ${CMAKE_BINARY_DIR}/fmt-shadow)
file(MAKE_DIRECTORY ${HPCBENCH_FMT_SHADOW})
if(EXISTS ${_fmt_inc}/fmt/format.h)
  file(CREATE_LINK ${_fmt_inc}/fmt ${HPCBENCH_FMT_SHADOW}/fmt SYMBOLIC)
endif()
include_directories(BEFORE ${HPCBENCH_FMT_SHADOW})

find_package(spdlog QUIET)
if(NOT spdlog_FOUND)
  set(SPDLOG_FMT_EXTERNAL ON CACHE BOOL "" FORCE)
  FetchContent_Declare(spdlog GIT_REPOSITORY https://github.com/gabime/spdlog GIT_TAG v1.12.0)
  FetchContent_MakeAvailable(spdlog)
endif()

find_package(CLI11 2 QUIET)
if(NOT CLI11_FOUND)
  FetchContent_Declare(cli11 GIT_REPOSITORY https://github.com/CLIUtils/CLI11 GIT_TAG v2.3.2)
  FetchContent_MakeAvailable(cli11)
endif()

find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  FetchContent_Declare(json URL https://github.com/nlohmann/json/releases/download/v3.11.2/json.tar.xz)
  FetchContent_MakeAvailable(json)
endif()

find_package(tomlplusplus 3 QUIET)
if(NOT tomlplusplus_FOUND)
  FetchContent_Declare(tomlplusplus GIT_REPOSITORY https://github.com/marzer/tomlplusplus GIT_TAG v3.4.0)
  FetchContent_MakeAvailable(tomlplusplus)
endif()

# utf8proc ships only a pkg-config file on Debian.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(UTF8PROC IMPORTED_TARGET libutf8proc)
endif()
if(UTF8PROC_FOUND)
  add_library(hpcbench_utf8proc ALIAS PkgConfig::UTF8PROC)
else()
  FetchContent_Declare(utf8proc GIT_REPOSITORY https://github.com/JuliaStrings/utf8proc GIT_TAG v2.9.0)
  FetchContent_MakeAvailable(utf8proc)
  add_library(hpcbench_utf8proc ALIAS utf8proc)
endif()

if(HPCBENCH_BUILD_TESTS)
  find_package(Catch2 2 QUIET)
  if(NOT Catch2_FOUND)
    FetchContent_Declare(catch2 GIT_REPOSITORY https://github.com/catchorg/Catch2 GIT_TAG v2.13.10)
    FetchContent_MakeAvailable(catch2)
  endif()
  find_package(Python3 COMPONENTS Interpreter)
endif()
