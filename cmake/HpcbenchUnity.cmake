# Unity build of the project's libraries (HPCBENCH_UNITY_BUILD): each library's
# .cpp files are compiled a batch at a time, as one translation unit that
# includes them, instead of one compile each. Most of a compile here is LibTorch's
# and the standard library's inline code, which every translation unit
# instantiates and optimises again; a batch does it once.
#
# Not CMake's UNITY_BUILD: in CMake 3.25 its generated files include the
# sources by absolute path, so the preprocessed text differs between two
# clones and ccache (CCACHE_BASEDIR) could not share compiles between them,
# nor between the main build and the staged-headers build of the tests. These
# batch files include their sources by a path relative to the batch file.
#
# A source stays out of the batches with the source property
# SKIP_UNITY_BUILD_INCLUSION (say why beside it), as do sources with a
# compile definition or option of their own.
#
# The batch size: HPCBENCH_UNITY_BATCH .cpp files per translation unit at
# most; a library of N files gets ceil(N / HPCBENCH_UNITY_BATCH) batches of
# nearly equal size. The hpcbench target from cold on 2 cores (compile
# CPU-seconds): one file a unit 1017, batches of 8 389, of 16 363; with 16 the
# ~30 units still keep both cores busy to the end (the longest is ~30 s). A
# smaller batch recompiles less after an edit; HPCBENCH_UNITY_BUILD=OFF none.
# Every library compiles as a single batch too (no names clash between its
# files' anonymous namespaces): -DHPCBENCH_UNITY_BATCH=1000 checks that.
option(HPCBENCH_UNITY_BUILD "Compile each library's sources in batches (unity build): a cold build in a fraction of the time" ON)
set(HPCBENCH_UNITY_BATCH 16 CACHE STRING "Most .cpp files in one unity batch")

# Cold files (lib/CMakeLists.txt, hpcbench_cold_sources) at -O0 and without
# the precompiled LibTorch header. FILES are the cold batch, or the sources
# themselves in a build without batches.
function(hpcbench_cold_options target group)
  cmake_parse_arguments(C "" "" "FILES" ${ARGN})
  if(NOT HPCBENCH_COLD_O1 OR NOT C_FILES OR NOT group STREQUAL "cold")
    return()
  endif()
  set_source_files_properties(${C_FILES} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON
    COMPILE_OPTIONS "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release,RelWithDebInfo>>:-O0>")
endfunction()

# Called once the whole tree is read (cmake_language(DEFER)), so that sources
# added to a library after its add_library are batched too. A library's cold
# files are batched apart from the rest.
function(hpcbench_unity_target target)
  get_target_property(srcs ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  set(unity)
  set(cold)
  foreach(s ${srcs})
    if(NOT s MATCHES "\\.cpp$")
      continue()
    endif()
    get_filename_component(abs ${s} ABSOLUTE BASE_DIR ${dir})
    get_source_file_property(is_cold ${abs} TARGET_DIRECTORY ${target} HPCBENCH_COLD)
    if(is_cold)
      set(group cold)
    else()
      set(group unity)
    endif()
    get_source_file_property(skip ${abs} TARGET_DIRECTORY ${target} SKIP_UNITY_BUILD_INCLUSION)
    get_source_file_property(defs ${abs} TARGET_DIRECTORY ${target} COMPILE_DEFINITIONS)
    get_source_file_property(opts ${abs} TARGET_DIRECTORY ${target} COMPILE_OPTIONS)
    get_source_file_property(gen ${abs} TARGET_DIRECTORY ${target} GENERATED)
    if(NOT HPCBENCH_UNITY_BUILD OR skip OR defs OR opts OR gen)
      # Compiled alone; a cold one with an option of its own keeps it.
      if(NOT opts)
        hpcbench_cold_options(${target} ${group} FILES ${abs})
      endif()
      continue()
    endif()
    list(APPEND ${group} ${abs})
  endforeach()
  foreach(group unity cold)
    hpcbench_unity_batches(${target} ${group} ${${group}})
  endforeach()
  # GCC's -Wsubobject-linkage (on by default) is for a class defined in a
  # header, which other translation units include too, that holds a type of
  # an anonymous namespace. Here the "header" is a .cpp, in this one batch only.
  if(HPCBENCH_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# One group's batches: <target>_<group>_<i>.cpp in the target's unity folder.
function(hpcbench_unity_batches target group)
  set(batched ${ARGN})
  list(LENGTH batched n)
  if(n LESS 2)
    hpcbench_cold_options(${target} ${group} FILES ${batched})
    return()
  endif()
  # HPCBENCH_UNITY_SPLIT (a target property, say 3): batches that many times
  # smaller than HPCBENCH_UNITY_BATCH, for a library whose few files compile
  # slowly (each includes much) and would otherwise be one long unit that
  # one core compiles at the end of a build while the other waits.
  get_target_property(split ${target} HPCBENCH_UNITY_SPLIT)
  set(batch ${HPCBENCH_UNITY_BATCH})
  if(split GREATER 1)
    math(EXPR batch "(${batch} + ${split} - 1) / ${split}")
  endif()
  math(EXPR batches "(${n} + ${batch} - 1) / ${batch}")
  get_target_property(bin ${target} BINARY_DIR)
  set(out_dir ${bin}/unity)
  set(unity_sources)
  math(EXPR last "${batches} - 1")
  foreach(b RANGE ${last})
    set(text "// Generated by cmake/HpcbenchUnity.cmake: one unity batch of ${target}.\n")
    # Files [b * n / batches, (b + 1) * n / batches): neighbours (one folder's
    # files, which share most of their includes) together, and batch sizes
    # that differ by one at most.
    math(EXPR i "${b} * ${n} / ${batches}")
    math(EXPR end "(${b} + 1) * ${n} / ${batches}")
    while(i LESS end)
      list(GET batched ${i} abs)
      file(RELATIVE_PATH rel ${out_dir} ${abs})
      string(APPEND text "#include \"${rel}\"\n")
      math(EXPR i "${i} + 1")
    endwhile()
    set(f ${out_dir}/${target}_${group}_${b}.cpp)
    # Written only when the text changes, so that reconfiguring rebuilds nothing.
    file(CONFIGURE OUTPUT ${f} CONTENT "${text}" @ONLY)
    list(APPEND unity_sources ${f})
  endforeach()
  set_source_files_properties(${batched} TARGET_DIRECTORY ${target} PROPERTIES HEADER_FILE_ONLY ON)
  target_sources(${target} PRIVATE ${unity_sources})
  hpcbench_cold_options(${target} ${group} FILES ${unity_sources})
endfunction()

# Every static library of the project (lib/ and apps/), but the precompiled
# header's carrier and the generated protobuf code.
# Without batches (HPCBENCH_UNITY_BUILD=OFF) it still gives the cold files
# their level.
function(hpcbench_unity_all)
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs d)
    get_property(sub DIRECTORY ${d} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${sub})
    get_property(targets DIRECTORY ${d} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "STATIC_LIBRARY" AND t MATCHES "^hpcbench_" AND NOT t MATCHES "_pch$|_proto$|_cuda$"
         AND d MATCHES "^${CMAKE_SOURCE_DIR}/(lib|apps)(/|$)")
        hpcbench_unity_target(${t})
      endif()
    endforeach()
  endwhile()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL hpcbench_unity_all)
