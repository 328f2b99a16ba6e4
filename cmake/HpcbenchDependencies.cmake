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
# Found through the dependency shadow folder (below), like every dependency's headers.
add_library(hpcbench_curl_headers INTERFACE)

# --- The dependency shadow folder -------------------------------------------
# One folder of links, build/deps-shadow, to each dependency's header folder
# (fmt, spdlog, CLI11, nlohmann-json, toml++, Gloo, utf8proc, curl), first on
# every target's include path. Two reasons:
# - LibTorch's include folder carries fmt 12 headers of its own and is searched
#   before /usr/include, so `#include <fmt/format.h>` would otherwise mix
#   torch's headers with the compiled fmt we link (README "One fmt");
# - every translation unit then names these headers by the same path whether
#   they are Debian's or the staged copies of HPCBENCH_DEPS_DIR, so that the
#   staged-headers build's compiles are the same text as the main build's, and
#   ccache (CCACHE_BASEDIR: paths relative to the build folder) serves them.
set(HPCBENCH_DEPS_SHADOW ${CMAKE_BINARY_DIR}/deps-shadow)
file(REMOVE_RECURSE ${HPCBENCH_DEPS_SHADOW})
file(MAKE_DIRECTORY ${HPCBENCH_DEPS_SHADOW})
include_directories(BEFORE SYSTEM ${HPCBENCH_DEPS_SHADOW})
# hpcbench_shadow(ENTRY DIR...): links deps-shadow/ENTRY to the first DIR/ENTRY
# that exists (none: the entry is left out, and found where it is).
function(hpcbench_shadow entry)
  foreach(d ${ARGN})
    # FetchContent's targets name their folder inside $<BUILD_INTERFACE:...>.
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" d "${d}")
    if(NOT IS_ABSOLUTE "${d}")
      continue()
    endif()
    if(EXISTS ${d}/${entry})
      file(CREATE_LINK ${d}/${entry} ${HPCBENCH_DEPS_SHADOW}/${entry} SYMBOLIC)
      return()
    endif()
  endforeach()
endfunction()
hpcbench_shadow(curl ${HPCBENCH_CURL_INCLUDE_DIR})

# --- A staged dependency folder (machines without Debian's -dev packages) --
# tools/gpu/stage-deps.sh copies Debian's headers of fmt, spdlog, CLI11,
# nlohmann-json, toml++, Gloo and utf8proc (plus libutf8proc.a) into one
# folder; with HPCBENCH_DEPS_DIR pointing at it, nothing else is searched for.
# This is how the project builds on the GPU machines, which have CMake, nvcc
# and torch but no network. fmt, spdlog and toml++ are compiled here from the
# staged headers (cmake/staged/) into small libraries, with the compile
# definitions that Debian's packages give their users: the project's own
# translation units are then the same text as in a build against the packages,
# and a staged build after a main one (tests/gpu: gpu_staged_build) takes every
# compile from ccache.
set(HPCBENCH_DEPS_DIR "" CACHE PATH "Folder made by tools/gpu/stage-deps.sh")
if(HPCBENCH_DEPS_DIR)
  set(_inc ${HPCBENCH_DEPS_DIR}/include)
  foreach(entry fmt spdlog CLI nlohmann toml++ gloo utf8proc.h)
    if(NOT EXISTS ${_inc}/${entry})
      message(FATAL_ERROR "${_inc}/${entry} is missing: stage it again with tools/gpu/stage-deps.sh")
    endif()
    hpcbench_shadow(${entry} ${_inc})
  endforeach()
  add_library(hpcbench_staged_fmt STATIC ${CMAKE_CURRENT_LIST_DIR}/staged/fmt.cpp)
  target_compile_definitions(hpcbench_staged_fmt PUBLIC FMT_SHARED)
  add_library(fmt::fmt ALIAS hpcbench_staged_fmt)
  add_library(hpcbench_staged_spdlog STATIC ${CMAKE_CURRENT_LIST_DIR}/staged/spdlog.cpp)
  target_compile_definitions(hpcbench_staged_spdlog PUBLIC SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL SPDLOG_SHARED_LIB)
  target_link_libraries(hpcbench_staged_spdlog PUBLIC hpcbench_staged_fmt)
  add_library(spdlog::spdlog ALIAS hpcbench_staged_spdlog)
  add_library(hpcbench_staged_toml STATIC ${CMAKE_CURRENT_LIST_DIR}/staged/toml.cpp)
  # As options, not definitions: where Debian's package puts them on the command
  # line (after the flags), which ccache's direct mode hashes in order.
  target_compile_options(hpcbench_staged_toml PUBLIC -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1)
  add_library(tomlplusplus::tomlplusplus ALIAS hpcbench_staged_toml)
  foreach(t CLI11::CLI11 nlohmann_json::nlohmann_json)
    add_library(${t} INTERFACE IMPORTED)
  endforeach()
  # UTF8PROC_EXPORTS is what Debian's pkg-config file gives (on Linux it only
  # marks the declarations visibility("default"), as for a static library).
  add_library(hpcbench_utf8proc STATIC IMPORTED)
  set_target_properties(hpcbench_utf8proc PROPERTIES IMPORTED_LOCATION ${HPCBENCH_DEPS_DIR}/lib/libutf8proc.a
    INTERFACE_COMPILE_DEFINITIONS UTF8PROC_EXPORTS)
  set(HPCBENCH_GLOO_INCLUDE_DIR ${HPCBENCH_DEPS_SHADOW} CACHE PATH "" FORCE)
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

# The rest of the shadow folder: each dependency's folder as its target names
# it, else where the compiler finds it by default.
foreach(_pair fmt=fmt::fmt spdlog=spdlog::spdlog CLI=CLI11::CLI11 nlohmann=nlohmann_json::nlohmann_json
        toml++=tomlplusplus::tomlplusplus utf8proc.h=hpcbench_utf8proc)
  string(REGEX REPLACE "=.*" "" _entry "${_pair}")
  string(REGEX REPLACE ".*=" "" _target "${_pair}")
  get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT EXISTS ${HPCBENCH_DEPS_SHADOW}/${_entry})
    hpcbench_shadow(${_entry} ${_dirs} ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
  endif()
endforeach()
# Gloo's headers (lib/distributed says why they are needed).
find_path(HPCBENCH_GLOO_INCLUDE_DIR gloo/rendezvous/store.h HINTS $ENV{GLOO_HOME}/include)
if(HPCBENCH_GLOO_INCLUDE_DIR)
  hpcbench_shadow(gloo ${HPCBENCH_GLOO_INCLUDE_DIR})
endif()

if(HPCBENCH_BUILD_TESTS)
  find_package(Catch2 2 QUIET)
  if(NOT Catch2_FOUND)
    FetchContent_Declare(catch2 GIT_REPOSITORY https://github.com/catchorg/Catch2 GIT_TAG v2.13.10)
    FetchContent_MakeAvailable(catch2)
  endif()
  find_package(Python3 COMPONENTS Interpreter)
endif()
