# server.cmake - `andrea serve` (src/server/): a front end, built into the andrea program
# (never into the library) when cmake/optional.cmake found libmicrohttpd and jansson.
# Its chat page (src/server/page.html) becomes a C array at build time.
if(NOT ANDREA_SERVER_BUILD)
  return()
endif()
find_package(Threads REQUIRED)
file(GLOB ANDREA_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/server/*.c)
set(ANDREA_PAGE_C ${CMAKE_BINARY_DIR}/generated/serve_page.c)
add_custom_command(OUTPUT ${ANDREA_PAGE_C}
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/src/server/page.html -DOUT=${ANDREA_PAGE_C}
          -DNAME=serve_page_html -P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/src/server/page.html ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
  COMMENT "embedding the server's chat page")
target_sources(andrea PRIVATE ${ANDREA_SERVER_SOURCES} ${ANDREA_PAGE_C})
target_compile_definitions(andrea PRIVATE ANDREA_HAVE_SERVER=1)
target_link_libraries(andrea PRIVATE PkgConfig::ANDREA_MHD_PC Threads::Threads)
