# Install rules: headers, liboa.a and liboa_dist.a, the CMake package
# (find_package(oa) gives oa::oa with its dependencies; its component dist,
# find_package(oa COMPONENTS dist), gives oa::dist linking MPI::MPI_CXX) and
# oa.pc and oa-dist.pc for pkg-config. Both packages locate the prefix from
# their own path, so `cmake --install build --prefix DIR` works.
include(CMakePackageConfigHelpers)

set(OA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/oa)
install(TARGETS oa EXPORT oaTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/oa DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT oaTargets NAMESPACE oa:: DESTINATION ${OA_CMAKE_DIR})
# oa::dist in a file of its own, read only when the component is asked for, so
# that users of oa::oa alone need no MPI.
set_target_properties(oa_dist PROPERTIES EXPORT_NAME dist)
install(TARGETS oa_dist EXPORT oaDistTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT oaDistTargets NAMESPACE oa:: DESTINATION ${OA_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/oaConfig.cmake.in ${PROJECT_BINARY_DIR}/oaConfig.cmake
                              INSTALL_DESTINATION ${OA_CMAKE_DIR})
# Before 1.0 a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/oaConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/oaConfig.cmake ${PROJECT_BINARY_DIR}/oaConfigVersion.cmake
        DESTINATION ${OA_CMAKE_DIR})

set(OA_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH OA_PKGCONFIG_TO_PREFIX /${OA_PKGCONFIG_DIR} /)
string(REGEX REPLACE "/$" "" OA_PKGCONFIG_TO_PREFIX ${OA_PKGCONFIG_TO_PREFIX})
foreach(pc IN ITEMS oa oa-dist)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${OA_PKGCONFIG_DIR})
endforeach()
