# Bakes the git commit into the binary; the file is regenerated on every build
# but only rewritten when the commit changes, so nothing recompiles needlessly.
set(HPCBENCH_VERSION_IN ${CMAKE_CURRENT_LIST_DIR}/version.cpp.in)
set(HPCBENCH_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/version.cpp)
add_custom_target(hpcbench_git_version
  COMMAND ${CMAKE_COMMAND}
    -DSRC=${CMAKE_SOURCE_DIR} -DIN=${HPCBENCH_VERSION_IN} -DOUT=${HPCBENCH_VERSION_CPP}
    -DVERSION=${PROJECT_VERSION} -DTORCH_CUDA=${HPCBENCH_TORCH_CUDA}
    -P ${CMAKE_CURRENT_LIST_DIR}/GitVersion.cmake
  BYPRODUCTS ${HPCBENCH_VERSION_CPP}
  COMMENT "Reading the git commit")
