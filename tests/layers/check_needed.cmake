# cmake -DPROGRAM=<halo_sort_program> -DREFERENCE=<a program linking the kernel layer>
#       -P check_needed.cmake
#
# Runs PROGRAM (a halo exchange and a sort, linked against cunumpy::grid alone) and reads
# the shared libraries it names (readelf -d): neither Boost.Context nor libcrypto may be among
# them.  REFERENCE, a program that links the kernel layer, must name libcrypto, and
# Boost.Context where the emulator switches with it (off x86-64), so the check is seen to find
# them where they are.
cmake_minimum_required(VERSION 3.25)
find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE ran OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed (${ran}):\n${out}${err}")
endif()
function(needed program var)
  execute_process(COMMAND ${READELF} -d ${program} OUTPUT_VARIABLE dynamic RESULT_VARIABLE r)
  if(NOT r EQUAL 0)
    message(FATAL_ERROR "readelf -d ${program} failed")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]+\\]" lines "${dynamic}")
  set(${var} "${lines}" PARENT_SCOPE)
endfunction()
needed(${PROGRAM} program_needs)
needed(${REFERENCE} reference_needs)
foreach(library boost_context crypto)
  if(library STREQUAL "boost_context" AND NOT reference_needs MATCHES "libboost_context")
    # x86-64: the emulator's fibers switch with its own code, and the linker drops the library.
  elseif(NOT reference_needs MATCHES "lib${library}")
    message(FATAL_ERROR "the reference ${REFERENCE} does not name lib${library}; the check cannot "
                        "see it (its libraries: ${reference_needs})")
  endif()
  if(program_needs MATCHES "lib${library}")
    message(FATAL_ERROR "${PROGRAM} links lib${library}, the kernel layer's dependency, though it "
                        "uses only the halo exchange and sort (its libraries: ${program_needs})")
  endif()
endforeach()
message(STATUS "${out}links neither libboost_context nor libcrypto: ${program_needs}")
