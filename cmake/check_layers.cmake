# cmake -DSOURCE_DIR=<tree> -DLAYERS=<build>/layers.cmake -P check_layers.cmake
#
# The one rule of ARCHITECTURE.md: a layer includes headers of its own layer and of the layers
# its target links (directly or through the layers they link), never of any other.  The layer
# map (LAYERS, written by CMake's cunumpy_write_layer_map) names each layer's folder and the
# layers its target links, read from the targets themselves: the rule follows the link lists,
# so two layers that link neither each other (loops and kernels) may not include each other.
# Also: a public header (what is installed) includes no library-internal header
# (cunumpy/internal/...) and no detail/ header.  Every #include <cunumpy/...> (or
# "cunumpy/...") of every file in the layers' folders is checked; a header that no layer
# provides is an error too.  Prints each violation and fails when there is one.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR OR NOT LAYERS)
  message(FATAL_ERROR "check_layers.cmake: pass -DSOURCE_DIR=<the source tree> -DLAYERS=<build>/layers.cmake")
endif()
include(${LAYERS})  # layers, layer_folder_<layer>, layer_links_<layer>

# What each layer may include: itself and every layer it reaches through its links.
foreach(layer ${layers})
  set(reach ${layer})
  set(todo ${layer_links_${layer}})
  while(todo)
    list(POP_FRONT todo next)
    if(NOT next IN_LIST reach)
      list(APPEND reach ${next})
      list(APPEND todo ${layer_links_${next}})
    endif()
  endwhile()
  set(_reach_${layer} ${reach})
endforeach()

# Which layer provides each header name (cunumpy/...).  device_headers/ and include/ hold
# their headers directly in cunumpy/; the others in include/cunumpy/ (public) and
# internal/cunumpy/internal/ (library-internal).
foreach(layer ${layers})
  set(folder ${SOURCE_DIR}/${layer_folder_${layer}})
  if(EXISTS ${folder}/cunumpy)
    set(roots ${folder})
  else()
    set(roots ${folder}/include ${folder}/internal)
  endif()
  foreach(dir ${roots})
    file(GLOB_RECURSE headers RELATIVE ${dir} ${dir}/cunumpy/*.hpp ${dir}/cunumpy/*.cuh ${dir}/cunumpy/*.h
         ${dir}/cunumpy/*.hpp.in)
    foreach(h ${headers})
      string(REGEX REPLACE "\\.in$" "" h "${h}")
      set(_owner_${h} ${layer})
    endforeach()
  endforeach()
endforeach()

set(_violations "")
set(_files_checked 0)
foreach(layer ${layers})
  set(folder ${layer_folder_${layer}})
  file(GLOB_RECURSE files ${SOURCE_DIR}/${folder}/*.hpp ${SOURCE_DIR}/${folder}/*.cuh ${SOURCE_DIR}/${folder}/*.h
       ${SOURCE_DIR}/${folder}/*.cpp
       ${SOURCE_DIR}/${folder}/*.cu ${SOURCE_DIR}/${folder}/*.hpp.in)
  foreach(file ${files})
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    # A file belongs to the layer with the deepest folder that holds it.
    set(owner_depth 0)
    set(owner "")
    foreach(other ${layers})
      string(LENGTH "${layer_folder_${other}}/" depth)
      string(FIND "${rel}" "${layer_folder_${other}}/" at)
      if(at EQUAL 0 AND depth GREATER owner_depth)
        set(owner_depth ${depth})
        set(owner ${other})
      endif()
    endforeach()
    if(NOT owner STREQUAL layer)
      continue()
    endif()
    math(EXPR _files_checked "${_files_checked} + 1")
    set(public FALSE)
    if(rel MATCHES "/include/cunumpy/" OR rel MATCHES "^(device_headers|include)/cunumpy/")
      set(public TRUE)
    endif()
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]cunumpy/")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*$" "\\1" header "${line}")
      if(NOT DEFINED _owner_${header})
        string(APPEND _violations "  ${rel}: includes <${header}>, which no layer provides\n")
        continue()
      endif()
      if(NOT _owner_${header} IN_LIST _reach_${layer})
        string(APPEND _violations
          "  ${rel} (layer ${layer}, folder ${folder}/): includes <${header}> of the layer "
          "${_owner_${header}}, which ${layer} does not link (it reaches: ${_reach_${layer}})\n")
      endif()
      if(public AND (header MATCHES "^cunumpy/internal/" OR header MATCHES "/detail/"))
        string(APPEND _violations "  ${rel}: a public header includes the library-internal <${header}>\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_violations)
  message(FATAL_ERROR "check_layers: includes that break the layer rule (ARCHITECTURE.md):\n${_violations}"
                      "Move the code to the layer that owns what it needs, link that layer if it lies below, or "
                      "pass what it needs down as an argument or through the layer's context.")
endif()
list(LENGTH layers _layer_count)
message(STATUS "check_layers: ${_files_checked} files in ${_layer_count} layers, every include goes to its own "
               "layer or one its target links")
