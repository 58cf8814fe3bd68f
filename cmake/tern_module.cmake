# tern_module(<name> DIR <folder> DEPS <modules...> [PRIVATE_DEPS <libs...>])
# One CMake target per folder under tern/ (tern_<name>): sources are the folder's *.cc files
# except *_test.cc and *_fuzz.cc; tests are the folder's *_test.cc files, built into one gtest
# binary per module and registered with CTest; *_fuzz.cc files become fuzz targets.
# The library is static (shared with BUILD_SHARED_LIBS), installed and exported as tern::<name>,
# and linked into the umbrella target tern::tern (cmake/tern_install.cmake).
function(tern_module name)
  cmake_parse_arguments(M "" "DIR" "DEPS;PRIVATE_DEPS;TEST_DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${M_DIR}/*.cc ${M_DIR}/analysis/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_(test|fuzz)\\.cc$")
  add_library(tern_${name} ${srcs})
  target_include_directories(tern_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                 $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(tern_${name} PUBLIC cxx_std_20)
  target_link_libraries(tern_${name} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  tern_install_module(${name} ${M_DIR})
  if(TERN_BUILD_TESTS)
    file(GLOB tests CONFIGURE_DEPENDS ${M_DIR}/*_test.cc ${M_DIR}/analysis/*_test.cc)
    if(tests)
      add_executable(tern_${name}_test ${tests})
      target_link_libraries(tern_${name}_test PRIVATE tern_${name} ${M_TEST_DEPS} tern_test_support
                            GTest::gtest GTest::gtest_main)
      add_test(NAME ${name} COMMAND tern_${name}_test)
    endif()
  endif()
  tern_fuzz_targets(${name} ${M_DIR})  # *_fuzz.cc, see cmake/tern_fuzz.cmake
endfunction()
