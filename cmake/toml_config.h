// toml++'s configuration for tern: TOML_CONFIG_HEADER names this file for every target
// (CMakeLists.txt), so every file that includes toml++ sees the same settings.
//
// toml++'s internal assertions are off. toml++ 3.3 asserts on some input that its parser then
// reports as an ordinary parse error when assertions are off (a table header "[(model]" trips
// parse_key's TOML_ASSERT_ASSUME), and tern's Release build keeps assert() (no NDEBUG): a config
// or schema file with such a line aborted the process (SIGABRT) instead of naming the line. Found
// by tern/pipeline/schema_fuzz.cc.
#pragma once

#define TOML_ASSERT(expr) static_assert(true)
