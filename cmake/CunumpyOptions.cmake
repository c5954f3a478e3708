# One helper per optional dependency: each CUNUMPY_ENABLE_<X> is AUTO (use it if
# found), ON (fail loudly when missing) or OFF (do not look for it).  The result is
# CUNUMPY_WITH_<X> (TRUE/FALSE) plus one line in the feature summary.

set(_cunumpy_feature_lines "")

function(cunumpy_option name help)
  set(CUNUMPY_ENABLE_${name} AUTO CACHE STRING "${help} (AUTO, ON or OFF)")
  set_property(CACHE CUNUMPY_ENABLE_${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${CUNUMPY_ENABLE_${name}}" value)
  if(value MATCHES "^(1|TRUE|YES|Y)$")
    set(value ON)
  elseif(value MATCHES "^(0|FALSE|NO|N)$")
    set(value OFF)
  endif()
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR
      "CUNUMPY_ENABLE_${name}=${CUNUMPY_ENABLE_${name}} is not AUTO, ON or OFF; "
      "pass -DCUNUMPY_ENABLE_${name}=AUTO (use it if found), ON (require it) or OFF.")
  endif()
  set(CUNUMPY_MODE_${name} ${value} PARENT_SCOPE)
endfunction()

# cunumpy_resolve(<name> <found> <detail>): apply the mode to what was found.
function(cunumpy_resolve name found detail)
  set(mode ${CUNUMPY_MODE_${name}})
  if(mode STREQUAL "OFF")
    set(with FALSE)
    set(line "OFF (disabled by CUNUMPY_ENABLE_${name}=OFF)")
  elseif(found)
    set(with TRUE)
    set(line "ON  (${detail})")
  elseif(mode STREQUAL "ON")
    message(FATAL_ERROR
      "CUNUMPY_ENABLE_${name}=ON but ${name} was not found: ${detail}. "
      "Install it (scripts/install_deps.sh installs every dependency) or configure with "
      "-DCUNUMPY_ENABLE_${name}=AUTO/OFF.")
  else()
    set(with FALSE)
    set(line "OFF (not found: ${detail})")
  endif()
  set(CUNUMPY_WITH_${name} ${with} PARENT_SCOPE)
  set(_cunumpy_feature_lines "${_cunumpy_feature_lines}  ${name}: ${line}\n" PARENT_SCOPE)
endfunction()

# Whether the shared library `library` goes with the MPI of this build (MPI_C_LIBRARIES): TRUE
# when the MPI libraries it needs (its NEEDED entries named libmpi*, libmpich*) are this MPI's, or
# it needs none.  Debian builds FFTW-MPI and PETSc for Open MPI only: in a build against MPICH
# they would bring a second MPI into the process.  <out>_NEEDS names what it needs instead.
function(cunumpy_same_mpi library out)
  set(${out} TRUE PARENT_SCOPE)
  if(NOT CMAKE_OBJDUMP OR NOT EXISTS "${library}")
    return()
  endif()
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p ${library} OUTPUT_VARIABLE dump ERROR_QUIET)
  string(REGEX MATCHALL "NEEDED +libmpi[a-z_]*\\.so[.0-9]*" needed "${dump}")
  if(NOT needed)
    return()
  endif()
  set(ours "")
  foreach(lib ${MPI_C_LIBRARIES})
    execute_process(COMMAND ${CMAKE_OBJDUMP} -p ${lib} OUTPUT_VARIABLE d ERROR_QUIET)
    if(d MATCHES "SONAME +([^ \n]+)")
      list(APPEND ours ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(names "")
  foreach(entry ${needed})
    string(REGEX REPLACE "NEEDED +" "" name "${entry}")
    if(name IN_LIST ours)
      return()
    endif()
    list(APPEND names ${name})
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
  set(${out}_NEEDS "${names}" PARENT_SCOPE)
endfunction()

# <out>: "<library> is built for another MPI (it needs ...)" for the first of `libraries` whose
# name matches `pattern` and that cunumpy_same_mpi refuses; empty when there is none.
function(cunumpy_other_mpi libraries pattern out)
  set(${out} "" PARENT_SCOPE)
  foreach(lib ${libraries})
    if(lib MATCHES "${pattern}")
      cunumpy_same_mpi(${lib} same)
      if(NOT same)
        set(${out} "${lib} is built for another MPI (it needs ${same_NEEDS})" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
endfunction()

function(cunumpy_print_summary)
  message(STATUS "cunumpy ${PROJECT_VERSION} feature summary:\n${_cunumpy_feature_lines}")
endfunction()

# Host code computes what the device computes, bit for bit: no fused multiply-adds that the
# source does not write (GCC and Clang contract a * b + c by default; nvcc's device side is
# told --fmad=false where it matters).
# The project's warnings for the host compiler's files of `target` (-Wall -Wextra -Wpedantic;
# not -Wmissing-field-initializers: options structs are filled with designated initialisers
# that name only what they change, the library's documented style), errors with
# CUNUMPY_WARNINGS_AS_ERRORS=ON (CI: a new warning fails the build).
option(CUNUMPY_WARNINGS_AS_ERRORS "Treat the project's compiler warnings as errors" OFF)
function(cunumpy_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
  if(CUNUMPY_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

function(cunumpy_no_contraction target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffp-contract=off>)
  endif()
endfunction()

# cunumpy_layer(<name> SOURCES <files...> LINKS <targets...>): one static library per layer
# (cunumpy_<name>, exported as cunumpy::<name>) that sees only the layers it links (see
# ARCHITECTURE.md), built from the folder that calls it.  Its public headers are in include/ (installed); headers the
# library's own layers share but applications never see are in internal/ (build tree only).
# Built position-independent, with warnings, into the export set.
function(cunumpy_layer name)
  cmake_parse_arguments(arg "" "" "SOURCES;LINKS" ${ARGN})
  set(target cunumpy_${name})
  add_library(${target} STATIC ${arg_SOURCES})
  add_library(cunumpy::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/internal)
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/internal>)
  endif()
  target_link_libraries(${target} PUBLIC ${arg_LINKS})
  cunumpy_warnings(${target})
  cunumpy_no_contraction(${target})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include/cunumpy)
    install(DIRECTORY include/cunumpy DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN "*.in" EXCLUDE)
  endif()
  install(TARGETS ${target} EXPORT cunumpyTargets)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  cunumpy_layer_folder(${target} ${folder})
endfunction()

# cunumpy_layer_folder(<target> <folder>): <folder> (relative to the source tree) holds the
# files of the layer built as <target>; recorded for the layer map below.
function(cunumpy_layer_folder target folder)
  set_property(GLOBAL APPEND PROPERTY CUNUMPY_LAYER_TARGETS ${target})
  set_property(GLOBAL PROPERTY CUNUMPY_LAYER_FOLDER_${target} ${folder})
endfunction()

# cunumpy_write_layer_map(<file> APPS_LINK <targets...>): writes, for cmake/check_layers.cmake,
# each recorded layer's folder and the recorded layers its target links directly (its
# LINK_LIBRARIES, or INTERFACE_LINK_LIBRARIES for an interface target), and the folder apps/
# as a layer that links APPS_LINK.  Written only when it changes.
function(cunumpy_write_layer_map file)
  cmake_parse_arguments(arg "" "" "APPS_LINK" ${ARGN})
  get_property(targets GLOBAL PROPERTY CUNUMPY_LAYER_TARGETS)
  set(text "# Written by CMake (cunumpy_write_layer_map): the layers and their link lists.\n")
  set(names "")
  foreach(target ${targets} apps)
    if(target STREQUAL "apps")
      set(folder apps)
      set(links ${arg_APPS_LINK})
    else()
      get_property(folder GLOBAL PROPERTY CUNUMPY_LAYER_FOLDER_${target})
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
      else()
        get_target_property(links ${target} LINK_LIBRARIES)
      endif()
    endif()
    set(layer_links "")
    foreach(link ${links})
      string(REGEX REPLACE "^cunumpy::(.+)$" "cunumpy_\\1" link "${link}")
      if(link STREQUAL "cunumpy_cunumpy")
        set(link cunumpy)
      endif()
      if(link IN_LIST targets)
        list(APPEND layer_links ${link})
      endif()
    endforeach()
    list(APPEND names ${target})
    string(APPEND text "set(layer_folder_${target} \"${folder}\")\nset(layer_links_${target} \"${layer_links}\")\n")
  endforeach()
  string(APPEND text "set(layers \"${names}\")\n")
  file(CONFIGURE OUTPUT ${file} CONTENT "${text}" @ONLY)
endfunction()
