#!/usr/bin/env bash
# test_symbols.sh - libandrea.a links beside other code: every global symbol it defines
# carries the andrea_ prefix (read_file, matmul_forward, utf8_decode once clashed), and
# the library never prints: no stdio output call outside the front ends.
. "$(dirname "$0")/lib.sh"
: "${ANDREA_LIB:?ANDREA_LIB must point to libandrea.a}"
command -v nm > /dev/null || { echo "skip: nm not found" >&2; exit 77; }

# names the compiler makes (__odr_asan.* under ASan, __sancov_*) are not ours
bad=$(nm -g --defined-only "$ANDREA_LIB" | awk 'NF == 3 { print $3 }' | grep -v '^andrea_' |
      grep -v '^__' | sort -u)
if [ -n "$bad" ]; then fail "unprefixed global symbols: $(echo $bad)"
else pass "every global symbol of $(basename "$ANDREA_LIB") starts with andrea_"; fi
n=$(nm -g --defined-only "$ANDREA_LIB" | awk 'NF == 3' | wc -l)
[ "$n" -gt 50 ] && pass "$n global symbols checked" || fail "only $n global symbols: wrong file?"

# printing belongs to the CLI: the library calls no stdout printer and never names
# stdout or stderr (it writes only to a FILE* or buffer its caller passes)
printers='^(printf|puts|putchar|vprintf|perror|stdout|stderr)$'
used=$(nm -u "$ANDREA_LIB" | awk '{ print $2 }' | sed 's/@.*//' | grep -E "$printers" | sort -u)
if [ -n "$used" ]; then fail "the library prints: it calls $(echo $used)"
else pass "the library uses none of printf, puts, putchar, vprintf, perror, stdout, stderr"; fi
finish
