execute_process(COMMAND git -C ${SRC} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR GIT_COMMIT STREQUAL "")
  set(GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git -C ${SRC} status --porcelain --untracked-files=no
    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    string(APPEND GIT_COMMIT "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT}.tmp @ONLY)
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
