# A fresh clone of the committed repository, in a temporary folder with
# nothing beside it, runs the data tests against its own tests/fixtures: the
# repository carries its test data, so a clone anywhere has what they need.
# Run by ctest as: cmake -DSOURCE_DIR=<repo> -DTESTS="exe|exe" -P fresh_clone.cmake
# The tests are the ones built from the working tree (the clone is not
# rebuilt); only their data comes from the clone.
cmake_minimum_required(VERSION 3.25)

find_program(GIT git)
set(_ci "$ENV{CI}")
execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --is-inside-work-tree
  RESULT_VARIABLE _not_git OUTPUT_QUIET ERROR_QUIET)
if(NOT GIT OR _not_git)
  set(_why "${SOURCE_DIR} is not a git checkout (or git is not installed), so there is no committed state to clone")
  if(_ci STREQUAL "true")
    message(FATAL_ERROR "${_why}; CI=true, so this fails instead of skipping")
  endif()
  # Matched by the test's SKIP_REGULAR_EXPRESSION.
  message("HPCBENCH_SKIP: ${_why}")
  return()
endif()

string(RANDOM LENGTH 8 _tag)
set(_tmp "/tmp/hpcbench-fresh-clone-${_tag}")
set(_clone "${_tmp}/repo")
file(MAKE_DIRECTORY ${_tmp})

function(check_and_cleanup ok what)
  if(NOT ok)
    file(REMOVE_RECURSE ${_tmp})
    message(FATAL_ERROR "${what}")
  endif()
endfunction()

# git clone of the source folder takes what is committed on its checked-out
# branch (a worktree's own branch), not uncommitted edits.
execute_process(COMMAND ${GIT} clone --quiet --no-hardlinks ${SOURCE_DIR} ${_clone}
  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(_rc EQUAL 0)
  set(_ok TRUE)
else()
  set(_ok FALSE)
endif()
check_and_cleanup(${_ok} "git clone ${SOURCE_DIR} ${_clone} failed: ${_err}")

# Nothing beside the clone: the only entry of its parent is the clone itself.
file(GLOB _beside LIST_DIRECTORIES true "${_tmp}/*")
list(LENGTH _beside _n)
if(_n EQUAL 1)
  set(_ok TRUE)
else()
  set(_ok FALSE)
endif()
check_and_cleanup(${_ok} "${_tmp} holds more than the clone: ${_beside}")

# No committed file reaches for the shared data folder beside the checkout.
execute_process(COMMAND ${GIT} -C ${_clone} grep -n -e "\\.\\./shared" -- .
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _refs)
if(_rc EQUAL 1)
  set(_ok TRUE)
else()
  set(_ok FALSE)
endif()
check_and_cleanup(${_ok} "committed files still refer to the shared folder beside the checkout:\n${_refs}")

string(REPLACE "|" ";" TESTS "${TESTS}")
foreach(_exe IN LISTS TESTS)
  get_filename_component(_name ${_exe} NAME)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env HPCBENCH_TEST_DATA=${_clone}/tests/fixtures ${_exe}
    WORKING_DIRECTORY ${_tmp}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  message("${_name} with HPCBENCH_TEST_DATA=${_clone}/tests/fixtures: exit ${_rc}")
  if(_rc EQUAL 0)
    set(_ok TRUE)
  else()
    set(_ok FALSE)
  endif()
  check_and_cleanup(${_ok} "${_name} failed on the fresh clone's data:\n${_out}")
endforeach()

file(REMOVE_RECURSE ${_tmp})
