# Compiles every GLSL compute shader with glslc (tracking #include dependencies
# through depfiles), validates the SPIR-V with spirv-val, and embeds the words
# into an object library that defines oa::detail::embedded_shaders().
function(oa_embed_shaders target shader_root sources)
  set(embed_script ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/EmbedSpirv.cmake)
  set(outputs)
  set(gen_dir ${PROJECT_BINARY_DIR}/shaders)
  foreach(src IN LISTS sources)
    file(RELATIVE_PATH rel ${shader_root} ${src})
    string(REGEX REPLACE "\\.comp$" "" name ${rel})
    set(spv ${gen_dir}/${name}.spv)
    get_filename_component(spv_dir ${spv} DIRECTORY)
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${spv_dir}
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -I ${shader_root} -MD -MF ${spv}.d -o ${spv} ${src}
      COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv}
      DEPENDS ${src}
      DEPFILE ${spv}.d
      COMMENT "glslc ${rel}"
      VERBATIM)
    list(APPEND outputs ${spv})
    list(APPEND names ${name})
  endforeach()
  set(embed_cpp ${gen_dir}/embedded_shaders.cpp)
  add_custom_command(
    OUTPUT ${embed_cpp}
    COMMAND ${CMAKE_COMMAND} -DGEN_DIR=${gen_dir} "-DNAMES=${names}" -DOUT=${embed_cpp}
            -P ${embed_script}
    DEPENDS ${outputs} ${embed_script}
    COMMENT "embedding SPIR-V"
    VERBATIM)
  add_library(${target} OBJECT ${embed_cpp})
  target_compile_features(${target} PRIVATE cxx_std_20)
endfunction()
