# cmake -DSOURCE_DIR=<tree> -DLAYERS=<layers.cmake> -DWORK_DIR=<scratch> -DCHECKER=<check_layers.cmake>
#       -P planted.cmake
#
# The layer check must fail on an include of a layer the includer's target does not link (a
# higher layer, or a sibling such as loops and kernels) and on a public header that includes an
# internal one; and it must follow the link lists: with a link added to the layer map, the same
# include passes.  Copies the layers' folders, plants each in turn, and expects the checker to
# name the file and the header.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
include(${LAYERS})
foreach(layer ${layers})
  file(COPY ${SOURCE_DIR}/${layer_folder_${layer}} DESTINATION ${WORK_DIR})
endforeach()

function(run_checker map result_var err_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK_DIR} -DLAYERS=${map} -P ${CHECKER}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${result} PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(expect what file text)
  cmake_parse_arguments(arg "" "MAP;HEADER;OUTCOME" "" ${ARGN})
  if(NOT arg_MAP)
    set(arg_MAP ${LAYERS})
  endif()
  file(COPY_FILE ${WORK_DIR}/${file} ${WORK_DIR}/${file}.orig)
  file(APPEND ${WORK_DIR}/${file} "\n${text}\n")
  run_checker(${arg_MAP} result err)
  file(RENAME ${WORK_DIR}/${file}.orig ${WORK_DIR}/${file})
  if(arg_OUTCOME STREQUAL "pass")
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "the layer check failed on ${what} in ${file}:\n${err}")
    endif()
    message(STATUS "passed ${what}")
    return()
  endif()
  if(result EQUAL 0)
    message(FATAL_ERROR "the layer check passed with ${what} planted in ${file}")
  endif()
  if(NOT err MATCHES "${file}" OR NOT err MATCHES "${arg_HEADER}")
    message(FATAL_ERROR "the layer check failed without naming ${file} and ${arg_HEADER}:\n${err}")
  endif()
  message(STATUS "caught ${what}:\n${err}")
endfunction()

# The unplanted copy passes (so the failures below are the plants').
run_checker(${LAYERS} clean err)
if(NOT clean EQUAL 0)
  message(FATAL_ERROR "the layer check fails on the unplanted copy:\n${err}")
endif()
expect("an upward include (core -> mpi)" core/src/array.cpp "#include <cunumpy/comm.hpp>" HEADER comm.hpp)
expect("an upward include (loops -> mpi)" loops/include/cunumpy/parallel.hpp "#include <cunumpy/mpi_buffer.hpp>"
       HEADER mpi_buffer.hpp)
expect("a sibling's header (loops -> kernels)" loops/src/rng.cpp "#include <cunumpy/cuda_kernel.hpp>"
       HEADER cuda_kernel.hpp)
expect("a sibling's header (kernels -> loops)" kernels/src/kernel.cpp "#include <cunumpy/parallel.hpp>"
       HEADER parallel.hpp)
expect("a layer it does not link (grid -> kernels)" grid/src/halo.cpp "#include <cunumpy/kernel.hpp>"
       HEADER kernel.hpp)
expect("an upward include (grid -> io)" grid/src/halo.cpp "#include <cunumpy/openpmd.hpp>" HEADER openpmd.hpp)
expect("an upward include (mpi -> grid)" mpi/src/comm.cpp "#include <cunumpy/halo.hpp>" HEADER halo.hpp)
expect("an upward include (io -> runtime)" io/src/openpmd.cpp "#include <cunumpy/runtime.hpp>" HEADER runtime.hpp)
expect("an upward include (memory -> runtime)" memory/src/pools.cpp "#include \"cunumpy/runtime.hpp\""
       HEADER runtime.hpp)
expect("an internal header in a public one" memory/include/cunumpy/memory.hpp
       "#include <cunumpy/internal/core_context.hpp>" HEADER core_context.hpp)
expect("a header no layer provides" io/src/io.cpp "#include <cunumpy/no_such_header.hpp>" HEADER no_such_header.hpp)

# The rule is the link lists': link grid to kernels in the map, and grid may include kernels.
file(READ ${LAYERS} map)
string(REGEX REPLACE "set\\(layer_links_cunumpy_grid \"([^\"]*)\"\\)" "set(layer_links_cunumpy_grid \"\\1;cunumpy_kernels\")"
       linked "${map}")
if(linked STREQUAL map)
  message(FATAL_ERROR "the layer map names no links for cunumpy_grid:\n${map}")
endif()
file(WRITE ${WORK_DIR}/layers_grid_links_kernels.cmake "${linked}")
expect("an include of a layer the map links (grid -> kernels)" grid/src/halo.cpp "#include <cunumpy/kernel.hpp>"
       MAP ${WORK_DIR}/layers_grid_links_kernels.cmake OUTCOME pass)
