# The CUDA backend (src/backend/cuda/, docs/cuda.md): -DANDREA_CUDA=ON builds it into the
# library (nvcc, cuBLAS), for ANDREA_CUDA_ARCH (sm_90: H100/H200 by default).
# OFF (the default in this first landing, since none of it has run on a GPU yet) leaves
# the build exactly as without it. Next step, once device_check.sh passes on a GPU: auto
# (ON when nvcc is found).
option(ANDREA_CUDA "Build the CUDA backend (nvcc, cuBLAS)" OFF)
set(ANDREA_CUDA_ARCH "90" CACHE STRING "CUDA architectures to build for (90 = sm_90)")

if(ANDREA_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${ANDREA_CUDA_ARCH})
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  file(GLOB ANDREA_CUDA_SOURCES CONFIGURE_DEPENDS src/backend/cuda/*.cu)
  add_library(andrea_cuda OBJECT ${ANDREA_CUDA_SOURCES})
  # the directory's C warning flags are not nvcc's: the host compiler gets them through
  # -Xcompiler (not -Wunknown-pragmas: kernels.h's omp simd), and nvcc's own warnings are errors with ANDREA_WERROR
  set_property(TARGET andrea_cuda PROPERTY COMPILE_OPTIONS "")
  target_compile_options(andrea_cuda PRIVATE
    -Xcompiler=-Wall,-Wextra,-Wshadow,-Wno-unused-parameter,-Wno-unknown-pragmas
    $<$<BOOL:${ANDREA_WERROR}>:-Werror=all-warnings -Xcompiler=-Werror>)
  set_target_properties(andrea_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        POSITION_INDEPENDENT_CODE ON)
  target_include_directories(andrea_cuda PRIVATE include src)
  # its objects go into the one library (no link-order cycle between two archives)
  set_target_properties(andrea_lib PROPERTIES CUDA_ARCHITECTURES ${ANDREA_CUDA_ARCH})
  target_sources(andrea_lib PRIVATE $<TARGET_OBJECTS:andrea_cuda>)
  target_link_libraries(andrea_lib PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_CUDA=1)
  # NCCL: data-parallel gradient sums on device buffers (cuda_nccl.cu). The toolkit's, or
  # one under ANDREA_NCCL_ROOT (PyTorch's wheel: site-packages/nvidia/nccl); without it
  # the ranks' sums go through host memory over MPI.
  option(ANDREA_NCCL "Use NCCL for the cuda backend's data-parallel sums" ON)
  set(ANDREA_NCCL_ROOT "" CACHE PATH "Where NCCL's include/ and lib/ are, if not in the toolkit")
  set(andrea_nccl "no (ANDREA_NCCL=OFF)")
  if(ANDREA_NCCL)
    find_path(ANDREA_NCCL_INCLUDE nccl.h HINTS ${ANDREA_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(ANDREA_NCCL_LIBRARY NAMES nccl libnccl.so.2
                 HINTS ${ANDREA_NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
    if(ANDREA_NCCL_INCLUDE AND ANDREA_NCCL_LIBRARY)
      target_include_directories(andrea_cuda PRIVATE ${ANDREA_NCCL_INCLUDE})
      target_compile_definitions(andrea_cuda PRIVATE ANDREA_HAVE_NCCL=1)
      target_link_libraries(andrea_lib PUBLIC ${ANDREA_NCCL_LIBRARY})
      set(andrea_nccl "yes (${ANDREA_NCCL_LIBRARY})")
    else()
      set(andrea_nccl "no (nccl.h or libnccl not found: -DANDREA_NCCL_ROOT=...; sums through host memory)")
    endif()
  endif()
  message(STATUS "andrea: CUDA: yes (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_${ANDREA_CUDA_ARCH}, cuBLAS, cuBLASLt); NCCL: ${andrea_nccl}")
else()
  message(STATUS "andrea: CUDA: no (ANDREA_CUDA=OFF; -DANDREA_CUDA=ON builds the cuda backend)")
endif()

# The CUDA emulator (tests/cuda_emu/): -DANDREA_CUDA_EMU=ON builds src/backend/cuda/ with the
# host C++ compiler against the emulator's CUDA and cuBLAS headers, so that the backend's
# code runs, and its tests run, on a machine without a GPU. A test build only: its "cuda"
# is the CPU, slowly; it says so in its description. Not with ANDREA_CUDA.
option(ANDREA_CUDA_EMU "Test build: run the CUDA backend's code on the CPU (tests/cuda_emu)" OFF)
if(ANDREA_CUDA_EMU)
  if(ANDREA_CUDA)
    message(FATAL_ERROR "andrea: ANDREA_CUDA_EMU and ANDREA_CUDA exclude each other")
  endif()
  enable_language(CXX)
  file(GLOB ANDREA_CUDA_SOURCES CONFIGURE_DEPENDS src/backend/cuda/*.cu)
  set(ANDREA_CUDA_EMU_WRAPPERS "")
  foreach(cu ${ANDREA_CUDA_SOURCES})
    # g++ does not compile .cu files: a .cpp that includes each one
    get_filename_component(stem ${cu} NAME_WE)
    set(wrapper ${CMAKE_BINARY_DIR}/cuda_emu/${stem}.cpp)
    file(WRITE ${wrapper}.in "#include \"${cu}\"\n")
    configure_file(${wrapper}.in ${wrapper} COPYONLY)
    list(APPEND ANDREA_CUDA_EMU_WRAPPERS ${wrapper})
  endforeach()
  add_library(andrea_cuda OBJECT ${ANDREA_CUDA_EMU_WRAPPERS} tests/cuda_emu/cuda_emu.cpp
              tests/cuda_emu/streams_emu.cpp tests/cuda_emu/nccl_emu.cpp
              tests/cuda_emu/cublaslt_emu.cpp)
  set_property(TARGET andrea_cuda PROPERTY COMPILE_OPTIONS "")
  target_compile_options(andrea_cuda PRIVATE -Wall -Wextra -Wshadow -Wno-unused-parameter
    -Wno-unknown-pragmas $<$<BOOL:${ANDREA_WERROR}>:-Werror>)
  set_target_properties(andrea_cuda PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                        POSITION_INDEPENDENT_CODE ON)
  # the emulator's headers stand where the toolkit's would be
  target_include_directories(andrea_cuda BEFORE PRIVATE tests/cuda_emu)
  target_include_directories(andrea_cuda PRIVATE include src)
  target_compile_definitions(andrea_cuda PRIVATE ANDREA_CUDA_EMU=1 ANDREA_HAVE_NCCL=1)
  # the emulator's NCCL runs several ranks over MPI (nccl_emu.cpp)
  if(ANDREA_MPI AND MPI_C_FOUND)
    target_link_libraries(andrea_cuda PRIVATE MPI::MPI_C)
    target_compile_definitions(andrea_cuda PRIVATE ANDREA_HAVE_MPI=1)
  endif()
  target_sources(andrea_lib PRIVATE $<TARGET_OBJECTS:andrea_cuda>)
  target_link_libraries(andrea_lib PUBLIC stdc++)
  target_compile_definitions(andrea_lib PUBLIC ANDREA_HAVE_CUDA=1 ANDREA_CUDA_EMU=1)
  message(STATUS "andrea: CUDA: emulated on the CPU (ANDREA_CUDA_EMU: a test build)")
endif()
