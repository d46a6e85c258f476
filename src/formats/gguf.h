/* gguf.h - GGUF constants shared by the writer and the reader (ggml's gguf.h values). */
#ifndef ANDREA_FORMATS_GGUF_H
#define ANDREA_FORMATS_GGUF_H

#define ANDREA_GGUF_MAGIC "GGUF"
#define ANDREA_GGUF_VERSION 3
#define ANDREA_GGUF_ALIGN 32

enum {
    ANDREA_GGUF_U8 = 0, ANDREA_GGUF_I8 = 1, ANDREA_GGUF_U16 = 2, ANDREA_GGUF_I16 = 3,
    ANDREA_GGUF_U32 = 4, ANDREA_GGUF_I32 = 5, ANDREA_GGUF_F32 = 6, ANDREA_GGUF_BOOL = 7,
    ANDREA_GGUF_STRING = 8, ANDREA_GGUF_ARRAY = 9, ANDREA_GGUF_U64 = 10, ANDREA_GGUF_I64 = 11,
    ANDREA_GGUF_F64 = 12, ANDREA_GGUF_NTYPES = 13
};
/* ggml tensor types we read and write */
enum { ANDREA_GGML_F32 = 0, ANDREA_GGML_F16 = 1, ANDREA_GGML_Q4_0 = 2, ANDREA_GGML_Q8_0 = 8 };
/* llama.cpp's token types */
enum { ANDREA_GGUF_TOKEN_NORMAL = 1, ANDREA_GGUF_TOKEN_CONTROL = 3 };

#endif
