# onnxcFunctions.cmake - compiling ONNX models as part of a CMake build
# (installed with the onnxc package; onnxcConfig.cmake includes it).
#
#   onnxc_add_model(<target> MODEL <file.onnx>
#                   [NAME <c-name>] [TARGET cpu|cuda] [ARCH <sm_XX>]
#                   [PRECISION fp32|mixed] [HALF fp16|bf16] [CPU <llvm-cpu>]
#                   [SHAPES <input=DIMS>...] [DIMS <name=N>...]
#                   [EMBED_WEIGHTS] [OPTIONS <onnxc compile options>...])
#
# Runs `onnxc compile` at build time into
# ${CMAKE_CURRENT_BINARY_DIR}/onnxc/<target>/ and creates <target>, an
# imported static library: libNAME.a, linking onnxc::rt (or onnxc::rt_cuda
# for TARGET cuda), with the folder of NAME.h on its include path. Unless
# EMBED_WEIGHTS, the weights file's absolute path is the compile definition
# <NAME>_WEIGHTS_FILE (NAME in upper case) of whatever links <target>, and
# the target property ONNXC_WEIGHTS_FILE. ONNXC_HEADER_DIR names the output
# folder. onnxc writes a depfile, so editing the model or its external data
# rebuilds it (and what links it); an unchanged model does not. Needs
# CMake 3.20 (DEPFILE with the Makefile and Ninja generators).
#
# Cross-compiling for a GPU needs none: TARGET cuda with ARCH picks the
# architecture (default sm_90); nothing probes a device at build time.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "onnxc_add_model needs CMake 3.20 (DEPFILE with Makefiles)")
endif()

# The shared part: one `onnxc <command>` run at build time that writes
# <outputs> into <outdir> with a depfile, and a custom target that runs it.
# onnxc_add_model and onnxc_add_training use it.
function(_onnxc_compile_rule target model outdir depfile comment)
  set(outputs ${ARGN})
  list(FIND outputs COMMAND _cmd)
  list(SUBLIST outputs ${_cmd} -1 command)
  list(SUBLIST outputs 0 ${_cmd} outputs)
  list(REMOVE_AT command 0)
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${outdir}
    COMMAND ${command}
    DEPENDS ${model} $<TARGET_FILE:onnxc::onnxc>
    DEPFILE ${depfile}
    COMMENT "${comment}"
    VERBATIM)
  add_custom_target(${target}_onnxc DEPENDS ${outputs})
endfunction()

# What onnxc_add_model and onnxc_add_training share: checks the parsed
# arguments (arg_*) of <fn>, and sets model (absolute), n (the C name),
# runtime (the runtime target), outdir and args (`onnxc <command> ...` with
# the output folder, the depfile, SHAPES, DIMS and the single-value options
# listed in <flags>, lower-cased as --flag). A macro: it sets the caller's
# variables.
macro(_onnxc_common_args fn command flags)
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_MODEL)
    message(FATAL_ERROR "${fn}(${target}): MODEL <file.onnx> is required")
  endif()
  get_filename_component(model "${arg_MODEL}" ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  # NAME defaults to what onnxc picks: the file name up to its first dot as
  # a C identifier
  if(NOT arg_NAME)
    get_filename_component(arg_NAME "${model}" NAME_WE)
    string(MAKE_C_IDENTIFIER "${arg_NAME}" arg_NAME)
  endif()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}(${target}): NAME ${arg_NAME} is not a C identifier")
  endif()
  if(NOT arg_TARGET)
    set(arg_TARGET cpu)
  endif()
  if(arg_TARGET STREQUAL "cuda")
    if(NOT TARGET onnxc::rt_cuda)
      message(FATAL_ERROR "${fn}(${target}): TARGET cuda, but this onnxc was "
                          "installed without the CUDA runtime (libonnxc_rt_cuda.a)")
    endif()
    set(runtime onnxc::rt_cuda)
  elseif(arg_TARGET STREQUAL "cpu")
    set(runtime onnxc::rt)
  else()
    message(FATAL_ERROR "${fn}(${target}): TARGET ${arg_TARGET} (cpu or cuda)")
  endif()
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/onnxc/${target})
  set(n ${arg_NAME})
  set(args ${command} ${model} -o ${outdir} --name ${n} --target ${arg_TARGET} -q
      --depfile ${outdir}/${n}.d)
  foreach(opt IN ITEMS ${flags})
    if(arg_${opt})
      string(TOLOWER ${opt} flag)
      list(APPEND args --${flag} ${arg_${opt}})
    endif()
  endforeach()
  foreach(s IN LISTS arg_SHAPES)
    list(APPEND args --shape ${s})
  endforeach()
  foreach(d IN LISTS arg_DIMS)
    list(APPEND args --dim ${d})
  endforeach()
endmacro()

function(onnxc_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "EMBED_WEIGHTS"
    "MODEL;NAME;TARGET;ARCH;PRECISION;HALF;CPU" "SHAPES;DIMS;OPTIONS")
  _onnxc_common_args(onnxc_add_model compile "ARCH;PRECISION;HALF;CPU")
  set(outputs ${outdir}/${n}.h ${outdir}/${n}.c ${outdir}/lib${n}.a)
  if(arg_EMBED_WEIGHTS)
    list(APPEND args --embed-weights)
  else()
    list(APPEND outputs ${outdir}/${n}.weights)
  endif()
  if(arg_TARGET STREQUAL "cuda")
    list(APPEND outputs ${outdir}/${n}_kernels.ptx)
  endif()
  list(APPEND args ${arg_OPTIONS})
  file(RELATIVE_PATH shown ${CMAKE_SOURCE_DIR} ${model})
  _onnxc_compile_rule(${target} ${model} ${outdir} ${outdir}/${n}.d
    "onnxc: compiling ${shown} (${arg_TARGET})" ${outputs}
    COMMAND $<TARGET_FILE:onnxc::onnxc> ${args})

  add_library(${target} STATIC IMPORTED GLOBAL)
  # the include folder must exist when the target is used, before the build
  file(MAKE_DIRECTORY ${outdir})
  string(TOUPPER ${n} N)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION ${outdir}/lib${n}.a
    IMPORTED_LINK_INTERFACE_LANGUAGES C
    INTERFACE_INCLUDE_DIRECTORIES ${outdir}
    INTERFACE_LINK_LIBRARIES ${runtime}
    ONNXC_HEADER_DIR ${outdir})
  if(NOT arg_EMBED_WEIGHTS)
    set_target_properties(${target} PROPERTIES
      INTERFACE_COMPILE_DEFINITIONS "${N}_WEIGHTS_FILE=\"${outdir}/${n}.weights\""
      ONNXC_WEIGHTS_FILE ${outdir}/${n}.weights)
  endif()
  add_dependencies(${target} ${target}_onnxc)
endfunction()

# onnxc_add_training(<target> MODEL <file.onnx>
#                    [NAME <c-name>] [TARGET cpu|cuda] [ARCH <sm_XX>]
#                    [PRECISION fp32|mixed] [HALF fp16|bf16] [CPU <llvm-cpu>]
#                    [LOSS cross-entropy|mse|none] [LABEL <name>]
#                    [OPTIMIZER sgd|momentum|adamw] [LR <lr>]
#                    [SHAPES <input=DIMS>...] [DIMS <name=N>...]
#                    [OPTIONS <onnxc train options>...])
#
# Runs `onnxc train` at build time into ${CMAKE_CURRENT_BINARY_DIR}/onnxc/
# <target>/ (with a depfile, as onnxc_add_model) and creates <target>, an
# imported static library: libNAME_train.a with both compiled steps and the
# training runtime, NAME_train.h on its include path (docs/training.md).
# The initial weights file's absolute path is the compile definition
# <NAME>_INIT_FILE of whatever links <target> and the target property
# ONNXC_INIT_FILE; the standalone training program is the property
# ONNXC_TRAIN_PROGRAM.
function(onnxc_add_training target)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "MODEL;NAME;TARGET;ARCH;PRECISION;HALF;CPU;LOSS;LABEL;OPTIMIZER;LR"
    "SHAPES;DIMS;OPTIONS")
  _onnxc_common_args(onnxc_add_training train
    "ARCH;PRECISION;HALF;CPU;LOSS;LABEL;OPTIMIZER;LR")
  list(APPEND args ${arg_OPTIONS})
  set(outputs ${outdir}/train ${outdir}/lib${n}_train.a ${outdir}/${n}_train.h
      ${outdir}/${n}.init ${outdir}/lib${n}_step.a ${outdir}/lib${n}_eval.a
      ${outdir}/${n}_step.h ${outdir}/${n}_eval.h)
  file(RELATIVE_PATH shown ${CMAKE_SOURCE_DIR} ${model})
  _onnxc_compile_rule(${target} ${model} ${outdir} ${outdir}/${n}.d
    "onnxc: compiling the training program of ${shown} (${arg_TARGET})" ${outputs}
    COMMAND $<TARGET_FILE:onnxc::onnxc> ${args})

  add_library(${target}_step STATIC IMPORTED GLOBAL)
  set_target_properties(${target}_step PROPERTIES
    IMPORTED_LOCATION ${outdir}/lib${n}_step.a IMPORTED_LINK_INTERFACE_LANGUAGES C)
  add_library(${target}_eval STATIC IMPORTED GLOBAL)
  set_target_properties(${target}_eval PROPERTIES
    IMPORTED_LOCATION ${outdir}/lib${n}_eval.a IMPORTED_LINK_INTERFACE_LANGUAGES C)
  add_library(${target} STATIC IMPORTED GLOBAL)
  file(MAKE_DIRECTORY ${outdir})
  string(TOUPPER ${n} N)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION ${outdir}/lib${n}_train.a
    IMPORTED_LINK_INTERFACE_LANGUAGES C
    INTERFACE_INCLUDE_DIRECTORIES ${outdir}
    INTERFACE_LINK_LIBRARIES "${target}_step;${target}_eval;${runtime}"
    INTERFACE_COMPILE_DEFINITIONS "${N}_INIT_FILE=\"${outdir}/${n}.init\""
    ONNXC_HEADER_DIR ${outdir}
    ONNXC_INIT_FILE ${outdir}/${n}.init
    ONNXC_TRAIN_PROGRAM ${outdir}/train)
  add_dependencies(${target} ${target}_onnxc)
endfunction()
