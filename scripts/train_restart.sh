#!/usr/bin/env bash
# train_restart.sh - runs a training job (under mpirun or not) and, after a failure,
# restarts it from the newest loadable checkpoint in its run folder, at most N times.
#
#   scripts/train_restart.sh [--restarts N] [--resume-flags "FLAGS"] DIR -- LAUNCH...
#
# LAUNCH is the first run's whole command, `mpirun ... andrea train FLAGS -o DIR`; the
# word `train` splits it into the launcher (mpirun ... andrea) and the training flags. A
# restart runs the launcher with `train --resume CKPT -o DIR FLAGS`, FLAGS being
# --resume-flags: the options a checkpoint does not keep (-t, -q, --dist-timeout,
# --backend ...); the model, data and schedule come from the checkpoint. The checkpoint
# is the one of ckpt.bin and step_NNNNNN.bin (--keep-last) with the most trained steps
# that `andrea info` loads. DIR must be where every rank reads the checkpoint: rank 0
# writes it, every rank resumes from that path (docs/distributed.md: a shared folder).
# When DIR already holds a loadable checkpoint, the first attempt resumes it too.
# No restart after exit 0 (done), 130 (stopped by a signal or --stop-at: asked for) or
# 2 (a usage error: a rerun fails the same way). Exit: the last attempt's status.
set -u
restarts=3
resume_flags=""
while [ $# -gt 0 ]; do
    case "$1" in
    --restarts) restarts=$2; shift 2 ;;
    --resume-flags) resume_flags=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
    esac
done
[ $# -ge 3 ] && [ "$2" = "--" ] || { echo "usage: $0 [--restarts N] [--resume-flags FLAGS] DIR -- LAUNCH..." >&2; exit 2; }
case "$restarts" in ''|*[!0-9]*) echo "$0: --restarts '$restarts': expected a number" >&2; exit 2 ;; esac
dir=$1
shift 2
launch=("$@")
launcher=()
for a in "${launch[@]}"; do
    [ "$a" = train ] && break
    launcher+=("$a")
done
[ ${#launcher[@]} -lt ${#launch[@]} ] && [ ${#launcher[@]} -gt 0 ] \
    || { echo "$0: LAUNCH must contain 'andrea train' (got: ${launch[*]})" >&2; exit 2; }
andrea=${launcher[${#launcher[@]}-1]}

# The loadable checkpoint with the most trained steps in $dir: "STEPS PATH", or nothing.
newest() {
    local f s best="" best_s=-1
    for f in "$dir"/ckpt.bin "$dir"/step_*.bin; do
        [ -f "$f" ] || continue
        s=$("$andrea" info -m "$f" 2> /dev/null | sed -n 's/.*trained steps \([0-9]*\).*/\1/p' | head -1)
        [ -n "$s" ] && [ "$s" -gt "$best_s" ] && { best_s=$s; best=$f; }
    done
    [ -n "$best" ] && echo "$best_s $best"
}

attempt=0
while :; do
    ck=$(newest)
    rc=0
    if [ -n "$ck" ]; then
        echo "train_restart: attempt $((attempt + 1)) of $((restarts + 1)): resuming '${ck#* }' (step ${ck%% *})" >&2
        # shellcheck disable=SC2086 # the resume flags are words
        "${launcher[@]}" train --resume "${ck#* }" -o "$dir" $resume_flags || rc=$?
    elif [ "$attempt" -eq 0 ]; then
        "${launch[@]}" || rc=$?
    else
        echo "train_restart: attempt $((attempt + 1)) of $((restarts + 1)): no loadable checkpoint in '$dir': starting again" >&2
        "${launch[@]}" --force || rc=$?
    fi
    case $rc in 0|2|130) exit $rc ;; esac
    attempt=$((attempt + 1))
    if [ "$attempt" -gt "$restarts" ]; then
        echo "train_restart: exit $rc; $restarts restart(s) used up: giving up" >&2
        exit $rc
    fi
    echo "train_restart: the job failed (exit $rc); restarting" >&2
done
