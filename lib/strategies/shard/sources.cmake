# The sharded engine zero and fsdp run on (no registry line of its own).
list(APPEND HPCBENCH_SPEC_SOURCES ${CMAKE_CURRENT_LIST_DIR}/plan.cpp)
list(APPEND HPCBENCH_STRATEGY_SOURCES ${CMAKE_CURRENT_LIST_DIR}/sharded.cpp ${CMAKE_CURRENT_LIST_DIR}/flat_param.cpp
  ${CMAKE_CURRENT_LIST_DIR}/groups.cpp ${CMAKE_CURRENT_LIST_DIR}/gathers.cpp ${CMAKE_CURRENT_LIST_DIR}/reduction.cpp
  ${CMAKE_CURRENT_LIST_DIR}/updater.cpp ${CMAKE_CURRENT_LIST_DIR}/accounting.cpp
  ${CMAKE_CURRENT_LIST_DIR}/buffers.cpp)
