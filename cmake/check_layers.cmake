# cmake -DSOURCE_DIR=<tree> -P check_layers.cmake
#
# The one rule of ARCHITECTURE.md: a layer includes headers of its own layer and of the
# layers below it, never above.  Layers, lowest first, with the folders that hold them:
#   0 device_headers   1 runtime/core   2 memory   3 kernels   4 mpi   5 io   6 runtime/startup
#   7 include (the umbrella header)     8 testing (GoogleTest helpers)   9 apps
# Also: a public header (what is installed) includes no library-internal header
# (cunumpy/internal/...) and no detail/ header.  Every #include <cunumpy/...> (or
# "cunumpy/...") of every file in these folders is checked; a header that no layer provides
# is an error too.  Prints each violation and fails when there is one.
cmake_minimum_required(VERSION 3.25)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers.cmake: pass -DSOURCE_DIR=<the source tree>")
endif()

set(_layers device_headers runtime/core memory kernels mpi io runtime/startup include testing apps)

# Which layer provides each header name (cunumpy/...), and which headers are public.
set(_index 0)
foreach(layer ${_layers})
  foreach(root include internal .)
    set(dir ${SOURCE_DIR}/${layer}/${root})
    # device_headers/cunumpy and include/cunumpy hold their headers directly.
    set(flat FALSE)
    if(layer STREQUAL "device_headers" OR layer STREQUAL "include")
      set(flat TRUE)
    endif()
    if(flat AND NOT root STREQUAL ".")
      continue()
    endif()
    if(NOT flat AND root STREQUAL ".")
      continue()
    endif()
    file(GLOB_RECURSE headers RELATIVE ${dir} ${dir}/cunumpy/*.hpp ${dir}/cunumpy/*.cuh ${dir}/cunumpy/*.hpp.in)
    foreach(h ${headers})
      string(REGEX REPLACE "\\.in$" "" h "${h}")
      set(_owner_${h} ${_index})
      set(_owner_layer_${h} ${layer})
    endforeach()
  endforeach()
  math(EXPR _index "${_index} + 1")
endforeach()

set(_violations "")
set(_files_checked 0)
set(_index 0)
foreach(layer ${_layers})
  file(GLOB_RECURSE files ${SOURCE_DIR}/${layer}/*.hpp ${SOURCE_DIR}/${layer}/*.cuh ${SOURCE_DIR}/${layer}/*.cpp
       ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.hpp.in)
  foreach(file ${files})
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
    # runtime/startup lies inside runtime/: its files belong to it, not to runtime/core.
    if(NOT layer STREQUAL "runtime/startup" AND rel MATCHES "^runtime/startup/")
      continue()
    endif()
    math(EXPR _files_checked "${_files_checked} + 1")
    set(public FALSE)
    if(rel MATCHES "/include/cunumpy/" OR rel MATCHES "^device_headers/cunumpy/" OR rel MATCHES "^include/cunumpy/")
      set(public TRUE)
    endif()
    file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]cunumpy/")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*$" "\\1" header "${line}")
      if(NOT DEFINED _owner_${header})
        string(APPEND _violations "  ${rel}: includes <${header}>, which no layer provides\n")
        continue()
      endif()
      if(_owner_${header} GREATER _index)
        string(APPEND _violations
          "  ${rel} (layer ${layer}): includes <${header}> of the higher layer ${_owner_layer_${header}}\n")
      endif()
      if(public AND (header MATCHES "^cunumpy/internal/" OR header MATCHES "/detail/"))
        string(APPEND _violations "  ${rel}: a public header includes the library-internal <${header}>\n")
      endif()
    endforeach()
  endforeach()
  math(EXPR _index "${_index} + 1")
endforeach()

if(_violations)
  message(FATAL_ERROR "check_layers: includes that break the layer rule (ARCHITECTURE.md):\n${_violations}"
                      "Move the code to the layer that owns what it needs, or pass what it needs down as an "
                      "argument or through the layer's context.")
endif()
message(STATUS "check_layers: ${_files_checked} files, every include goes to its own layer or one below")
