# lib.sh - shared helpers for the CLI tests (sourced, not run).
set -u
: "${ANDREA_BIN:?ANDREA_BIN must point to the andrea program}"
ANDREA_TMP=${ANDREA_TMP:-$(mktemp -d)}
rm -rf "$ANDREA_TMP" && mkdir -p "$ANDREA_TMP"
FAILS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# need_corpus VAR NAME: sets VAR to the corpus's path, or ends the test with 77 (skip).
# It runs in the test's own shell: `x=$(need_corpus ...)` would exit only a subshell and
# go on with an empty path.
need_corpus() {
    local p="${ANDREA_DATA_DIR:-}/$2"
    if [ ! -f "$p" ]; then
        echo "skip: corpus $p not found (set ANDREA_DATA_DIR)" >&2
        [ "$FAILS" -eq 0 ] || finish # a skip must not hide the checks that already failed
        exit 77
    fi
    printf -v "$1" '%s' "$p"
}

# need_text VAR: English text for the end-to-end tests, so that a clone without ../shared
# still runs them: tinyshakespeare.txt from ANDREA_DATA_DIR when it is there (TEXT_KIND=
# tinyshakespeare: tests keep their exact expectations), else the text of Debian's fortunes
# package, which scripts/setup.sh installs (TEXT_KIND=fortunes, 2.5 MB of English; joined
# once per test as scripts/demo.sh does, in a fixed file order); else the test skips.
TEXT_KIND=
need_text() {
    local p="${ANDREA_DATA_DIR:-}/tinyshakespeare.txt" f="$ANDREA_TMP/fortunes.txt"
    if [ -f "$p" ]; then
        TEXT_KIND=tinyshakespeare
        printf -v "$1" '%s' "$p"
        return
    fi
    if [ -d "${ANDREA_FORTUNES:-/usr/share/games/fortunes}" ]; then
        find "${ANDREA_FORTUNES:-/usr/share/games/fortunes}" -maxdepth 1 -type f ! -name '*.dat' \
            ! -name '*.u8' -print0 | sort -z | xargs -0 cat | grep -v '^%$' > "$f" || true
    fi
    if [ -s "$f" ]; then
        echo "note: $p not found; using the fortunes text ($(wc -c < "$f") bytes)"
        TEXT_KIND=fortunes
        printf -v "$1" '%s' "$f"
        return
    fi
    echo "skip: no text: $p not found and no fortunes (scripts/setup.sh installs them)" >&2
    [ "$FAILS" -eq 0 ] || finish
    exit 77
}

# need_gate: the honest gate's word list (wamerican) and reference text (fortunes), or the
# test skips (77) with one line.
need_gate() {
    if [ ! -r /usr/share/dict/american-english ] && [ -z "${ANDREA_WORDS:-}" ]; then
        echo "skip: no word list (apt-get install wamerican)" >&2; exit 77
    fi
    if [ ! -d /usr/share/games/fortunes ] && [ -z "${ANDREA_REFERENCE:-}" ]; then
        echo "skip: no reference text (apt-get install fortunes)" >&2; exit 77
    fi
}

# expect_error NAME PATTERN CMD... : non-zero exit, exactly one stderr line matching PATTERN
expect_error() {
    local name=$1 pattern=$2; shift 2
    local err="$ANDREA_TMP/stderr.txt" rc=0
    "$@" > /dev/null 2> "$err" || rc=$?
    local lines; lines=$(wc -l < "$err")
    if [ "$rc" -eq 0 ]; then fail "$name: exit 0, expected an error"; return; fi
    if [ "$lines" -ne 1 ]; then fail "$name: $lines stderr lines, expected 1: $(cat "$err")"; return; fi
    if ! grep -q -- "$pattern" "$err"; then fail "$name: stderr '$(cat "$err")' lacks '$pattern'"; return; fi
    pass "$name (exit $rc): $(cat "$err")"
}

# step losses of a log.jsonl, one per line
step_losses() { grep '"type":"step"' "$1" | sed 's/.*"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/'; }

finish() {
    if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed"; exit 1; fi
    echo "all checks passed"
}
