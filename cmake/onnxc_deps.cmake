# onnxc_deps.cmake - find the build dependencies and say clearly what is
# missing. Everything here comes from Debian packages; scripts/setup installs
# them (see the README).

find_package(PkgConfig REQUIRED)

# protobuf-c and the ONNX proto definition (protobuf-c-compiler,
# libprotobuf-c-dev, libonnx-dev)
find_program(PROTOC_C protoc-c)
if(NOT PROTOC_C)
  message(FATAL_ERROR "protoc-c not found: apt-get install protobuf-c-compiler")
endif()
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)

# xxHash (libxxhash-dev): the IR's checksums and run's cache keys
pkg_check_modules(XXHASH IMPORTED_TARGET libxxhash)
if(NOT XXHASH_FOUND)
  message(FATAL_ERROR "libxxhash not found: apt-get install libxxhash-dev")
endif()
set(ONNX_PROTO /usr/include/onnx/onnx.proto CACHE FILEPATH "onnx.proto to generate the loader from")
if(NOT EXISTS ${ONNX_PROTO})
  message(FATAL_ERROR "${ONNX_PROTO} not found: apt-get install libonnx-dev")
endif()

# LLVM 19 (llvm-19-dev): the C API generates kernels from the execution work on.
find_program(LLVM_CONFIG NAMES llvm-config-19 llvm-config
  PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
if(NOT LLVM_CONFIG)
  find_program(LLVM_CONFIG NAMES llvm-config-19)
endif()
if(NOT LLVM_CONFIG)
  message(FATAL_ERROR "LLVM 19 not found: apt-get install llvm-19-dev")
endif()
execute_process(COMMAND ${LLVM_CONFIG} --version OUTPUT_VARIABLE LLVM_VERSION
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT LLVM_VERSION VERSION_GREATER_EQUAL 19)
  message(FATAL_ERROR "LLVM ${LLVM_VERSION} at ${LLVM_CONFIG} is too old: onnxc needs LLVM 19 "
                      "(its NVPTX backend targets sm_90): apt-get install llvm-19-dev")
endif()
execute_process(COMMAND ${LLVM_CONFIG} --includedir OUTPUT_VARIABLE LLVM_INCLUDE_DIR
  OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${LLVM_CONFIG} --libdir OUTPUT_VARIABLE LLVM_LIB_DIR
  OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${LLVM_CONFIG} --targets-built OUTPUT_VARIABLE LLVM_TARGETS
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT LLVM_TARGETS MATCHES "NVPTX" OR NOT LLVM_TARGETS MATCHES "X86")
  message(FATAL_ERROR "LLVM at ${LLVM_CONFIG} lacks the NVPTX or X86 target (${LLVM_TARGETS})")
endif()
add_library(onnxc_llvm INTERFACE)
target_include_directories(onnxc_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIR})
target_link_directories(onnxc_llvm INTERFACE ${LLVM_LIB_DIR})
# LLVM's static libraries where llvm-19-dev has them (Debian's does), the
# components llvm.c uses: loading and relocating libLLVM.so and the
# libraries it pulls in (z3, xml2, ...) made `onnxc --version` take 81 ms,
# against 33 ms linked statically, and a small `onnxc check` 351 ms against
# 264 ms. Their
# compression support needs zlib and zstd (Debian 12 has libzstd.so.1
# without the -dev symlink). Without them, the shared library.
option(ONNXC_LLVM_STATIC "link LLVM's static libraries (a faster start)" ON)
set(ONNXC_LLVM_COMPONENTS core target x86codegen nvptxcodegen passes bitwriter irreader)
set(llvm_static OFF)
if(ONNXC_LLVM_STATIC)
  execute_process(COMMAND ${LLVM_CONFIG} --link-static --libfiles ${ONNXC_LLVM_COMPONENTS}
    OUTPUT_VARIABLE LLVM_STATIC_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc
    ERROR_QUIET)
  find_library(ONNXC_ZSTD NAMES zstd libzstd.so.1)
  find_library(ONNXC_ZLIB NAMES z)
  if(rc EQUAL 0 AND LLVM_STATIC_LIBS AND ONNXC_ZSTD AND ONNXC_ZLIB)
    separate_arguments(LLVM_STATIC_LIBS UNIX_COMMAND "${LLVM_STATIC_LIBS}")
    target_link_libraries(onnxc_llvm INTERFACE ${LLVM_STATIC_LIBS} ${ONNXC_ZLIB} ${ONNXC_ZSTD}
      stdc++ rt dl m)
    set(llvm_static ON)
  endif()
endif()
if(NOT llvm_static)
  target_link_libraries(onnxc_llvm INTERFACE LLVM-19)
endif()
message(STATUS "LLVM ${LLVM_VERSION}: ${LLVM_CONFIG} (static: ${llvm_static})")

# The CUDA toolkit is optional: CUDA parts build only where it is present.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(ONNXC_HAVE_CUDA ON)
  message(STATUS "CUDA toolkit ${CUDAToolkit_VERSION}: CUDA runtime parts enabled")
else()
  set(ONNXC_HAVE_CUDA OFF)
  message(STATUS "CUDA toolkit not found: building without the CUDA runtime")
endif()
