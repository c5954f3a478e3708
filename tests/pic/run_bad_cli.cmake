# The pic program given bad input: a message naming the problem and a non-zero exit code.
foreach(args "--particles;-5" "--case;weibel" "--dim;4" "--dim;3;--solver;petsc" "--dim;2;--direction;xyz" "--cells;2" "--dt;abc" "--unknown-option"
             "--decompose;--replicate" "--layout;decomposed;--replicate" "--host-step;joined")
  execute_process(COMMAND ${PIC} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "pic ${args} exited 0")
  endif()
  if(NOT "${out}${err}" MATCHES "(--particles|--case|--dim|--direction|--solver|--cells|--dt|unknown-option|not in|positive|Could not convert|following argument|extra|excludes|--decompose|--host-step)")
    message(FATAL_ERROR "pic ${args}: no clear message:\n${out}${err}")
  endif()
  message("pic ${args}: exit ${rc}: ${err}")
endforeach()
