# cmake -DSOURCE_DIR=<tree> -P check_backend_switches.cmake
#
# The rule of ARCHITECTURE.md "Where work runs": the library passes the target of its arrays
# down (cunumpy::Target, on(array)) and never selects a backend for a thread or the process
# itself.  In the library's layers (device_headers, core, memory, loops, kernels, mpi, grid, io,
# runtime, include) no code outside a comment or a string literal
#   - opens a backend scope: use_backend( or a UseBackend object,
#   - sets the process default: set_backend( (the Runtime applies RuntimeOptions::backend, the
#     user's own request, in runtime/src/runtime.cpp alone),
# other than where backend.hpp and backend.cpp define them.  testing/ (the GoogleTest helpers
# that run a user's test code on a chosen backend) and apps/ are application code.  Prints
# each violation and fails when there is one.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_backend_switches.cmake: pass -DSOURCE_DIR=<the source tree>")
endif()

set(_layers device_headers core memory loops kernels mpi grid io particles runtime include)
set(_defined_in core/include/cunumpy/backend.hpp core/src/backend.cpp)
set(_set_backend_allowed runtime/src/runtime.cpp)

set(_violations "")
set(_files 0)
foreach(layer ${_layers})
  file(GLOB_RECURSE files ${SOURCE_DIR}/${layer}/*.hpp ${SOURCE_DIR}/${layer}/*.cuh
       ${SOURCE_DIR}/${layer}/*.cpp ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.hpp.in)
  foreach(file ${files})
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    if(rel IN_LIST _defined_in)
      continue()
    endif()
    math(EXPR _files "${_files} + 1")
    # One list element per line: the characters that CMake's lists treat specially (';' and
    # brackets, which would join lines) become spaces first.
    file(READ ${file} text)
    string(REGEX REPLACE "[][;]" " " text "${text}")
    string(REPLACE "\n" ";" lines "${text}")
    set(n 0)
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      string(REGEX REPLACE "\"[^\"]*\"" "\"\"" code "${line}")  # messages and comments may
      string(REGEX REPLACE "//.*$" "" code "${code}")               # name them
      if(code MATCHES "use_backend[ \t]*\\(" OR code MATCHES "UseBackend")
        string(APPEND _violations "  ${rel}:${n}: a backend scope in library code: ${line}\n")
      endif()
      if(code MATCHES "set_backend[ \t]*\\(" AND NOT rel IN_LIST _set_backend_allowed)
        string(APPEND _violations "  ${rel}:${n}: set_backend in library code: ${line}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_files EQUAL 0)
  message(FATAL_ERROR "check_backend_switches.cmake: no library file found under ${SOURCE_DIR}")
endif()
if(_violations)
  message(FATAL_ERROR
          "library code selects a backend instead of passing the arrays' target down "
          "(cunumpy::Target, on(array); see ARCHITECTURE.md, 'Where work runs'):\n${_violations}")
endif()
message(STATUS "check_backend_switches: ${_files} library files select no backend")
