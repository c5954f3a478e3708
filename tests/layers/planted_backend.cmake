# cmake -DSOURCE_DIR=<tree> -DWORK_DIR=<scratch> -DCHECKER=<check_backend_switches.cmake>
#       -P planted_backend.cmake
#
# The backend-switch check must fail on a backend scope or a set_backend planted in library
# code, naming the file, and pass on the unplanted copy and on the mentions it allows
# (comments, messages, the Runtime applying RuntimeOptions::backend).
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
foreach(dir device_headers core memory loops kernels mpi grid io runtime include)
  file(COPY ${SOURCE_DIR}/${dir} DESTINATION ${WORK_DIR})
endforeach()

function(run_checker result_var err_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -P ${CHECKER}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${result} PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(plant file text expect)
  file(COPY_FILE ${WORK_DIR}/${file} ${WORK_DIR}/${file}.orig)
  file(APPEND ${WORK_DIR}/${file} "\n${text}\n")
  run_checker(result err)
  file(RENAME ${WORK_DIR}/${file}.orig ${WORK_DIR}/${file})
  if(expect STREQUAL "fail")
    if(result EQUAL 0)
      message(FATAL_ERROR "the backend-switch check passed with '${text}' planted in ${file}")
    endif()
    if(NOT err MATCHES "${file}")
      message(FATAL_ERROR "the backend-switch check failed without naming ${file}:\n${err}")
    endif()
    message(STATUS "caught '${text}' in ${file}")
  elseif(NOT result EQUAL 0)
    message(FATAL_ERROR "the backend-switch check refused '${text}' in ${file}:\n${err}")
  endif()
endfunction()

run_checker(clean err)
if(NOT clean EQUAL 0)
  message(FATAL_ERROR "the backend-switch check fails on the unplanted copy:\n${err}")
endif()
plant(loops/src/algorithms.cpp "void f() { auto guard = use_backend(Backend::host); }" fail)
plant(grid/src/halo.cpp "void g() { const cunumpy::UseBackend on(Backend::emulated); }" fail)
plant(memory/include/cunumpy/host_staging.hpp "inline void h() { set_backend(Backend::host); }" fail)
plant(io/src/openpmd.cpp "void k() { cunumpy::set_backend (\"host\"); }" fail)
plant(loops/src/rng.cpp "// a comment may name use_backend(Backend::host)" pass)
plant(kernels/src/cuda_kernel.cpp "void j() { set_backend(Backend::host); }" fail)
plant(mpi/src/comm.cpp "const char* m = \"call set_backend(Backend::emulated) first\";" pass)
