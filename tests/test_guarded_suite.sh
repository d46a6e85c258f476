#!/usr/bin/env bash
# test_guarded_suite.sh - the CLI tests again with ANDREA_BACKEND=cpu-guarded, so that every
# model they create or load lives in memory the host cannot touch outside the backend:
# any code path that reads a tensor directly crashes here. (The white-box C tests read
# m->params on purpose and stay on cpu; test_guarded_cli.sh compares outputs with cpu.)
# The longest tests (bench, prepare's safety campaign, the honest gate) are left to the
# main run; they share their model code with those below.
. "$(dirname "$0")/lib.sh"
dir="$(dirname "$0")"
for t in train train_resume train_tokenizers chat serve serve_api serve_structured formats_cli \
         flat_cli attn_cli attn_views cli_errors run_folders divergence_cli curriculum gate_cli \
         backend_cli demo mpi; do
    [ -f "$dir/test_$t.sh" ] || { fail "test_$t.sh is missing"; continue; }
    rc=0
    ANDREA_BACKEND=cpu-guarded ANDREA_TMP="$ANDREA_TMP/$t" bash "$dir/test_$t.sh" \
        > "$ANDREA_TMP/$t.log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then pass "test_$t.sh on cpu-guarded"
    elif [ "$rc" -eq 77 ]; then echo "skip: test_$t.sh: $(tail -1 "$ANDREA_TMP/$t.log")"
    else fail "test_$t.sh on cpu-guarded (exit $rc): $(grep -m1 FAIL "$ANDREA_TMP/$t.log")"; fi
done
finish
