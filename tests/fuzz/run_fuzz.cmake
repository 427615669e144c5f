# One fuzz target's CTest (tests/fuzz/CMakeLists.txt): copies the committed corpus to WORK (libFuzzer
# adds the inputs it finds to the corpus it is given: the copy, never the repository's), runs every
# input in it, fuzzes for SECONDS (at most RUNS executions), and fails on any crash, leak, sanitizer
# report, timeout or escaped exception; the input that did it is saved under WORK/ (crash-*, leak-*).
foreach(_var FUZZER CORPUS WORK SECONDS RUNS)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_fuzz.cmake: -D${_var}=... is required")
  endif()
endforeach()
if(NOT IS_DIRECTORY "${CORPUS}")
  message(FATAL_ERROR "run_fuzz.cmake: no corpus directory ${CORPUS}")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${CORPUS}/" DESTINATION "${WORK}/corpus")
if(DEFINED SEEDS)
  # Seeds written by simkit itself (tests/fuzz/seeds_<target>.cpp) join the committed ones.
  execute_process(COMMAND "${SEEDS}" "${WORK}/corpus" RESULT_VARIABLE _seeds_rc)
  if(NOT _seeds_rc EQUAL 0)
    message(FATAL_ERROR "${SEEDS}: exit ${_seeds_rc}")
  endif()
endif()
execute_process(COMMAND "${FUZZER}" "-max_total_time=${SECONDS}" "-runs=${RUNS}" -timeout=10 -rss_limit_mb=2048
                        "-artifact_prefix=${WORK}/" -print_final_stats=1 "${WORK}/corpus"
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER}: exit ${_rc}; the input is saved in ${WORK}/")
endif()
