# Compiler settings shared by every target: ccache and sanitizers.
set(_ccache "")
if(HPCBENCH_USE_CCACHE)
  find_program(HPCBENCH_CCACHE ccache)
  if(HPCBENCH_CCACHE)
    set(_ccache ${HPCBENCH_CCACHE})
    # PCH and ccache only get along when ccache ignores the PCH's timestamps.
    set(ENV{CCACHE_SLOPPINESS} "pch_defines,time_macros,include_file_mtime,include_file_ctime")
  endif()
endif()
# Every compile's warnings are kept per object in compile-warnings/, so that
# a test can tell that the build is quiet (tests/build: test_build_warnings)
# whichever objects this build compiled and which came from ccache.
set(HPCBENCH_WARNINGS_DIR ${CMAKE_BINARY_DIR}/compile-warnings)
set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_SOURCE_DIR}/cmake/keep-warnings.sh ${HPCBENCH_WARNINGS_DIR} ${_ccache})

# Clang writes the headers' modification times into a precompiled header and
# checks them where it is used; ccache (which hashes the headers' contents)
# then cannot reuse a compile across clones. GCC needs no such switch.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:SHELL:-Xclang -fno-pch-timestamp>")
endif()

add_library(hpcbench_warnings INTERFACE)
target_compile_options(hpcbench_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter)

if(HPCBENCH_SANITIZE)
  list(JOIN HPCBENCH_SANITIZE "," _san)
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_san})
  # apps/hpcbench/main.cpp: exit through the static destructors, where the
  # leak check runs.
  add_compile_definitions(HPCBENCH_SANITIZED=1)
endif()

