# One folder under src/ = one library = one namespace (dstream::<name>).
# dstream_library(NAME SOURCES ... DEPS ...) builds dstream_<name>, aliases it as
# dstream::<name> and applies the project's warnings.
function(dstream_warnings target)
  # -Wno-mismatched-new-delete: Boost 1.74's awaitable frames use their own
  # sized operator delete, which GCC 12 reports at every coroutine (clang, for
  # the fuzz targets, has no such warning).
  # The C++-only options are not given to C sources (src/replication/raft/).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wno-missing-field-initializers
                                           $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
                                           $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-mismatched-new-delete>)
endfunction()

function(dstream_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  set(target dstream_${name})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(dstream::${name} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${ARG_DEPS})
  dstream_warnings(${target})
endfunction()
