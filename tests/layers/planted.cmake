# cmake -DSOURCE_DIR=<tree> -DWORK_DIR=<scratch> -DCHECKER=<check_layers.cmake> -P planted.cmake
#
# The layer check must fail on a planted upward include and on a public header that includes
# an internal one: copies the layered folders, plants each in turn, and expects the checker
# to name the file and the header.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
foreach(dir device_headers runtime memory kernels mpi io include apps)
  file(COPY ${SOURCE_DIR}/${dir} DESTINATION ${WORK_DIR})
endforeach()

function(expect_failure what file text)
  file(COPY_FILE ${WORK_DIR}/${file} ${WORK_DIR}/${file}.orig)
  file(APPEND ${WORK_DIR}/${file} "\n${text}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -P ${CHECKER}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(RENAME ${WORK_DIR}/${file}.orig ${WORK_DIR}/${file})
  if(result EQUAL 0)
    message(FATAL_ERROR "the layer check passed with ${what} planted in ${file}")
  endif()
  if(NOT err MATCHES "${file}")
    message(FATAL_ERROR "the layer check failed without naming ${file}:\n${err}")
  endif()
  message(STATUS "caught ${what}:\n${err}")
endfunction()

# The unplanted copy passes (so the failures below are the plants').
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -P ${CHECKER} RESULT_VARIABLE clean ERROR_VARIABLE err)
if(NOT clean EQUAL 0)
  message(FATAL_ERROR "the layer check fails on the unplanted copy:\n${err}")
endif()
expect_failure("an upward include (core -> mpi)" runtime/core/src/array.cpp "#include <cunumpy/comm.hpp>")
expect_failure("an upward include (kernels -> mpi)" kernels/include/cunumpy/parallel.hpp "#include <cunumpy/mpi_buffer.hpp>")
expect_failure("an upward include (mpi -> io)" mpi/src/halo.cpp "#include <cunumpy/openpmd.hpp>")
expect_failure("an upward include (io -> runtime)" io/src/openpmd.cpp "#include <cunumpy/runtime.hpp>")
expect_failure("an upward include (memory -> runtime)" memory/src/pools.cpp "#include \"cunumpy/runtime.hpp\"")
expect_failure("an internal header in a public one" memory/include/cunumpy/memory.hpp
               "#include <cunumpy/internal/core_context.hpp>")
