# onnxc_install.cmake - what `cmake --install` puts under the prefix:
#
#   bin/onnxc
#   lib/libonnxc_rt.a, lib/libonnxc_rt_cuda.a (where the CUDA runtime is built),
#   lib/libonnxc_rt_mpi.a (where MPI is found), lib/libonnxc_rt_nccl.a (and
#   the CUDA runtime and NCCL)
#   include/onnxc/onnxc_rt.h, onnxc_rt_cuda.h (what generated code includes)
#   lib/cmake/onnxc/   onnxcConfig.cmake, onnxcConfigVersion.cmake,
#                      onnxcTargets.cmake (onnxc::onnxc, onnxc::rt, onnxc::rt_cuda,
#                      onnxc::rt_mpi),
#                      onnxcFunctions.cmake (onnxc_add_model)
#   lib/pkgconfig/     onnxc.pc, onnxc-cuda.pc
#
# The targets file is written here rather than by install(EXPORT): the
# runtime's build interface names the source tree, OpenBLAS through a
# pkg-config target and, for the CUDA runtime, the CUDA link language, none
# of which a C-only consumer project should inherit. The package is
# relocatable: every path is relative to the config file's folder.
# codegen/build.c finds the runtime from an installed onnxc the same way
# (bin/../lib), through ONNXC_INSTALL_REL_* below.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ONNXC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxc)
set(ONNXC_INSTALL_INCDIR ${CMAKE_INSTALL_INCLUDEDIR}/onnxc)
set(ONNXC_INSTALL_PCDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Paths between the installed folders, for the relocatable files and for an
# installed onnxc finding its runtime (a stand-in prefix: only the
# relative layout matters).
file(RELATIVE_PATH ONNXC_REL_BIN_TO_LIB /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
file(RELATIVE_PATH ONNXC_REL_BIN_TO_INC /p/${CMAKE_INSTALL_BINDIR} /p/${ONNXC_INSTALL_INCDIR})
file(RELATIVE_PATH ONNXC_REL_CMAKE_TO_PREFIX /p/${ONNXC_INSTALL_CMAKEDIR} /p)
file(RELATIVE_PATH ONNXC_REL_PC_TO_PREFIX /p/${ONNXC_INSTALL_PCDIR} /p)
string(REGEX REPLACE "/$" "" ONNXC_REL_CMAKE_TO_PREFIX "${ONNXC_REL_CMAKE_TO_PREFIX}")
string(REGEX REPLACE "/$" "" ONNXC_REL_PC_TO_PREFIX "${ONNXC_REL_PC_TO_PREFIX}")
target_compile_definitions(onnxc_codegen PRIVATE
  ONNXC_INSTALL_REL_LIB="${ONNXC_REL_BIN_TO_LIB}"
  ONNXC_INSTALL_REL_INC="${ONNXC_REL_BIN_TO_INC}")

# the link dependencies, for the targets file and the .pc files
set(ONNXC_HAS_RT_CUDA OFF)
if(TARGET onnxc_rt_cuda)
  set(ONNXC_HAS_RT_CUDA ON)
endif()
set(ONNXC_INSTALL_OPENBLAS_DIR "${OPENBLAS_LIBRARY_DIRS}")
set(ONNXC_INSTALL_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}")
set(ONNXC_INSTALL_CUDNN "${ONNXC_CUDNN}")
set(ONNXC_INSTALL_MPI_LIBS "${MPI_C_LIBRARIES}")

# an installed onnxc finds LLVM where it was linked from
set_target_properties(onnxc PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)

install(TARGETS onnxc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS onnxc_rt ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(ONNXC_HAVE_MPI)
  install(TARGETS onnxc_rt_mpi ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(ONNXC_HAVE_NCCL)
  install(TARGETS onnxc_rt_nccl ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(ONNXC_HAS_RT_CUDA)
  install(TARGETS onnxc_rt_cuda ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# the public headers, runtime/onnxc_*.h: what generated code includes
# (onnxc_rt.h, onnxc_rt_cuda.h, and any that later targets add); the rt_*.h
# beside them are the runtime's own
file(GLOB ONNXC_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/onnxc_*.h)
install(FILES ${ONNXC_PUBLIC_HEADERS} DESTINATION ${ONNXC_INSTALL_INCDIR})

set(_pkg ${CMAKE_CURRENT_BINARY_DIR}/package)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onnxcConfig.cmake.in
  ${_pkg}/onnxcConfig.cmake INSTALL_DESTINATION ${ONNXC_INSTALL_CMAKEDIR}
  NO_SET_AND_CHECK_MACRO NO_CHECK_REQUIRED_COMPONENTS_MACRO)
write_basic_package_version_file(${_pkg}/onnxcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxcTargets.cmake.in ${_pkg}/onnxcTargets.cmake @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxc.pc.in ${_pkg}/onnxc.pc @ONLY)
install(FILES ${_pkg}/onnxcConfig.cmake ${_pkg}/onnxcConfigVersion.cmake
  ${_pkg}/onnxcTargets.cmake ${PROJECT_SOURCE_DIR}/cmake/onnxcFunctions.cmake
  DESTINATION ${ONNXC_INSTALL_CMAKEDIR})
install(FILES ${_pkg}/onnxc.pc DESTINATION ${ONNXC_INSTALL_PCDIR})
if(ONNXC_HAS_RT_CUDA)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxc-cuda.pc.in ${_pkg}/onnxc-cuda.pc @ONLY)
  install(FILES ${_pkg}/onnxc-cuda.pc DESTINATION ${ONNXC_INSTALL_PCDIR})
endif()
