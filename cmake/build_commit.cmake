# Script mode (cmake -DSRC=... -DOUT=... -P build_commit.cmake), run at every build: writes OUT,
# a header defining TWINBIT_COMMIT ("3fd4f7c", "3fd4f7c+local changes", or "unknown" outside a
# git checkout), and touches it only when the text changes, so a build recompiles the one file
# that includes it only after a commit.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT changes STREQUAL "")
    string(APPEND commit "+local changes")
  endif()
endif()
set(text "#define TWINBIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
