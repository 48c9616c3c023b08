# get_source_info(path revision repository): the git commit of `path`, as llvm-project's
# llvm/cmake/modules/VersionFromVCS.cmake does it (git rev-parse HEAD; the repository is
# named only when it is upstream, else "forked repository", else the path).

function(get_source_info path revision repository)
  find_package(Git QUIET)
  if(NOT GIT_FOUND)
    message(WARNING "Git not found. Version cannot be determined.")
    return()
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD
    WORKING_DIRECTORY ${path}
    RESULT_VARIABLE git_result
    OUTPUT_VARIABLE git_output
    ERROR_QUIET)
  if(NOT git_result EQUAL 0)
    return()
  endif()
  string(STRIP "${git_output}" git_output)
  set(${revision} ${git_output} PARENT_SCOPE)
  execute_process(COMMAND ${GIT_EXECUTABLE} remote get-url origin
    WORKING_DIRECTORY ${path}
    RESULT_VARIABLE git_result
    OUTPUT_VARIABLE git_output
    ERROR_QUIET)
  if(git_result EQUAL 0)
    string(FIND "${git_output}" "github.com/llvm/llvm-project" git_upstream)
    if(git_upstream GREATER_EQUAL 0)
      set(${repository} "https://github.com/llvm/llvm-project" PARENT_SCOPE)
    else()
      set(${repository} "forked repository" PARENT_SCOPE)
    endif()
  else()
    set(${repository} ${path} PARENT_SCOPE)
  endif()
endfunction()

# find_first_existing_vc_file(path out_var): the file whose change means a new commit
# (.git/logs/HEAD), or "" without a repository (a `git archive` has none).
function(find_first_existing_vc_file path out_var)
  set(${out_var} "" PARENT_SCOPE)
  find_package(Git QUIET)
  if(NOT GIT_FOUND)
    return()
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-dir
    WORKING_DIRECTORY ${path}
    RESULT_VARIABLE git_result
    OUTPUT_VARIABLE git_output
    ERROR_QUIET)
  if(git_result EQUAL 0)
    string(STRIP "${git_output}" git_output)
    get_filename_component(git_dir ${git_output} ABSOLUTE BASE_DIR ${path})
    if(NOT EXISTS "${git_dir}/logs/HEAD")
      execute_process(COMMAND ${CMAKE_COMMAND} -E touch HEAD
        WORKING_DIRECTORY "${git_dir}/logs"
        RESULT_VARIABLE touch_head_result
        ERROR_QUIET)
    endif()
    if(EXISTS "${git_dir}/logs/HEAD")
      set(${out_var} "${git_dir}/logs/HEAD" PARENT_SCOPE)
    endif()
  endif()
endfunction()
