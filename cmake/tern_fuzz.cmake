# Fuzz targets: every <module folder>/*_fuzz.cc defines LLVMFuzzerTestOneInput and becomes
# tern_<file stem> (e.g. tern/io/safetensors_fuzz.cc -> tern_safetensors_fuzz), linked with its
# module and registered with CTest as fuzz_<stem> (label "fuzz"). Seed inputs live in
# <module folder>/fuzz_corpus/<stem>/.
#
#   TERN_FUZZ=ON (clang only): coverage-guided libFuzzer with ASan+UBSan on the whole build;
#     `make fuzz` configures build-fuzz, builds the `fuzz` target and runs each for
#     TERN_FUZZ_SECONDS seconds.
#   otherwise (any compiler, with tests): the same file is linked with tests/support/fuzz_main.cc,
#     which replays the seeds and then random mutations of them for TERN_FUZZ_REPLAY_SECONDS, so
#     every `make test` exercises each target (under ASan/UBSan too when TERN_SANITIZE=ON).
option(TERN_FUZZ "Build *_fuzz.cc as libFuzzer targets (clang), with ASan+UBSan everywhere" OFF)
set(TERN_FUZZ_SECONDS 10 CACHE STRING "Seconds each libFuzzer target runs under ctest (TERN_FUZZ=ON)")
set(TERN_FUZZ_REPLAY_SECONDS 2 CACHE STRING "Seconds of random-mutation replay per fuzz target in normal test runs")

if(TERN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TERN_FUZZ=ON needs clang: cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTERN_FUZZ=ON")
  endif()
  add_compile_options(-g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
add_custom_target(fuzz)

# Called by tern_module() for each module folder.
function(tern_fuzz_targets module dir)
  file(GLOB fuzzers CONFIGURE_DEPENDS ${dir}/*_fuzz.cc)
  foreach(src ${fuzzers})
    get_filename_component(stem ${src} NAME_WE)
    set(target tern_${stem})
    set(seeds ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/fuzz_corpus/${stem})
    if(TERN_FUZZ)
      add_executable(${target} ${src})
      target_link_options(${target} PRIVATE -fsanitize=fuzzer)
      # libFuzzer adds what it finds to the first corpus folder: a copy in the build tree.
      set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus/${stem})
      file(MAKE_DIRECTORY ${corpus})
      if(EXISTS ${seeds})
        file(COPY ${seeds}/ DESTINATION ${corpus})
      endif()
      set(args -max_total_time=${TERN_FUZZ_SECONDS} -seed=1 -timeout=10 -rss_limit_mb=2048 ${corpus})
      math(EXPR limit "${TERN_FUZZ_SECONDS} + 60")
    elseif(TERN_BUILD_TESTS)
      add_executable(${target} ${src} ${PROJECT_SOURCE_DIR}/tests/support/fuzz_main.cc)
      set(args --seconds ${TERN_FUZZ_REPLAY_SECONDS} ${seeds})
      math(EXPR limit "${TERN_FUZZ_REPLAY_SECONDS} + 60")
    else()
      continue()
    endif()
    target_link_libraries(${target} PRIVATE tern_${module})
    add_dependencies(fuzz ${target})
    if(TERN_BUILD_TESTS)
      add_test(NAME fuzz_${stem} COMMAND ${target} ${args})
      set_tests_properties(fuzz_${stem} PROPERTIES LABELS fuzz TIMEOUT ${limit})
    endif()
  endforeach()
endfunction()
