# embed.cmake - turns a file into a C array at build time:
#   cmake -DIN=page.html -DOUT=page.c -DNAME=serve_page_html -P embed.cmake
# gives `const unsigned char NAME[]` (NUL-terminated) and `const size_t NAME_len` (without the NUL).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake: do not edit */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
