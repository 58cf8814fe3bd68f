# FindDNNL: oneDNN as the imported target DNNL::dnnl, and DNNL_VERSION from dnnl_version.h.
# Debian's own package config (dnnl-config.cmake) pulls in OpenCL, which tern does not use, so the
# library and headers are found directly. Used by tern's build and by the installed
# tern-config.cmake (static libraries link oneDNN).
find_library(DNNL_LIBRARY dnnl)
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
if(DNNL_INCLUDE_DIR AND EXISTS ${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h)
  file(STRINGS ${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h version_lines
       REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*DNNL_VERSION_${part} ([0-9]+).*" "\\1" DNNL_VERSION_${part}
                         "${version_lines}")
  endforeach()
  set(DNNL_VERSION ${DNNL_VERSION_MAJOR}.${DNNL_VERSION_MINOR}.${DNNL_VERSION_PATCH})
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR
                                  VERSION_VAR DNNL_VERSION)
if(DNNL_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION ${DNNL_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${DNNL_INCLUDE_DIR})
endif()
mark_as_advanced(DNNL_LIBRARY DNNL_INCLUDE_DIR)
