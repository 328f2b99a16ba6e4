# The sharded engine zero and fsdp run on (no registry line of its own).
list(APPEND HPCBENCH_SPEC_SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan.cpp)
list(APPEND HPCBENCH_STRATEGY_SOURCES ${CMAKE_CURRENT_LIST_DIR}/sharded.cpp)
