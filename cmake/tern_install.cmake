# Installing tern, and what a consumer finds. `cmake --install build [--prefix P]` writes
#   lib/libtern_<module>.a (.so with BUILD_SHARED_LIBS), include/tern/<module>/*.h, bin/tern,
#   lib/cmake/tern/: tern-config.cmake (+ version, targets): find_package(tern CONFIG) gives
#     tern::tern (every module) and tern::<module> (tern::base ... tern::config), linked to each
#     other as in this tree; static libraries carry their private vendor libraries as link-only
#     dependencies, which tern-config.cmake finds (find_dependency),
#   lib/pkgconfig/tern.pc, share/doc/tern/ (README, CHANGELOG, LICENSE, docs/, examples/).
# `make package` turns the same tree into a .deb with CPack (tern_install_package below).
#
# Every tern_module() is installed and exported by tern_install_module(); nothing here names a
# module. A module that links a new vendor library adds it to tern-config.cmake.in (find_dependency)
# and to TERN_PC_REQUIRES / TERN_PC_LIBS below.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TERN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tern)
if(BUILD_SHARED_LIBS)
  # bin/tern and lib/libtern_*.so find lib/ wherever the tree is installed.
  set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

# Vendor libraries of the modules for tern.pc: pkg-config packages, then flags for the rest.
set(TERN_PC_REQUIRES zlib libpng libjpeg libcrypto sqlite3 protobuf grpc++ ompi-c cpp-httplib)
set(TERN_PC_LIBS -ldnnl -fopenmp -pthread)

# tern::tern: every module.
add_library(tern_all INTERFACE)
set_target_properties(tern_all PROPERTIES EXPORT_NAME tern)
add_library(tern::tern ALIAS tern_all)
install(TARGETS tern_all EXPORT tern-targets)

# A library other modules link (e.g. generated code), exported as tern::<export name>.
function(tern_install_library target)
  install(TARGETS ${target} EXPORT tern-targets)
  set_property(GLOBAL APPEND PROPERTY TERN_INSTALLED_LIBRARIES ${target})
endfunction()

# Called by tern_module(): tern_<name> as tern::<name> (also in this tree), its headers (test
# helpers excepted) under include/<folder>/.
function(tern_install_module name dir)
  add_library(tern::${name} ALIAS tern_${name})
  set_target_properties(tern_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(tern_all INTERFACE tern_${name})
  tern_install_library(tern_${name})
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  foreach(sub "" "/analysis")
    file(GLOB headers CONFIGURE_DEPENDS ${dir}${sub}/*.h)
    list(FILTER headers EXCLUDE REGEX "test_util\\.h$")
    install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${folder}${sub})
  endforeach()
endfunction()

# Called once, after every module: the package files, the docs and CPack.
macro(tern_install_package)
  # --- CMake package ---
  install(EXPORT tern-targets NAMESPACE tern:: DESTINATION ${TERN_INSTALL_CMAKEDIR})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tern-config.cmake.in
                                ${PROJECT_BINARY_DIR}/tern-config.cmake
                                INSTALL_DESTINATION ${TERN_INSTALL_CMAKEDIR})
  # 0.x: a new minor version may change the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/tern-config-version.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/tern-config.cmake
                ${PROJECT_BINARY_DIR}/tern-config-version.cmake
                ${PROJECT_SOURCE_DIR}/cmake/FindDNNL.cmake
          DESTINATION ${TERN_INSTALL_CMAKEDIR})

  # --- pkg-config: tern.pc ---
  # Static libraries need every library in Libs (the group lets the linker resolve them in any
  # order); shared ones link their vendor libraries themselves (Requires.private, Libs.private).
  get_property(tern_libs GLOBAL PROPERTY TERN_INSTALLED_LIBRARIES)
  list(REVERSE tern_libs)  # dependents first
  list(TRANSFORM tern_libs PREPEND -l)
  list(JOIN tern_libs " " tern_libs)
  list(JOIN TERN_PC_REQUIRES " " tern_pc_requires)
  list(JOIN TERN_PC_LIBS " " tern_pc_vendor_libs)
  if(BUILD_SHARED_LIBS)
    set(TERN_PC_LIBS_LINE "${tern_libs}")
    set(TERN_PC_PRIVATE "Requires.private: ${tern_pc_requires}\nLibs.private: ${tern_pc_vendor_libs}")
    set(TERN_PC_REQUIRES_LINE "")
  else()
    set(TERN_PC_LIBS_LINE "-Wl,--start-group ${tern_libs} -Wl,--end-group ${tern_pc_vendor_libs}")
    set(TERN_PC_PRIVATE "")
    set(TERN_PC_REQUIRES_LINE "Requires: ${tern_pc_requires}")
  endif()
  # Public compile definitions of the modules (e.g. tern_serve's CPPHTTPLIB_*).
  set(TERN_PC_CFLAGS "")
  get_property(tern_all_libs GLOBAL PROPERTY TERN_INSTALLED_LIBRARIES)
  foreach(lib ${tern_all_libs})
    get_target_property(defs ${lib} INTERFACE_COMPILE_DEFINITIONS)
    if(defs)
      foreach(def ${defs})
        string(APPEND TERN_PC_CFLAGS " -D${def}")
      endforeach()
    endif()
  endforeach()
  # prefix relative to the .pc file, so the tree can be installed anywhere (--prefix).
  file(RELATIVE_PATH TERN_PC_UP /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/tern.pc.in ${PROJECT_BINARY_DIR}/tern.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/tern.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

  # --- docs ---
  install(FILES README.md CHANGELOG.md LICENSE BENCHMARKS.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
  install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)  # Debian's place
  install(DIRECTORY docs examples DESTINATION ${CMAKE_INSTALL_DOCDIR})

  # --- Debian package (make package) ---
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGE_NAME tern)
  set(CPACK_PACKAGE_VENDOR "the tern developers")
  set(CPACK_PACKAGE_CONTACT "tern developers <tern@localhost>")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "deep-learning training engine in C++ (library, headers, tern command)")
  set(CPACK_PACKAGE_DESCRIPTION
      "tern trains neural networks from C++ and from the command line: tf.data-style input\n"
      "pipelines, a Keras-like API, graph compilation onto oneDNN, checkpoints, TensorBoard logs,\n"
      "and a model server speaking TensorFlow Serving's REST and gRPC APIs.")
  set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tern_0.5.0_amd64.deb
  set(CPACK_DEBIAN_PACKAGE_SECTION science)
  # Depends: what the `tern` command (and shared libraries) load, found by dpkg-shlibdeps.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/tern)
  # Recommends: what a C++ program needs to build against the headers and static libraries.
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
      "g++, cmake | pkg-config, libdnnl-dev, zlib1g-dev, libjpeg-dev, libpng-dev, libprotobuf-dev, libgrpc++-dev, libopenmpi-dev, libcpp-httplib-dev")
  include(CPack)
endmacro()
