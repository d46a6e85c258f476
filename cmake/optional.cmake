# Optional dependencies. Each one is probed, reported, and can be turned off.
#
# PCRE2 (libpcre2-dev): GPT-2's pre-tokenization regex with Unicode categories.
#   Without it: no gpt2 or bpe tokenizers (a clear error when one is asked for).
# jansson (libjansson-dev): encoder.json, harris_segments.json and JSONL chat files.
#   Without it: no gpt2 loading, no Harris JSON import/export, no JSONL in `andrea prepare`.
option(ANDREA_PCRE2 "Use PCRE2 for GPT-2 pre-tokenization" ON)
option(ANDREA_JANSSON "Use jansson for JSON (encoder.json, harris_segments.json, JSONL)" ON)

find_package(PkgConfig QUIET)

if(ANDREA_PCRE2 AND PKG_CONFIG_FOUND)
  pkg_check_modules(ANDREA_PCRE2_PC QUIET IMPORTED_TARGET libpcre2-8)
endif()
if(ANDREA_PCRE2_PC_FOUND)
  target_link_libraries(andrea_lib PUBLIC PkgConfig::ANDREA_PCRE2_PC)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_PCRE2=1)
  message(STATUS "andrea: PCRE2: yes (${ANDREA_PCRE2_PC_VERSION})")
elseif(NOT ANDREA_PCRE2)
  message(STATUS "andrea: PCRE2: no (ANDREA_PCRE2=OFF; gpt2/bpe tokenizers disabled)")
else()
  message(STATUS "andrea: PCRE2: no (libpcre2-8 not found; apt install libpcre2-dev; gpt2/bpe tokenizers disabled)")
endif()

if(ANDREA_JANSSON AND PKG_CONFIG_FOUND)
  pkg_check_modules(ANDREA_JANSSON_PC QUIET IMPORTED_TARGET jansson)
endif()
if(ANDREA_JANSSON_PC_FOUND)
  target_link_libraries(andrea_lib PUBLIC PkgConfig::ANDREA_JANSSON_PC)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_JANSSON=1)
  message(STATUS "andrea: jansson: yes (${ANDREA_JANSSON_PC_VERSION})")
elseif(NOT ANDREA_JANSSON)
  message(STATUS "andrea: jansson: no (ANDREA_JANSSON=OFF; no GPT-2 files, Harris JSON or JSONL)")
else()
  message(STATUS "andrea: jansson: no (not found; apt install libjansson-dev; no GPT-2 files, Harris JSON or JSONL)")
endif()

# libpng (libpng-dev): PNG heatmaps (andrea_attention_render_png, `andrea attention --png`,
#   and the tests that read them back).
#   Without it: the PNG renderers return -1 ("built without libpng") and --png stops with a
#   clear error; text, JSON and HTML output still work.
option(ANDREA_PNG "Use libpng for attention heatmaps" ON)
if(ANDREA_PNG)
  find_package(PNG QUIET)
endif()
if(ANDREA_PNG AND PNG_FOUND)
  target_link_libraries(andrea_lib PUBLIC PNG::PNG)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_PNG=1)
  message(STATUS "andrea: libpng: yes (${PNG_VERSION_STRING})")
elseif(NOT ANDREA_PNG)
  message(STATUS "andrea: libpng: no (ANDREA_PNG=OFF; attention --png disabled)")
else()
  message(STATUS "andrea: libpng: no (not found; apt install libpng-dev; attention --png disabled)")
endif()

# OpenBLAS (libopenblas-dev): optional sgemm backend for the large training matmuls
# (ANDREA_BLAS=ON). Without it our own AVX-512/AVX2 kernels run everything.
option(ANDREA_BLAS "Use OpenBLAS's sgemm for large matmuls when found" ON)
if(ANDREA_BLAS AND PKG_CONFIG_FOUND)
  pkg_check_modules(ANDREA_OPENBLAS_PC QUIET IMPORTED_TARGET openblas)
endif()
if(ANDREA_OPENBLAS_PC_FOUND)
  target_link_libraries(andrea_lib PUBLIC PkgConfig::ANDREA_OPENBLAS_PC)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_BLAS=1)
  message(STATUS "andrea: BLAS: OpenBLAS ${ANDREA_OPENBLAS_PC_VERSION}")
elseif(NOT ANDREA_BLAS)
  message(STATUS "andrea: BLAS: no (ANDREA_BLAS=OFF; built-in matmul kernels)")
else()
  message(STATUS "andrea: BLAS: no (openblas not found; apt install libopenblas-dev; built-in matmul kernels)")
endif()

# libmicrohttpd (libmicrohttpd-dev): the HTTP library of `andrea serve` (src/server/, which
#   also needs jansson for request bodies). Without it: `andrea serve` says the build has no
#   server; everything else is unchanged.
option(ANDREA_SERVER "Build the HTTP server (andrea serve) with libmicrohttpd" ON)
if(ANDREA_SERVER AND PKG_CONFIG_FOUND)
  pkg_check_modules(ANDREA_MHD_PC QUIET IMPORTED_TARGET libmicrohttpd)
endif()
set(ANDREA_SERVER_BUILD OFF)
if(ANDREA_MHD_PC_FOUND AND ANDREA_JANSSON_PC_FOUND)
  set(ANDREA_SERVER_BUILD ON)
  message(STATUS "andrea: server: yes (libmicrohttpd ${ANDREA_MHD_PC_VERSION})")
elseif(NOT ANDREA_SERVER)
  message(STATUS "andrea: server: no (ANDREA_SERVER=OFF; no andrea serve)")
elseif(NOT ANDREA_MHD_PC_FOUND)
  message(STATUS "andrea: server: no (libmicrohttpd not found; apt install libmicrohttpd-dev; no andrea serve)")
else()
  message(STATUS "andrea: server: no (needs jansson too; apt install libjansson-dev; no andrea serve)")
endif()

# MPI (libopenmpi-dev + openmpi-bin): data-parallel training, `mpirun -np N andrea train`
#   (src/parallel/dist_mpi.c, docs/distributed.md).
#   Without it: andrea trains as one process; started by mpirun it says it has no MPI.
option(ANDREA_MPI "Use MPI for data-parallel training under mpirun" ON)
if(ANDREA_MPI)
  find_package(MPI QUIET COMPONENTS C)
endif()
if(ANDREA_MPI AND MPI_C_FOUND)
  target_link_libraries(andrea_lib PUBLIC MPI::MPI_C)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_MPI=1)
  message(STATUS "andrea: MPI: yes (MPI ${MPI_C_VERSION})")
elseif(NOT ANDREA_MPI)
  message(STATUS "andrea: MPI: no (ANDREA_MPI=OFF; one process only)")
else()
  message(STATUS "andrea: MPI: no (not found; apt install libopenmpi-dev openmpi-bin; one process only)")
endif()
