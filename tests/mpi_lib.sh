# mpi_lib.sh - shared part of the tests that launch ranks under mpirun (sourced after
# lib.sh, not run): skips (77) without mpirun or in a build without MPI, and the
# environment OpenMPI needs as root (CI) and on 2 cores (--oversubscribe, yielding ranks).
command -v mpirun > /dev/null || { echo "skip: mpirun not found (apt install openmpi-bin)" >&2; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
# OpenMPI's plugins keep their allocations to the end (LeakSanitizer cannot name them)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPI="mpirun --oversubscribe"

# mpi_text: the first 100 KB of the machine's text (lib.sh's need_text) as $ANDREA_TMP/d.txt,
# the training data of the short MPI runs
mpi_text() {
    local text
    need_text text
    head -c 100000 "$text" > "$ANDREA_TMP/d.txt"
}

# mpi_probe ARGS...: one short 2-rank training (andrea train ARGS --max-steps 1), or the
# test skips when this andrea was built without MPI
mpi_probe() {
    local rc=0
    $MPI -np 2 "$ANDREA_BIN" train "$@" --max-steps 1 -o "$ANDREA_TMP/probe" 2> "$ANDREA_TMP/probe.err" || rc=$?
    if grep -q "built without MPI" "$ANDREA_TMP/probe.err"; then
        echo "skip: this andrea was built without MPI: $(head -1 "$ANDREA_TMP/probe.err")" >&2; exit 77
    fi
    [ "$rc" -eq 0 ] || { fail "mpirun -np 2 andrea train: exit $rc: $(cat "$ANDREA_TMP/probe.err")"; finish; }
}

# rank1 DIR: the pid of rank 1 of the job writing into folder DIR
rank1() {
    local p
    for p in $(pgrep -f "andrea train.*$1"); do
        tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && echo "$p"
    done
}
# hit SIGNAL DIR: once DIR/ckpt.bin exists, signals rank 1 of the job writing into DIR;
# prints its pid
hit() {
    local i v=""
    for i in $(seq 300); do [ -f "$2/ckpt.bin" ] && break; sleep 0.05; done
    for i in $(seq 50); do v=$(rank1 "$2"); [ -n "$v" ] && break; sleep 0.05; done
    [ -n "$v" ] && kill "-$1" $v && echo "$v"
}
