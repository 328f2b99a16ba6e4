# Where the SLURM cluster cannot start, a cluster case is skipped, but fails
# under CI=true. Runs test_slurm_cluster's [env] case against a stand-in
# cluster.sh that always exits 77 ("cannot run here"), once without CI and
# once with CI=true.
# cmake -DEXE=<test_slurm_cluster> -DFAKE_SOURCE=<dir with tools/slurm/cluster.sh> -P ci_no_cluster.cmake
cmake_minimum_required(VERSION 3.25)
foreach(ci "" "true")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CI CI=${ci} HPCBENCH_SOURCE_DIR=${FAKE_SOURCE} ${EXE} "[env]"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  # No "SKIP" word here: the test's SKIP_REGULAR_EXPRESSION would match it.
  string(REPLACE "SKIPPED" "<skip word>" shown "${out}")
  if(ci STREQUAL "true")
    if(rc EQUAL 0 OR NOT out MATCHES "CI=true and this case cannot run" OR out MATCHES "SKIPPED")
      message(FATAL_ERROR "CI=true: expected a failure naming CI=true, got exit ${rc}:\n${shown}")
    endif()
  else()
    if(NOT rc EQUAL 0 OR NOT out MATCHES "SKIPPED: no local SLURM cluster here")
      message(FATAL_ERROR "without CI: expected a skip (exit 0, the skip word), got exit ${rc}:\n${shown}")
    endif()
  endif()
  message("CI='${ci}': exit ${rc} as expected")
endforeach()
