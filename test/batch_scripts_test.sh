#!/usr/bin/env bash
# The batch scripts' decisions, with stand-ins for srun, scontrol, scancel, mpiexec and rudra that
# record what they are given (no Slurm or LSF needed; test/slurm_test.sh runs the real thing):
# every spelling of -o and --resume honoured, a requeued slot resumes the job's own checkpoint,
# the requeue stops after a slot without progress, at the cap and after a failed write, the
# user's --threads-per-rank stands, and hydra gets -disable-auto-cleanup.
# Usage: batch_scripts_test.sh RUDRA_BINARY SOURCE_DIR (the binary is not used: stand-ins run)
. "$(dirname "$0")/harness.sh" "$@"
sbatch_script=$src/tools/slurm/rudra-dist.sbatch
lsf_script=$src/tools/lsf/rudra-dist.lsf
bin=$work/bin
mkdir -p "$bin"
# rudra: `checkpoint DIR --field samples` prints DIR/samples (-1 without it); `dist ARGS` records
# its arguments, then plays what FAKE_DIST says: "ok", "fail5", or "stop N" (the batch system's
# signal to the script, then a checkpoint at N samples and exit 130).
cat >"$bin/rudra" <<'FAKE'
#!/usr/bin/env bash
if [ "$1" = checkpoint ]; then
  [ -f "$2/samples" ] && cat "$2/samples" && exit 0
  echo "$2: no checkpoint there" >&2; exit 1
fi
shift
printf '%s\n' "$@" >"$FAKE_LOG"
out=
for ((i = 1; i <= $#; ++i)); do [ "${!i}" = -o ] && { j=$((i + 1)); out=${!j}; }; done
case $FAKE_DIST in
  ok) exit 0 ;;
  fail5) exit 5 ;;
  stop*) kill -USR1 "$FAKE_SCRIPT_PID"; sleep 0.3; mkdir -p "$out"; echo "${FAKE_DIST#stop }" >"$out/samples"
         echo weights >"$out/checkpoint.rudra"; exit 130 ;;
esac
FAKE
# srun runs the command after its options; scontrol and scancel record their calls.
cat >"$bin/srun" <<'FAKE'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
"$@"
FAKE
printf '#!/usr/bin/env bash\necho "scontrol $*" >>"$FAKE_CALLS"\n' >"$bin/scontrol"
printf '#!/usr/bin/env bash\necho "scancel $*" >>"$FAKE_CALLS"\n' >"$bin/scancel"
printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$@" >"$FAKE_LOG"\n' >"$bin/mpiexec"
chmod +x "$bin"/*
export PATH=$bin:$PATH RUDRA=$bin/rudra FAKE_LOG=$work/args FAKE_CALLS=$work/calls SLURM_SUBMIT_DIR=$work/submit
mkdir -p "$SLURM_SUBMIT_DIR"

# slot RESTART FAKE_DIST ARGS...: the script as Slurm runs it (slot RESTART of job 42); its
# output in $work/slot.out, its exit code in $rc, rudra's arguments in $work/args.
slot() {
  local restart=$1 dist=$2; shift 2
  rm -f "$work/args" "$work/calls"
  ( export SLURM_JOB_ID=42 SLURM_RESTART_COUNT=$restart FAKE_DIST=$dist
    bash -c 'export FAKE_SCRIPT_PID=$$; exec bash "$0" "$@"' "$sbatch_script" "$@" >"$work/slot.out" 2>&1 )
  rc=$?
}
given() { grep -qxF -- "$1" "$work/args"; }
count() { grep -cxF -- "$1" "$work/args"; }

# Every spelling of the output folder, made absolute against the submission directory; once.
for spelling in "-o runs/a" "-oruns/a" "--output runs/a" "--output=runs/a"; do
  # shellcheck disable=SC2086
  slot 0 ok solver.prototxt --epochs 2 $spelling
  [ "$rc" = 0 ] && [ "$(count -o)" = 1 ] && given "$SLURM_SUBMIT_DIR/runs/a" && ! given "runs/a" && pass ||
    { fail "'$spelling': -o $SLURM_SUBMIT_DIR/runs/a once"; cat "$work/args"; }
done
slot 0 ok solver.prototxt
given "$SLURM_SUBMIT_DIR/rudra-dist" && given --threads-per-rank && pass || fail "default output and threads"
slot 0 ok solver.prototxt --threads-per-rank 3
[ "$(count --threads-per-rank)" = 1 ] && given 3 && pass || { fail "the user's --threads-per-rank stands"; cat "$work/args"; }

# The user's --resume on the first slot (its folder the output when -o is not given); on a
# requeued slot, the job's own checkpoint instead.
mkdir -p "$work/old" && echo 100 >"$work/old/samples"
for spelling in "--resume $work/old" "--resume=$work/old"; do
  # shellcheck disable=SC2086
  slot 0 ok $spelling
  [ "$(count --resume)" = 1 ] && given "$work/old" && [ "$(grep -c "^$work/old\$" "$work/args")" = 2 ] && pass ||
    { fail "'$spelling': resumed from and into $work/old"; cat "$work/args"; }
done
rm -rf "$work/new"
slot 0 stop\ 300 --resume "$work/old" -o "$work/new"
[ "$rc" = 130 ] && grep -q "scontrol requeue 42" "$work/calls" && grep -q 'checkpoint written at 300 samples (from 100)' "$work/slot.out" &&
  pass || { fail "first slot: stopped at 300 samples from 100, requeued"; cat "$work/slot.out"; }
slot 1 stop\ 500 --resume "$work/old" -o "$work/new"
given "$work/new" && [ "$(count --resume)" = 1 ] && ! given "$work/old" && grep -q "restart 1): going on from $work/new/checkpoint.rudra" \
  "$work/slot.out" && grep -q "scontrol requeue 42" "$work/calls" && pass ||
  { fail "requeued slot: resumed from the job's own checkpoint, not the older one named"; cat "$work/args" "$work/slot.out"; }
# No progress: the checkpoint is where the slot started. No requeue, and a message.
slot 2 stop\ 500 --resume "$work/old" -o "$work/new"
[ ! -f "$work/calls" ] || ! grep -q "scontrol requeue" "$work/calls" && grep -q "this slot moved the checkpoint no further (at 500 samples" \
  "$work/slot.out" && pass || { fail "no progress: no requeue"; cat "$work/slot.out"; }
# A fresh run stopped before its first update (a checkpoint at 0 samples): no progress either.
rm -rf "$work/fresh"
slot 0 stop\ 0 solver.prototxt -o "$work/fresh"
! grep -q "scontrol requeue" "$work/calls" && grep -q "moved the checkpoint no further (at 0 samples" "$work/slot.out" && pass ||
  { fail "fresh, no progress: no requeue"; cat "$work/slot.out"; }
# The cap.
RUDRA_MAX_REQUEUES=3 slot 3 stop\ 900 solver.prototxt -o "$work/new"
! grep -q "scontrol requeue" "$work/calls" && grep -q "requeued 3 times already (RUDRA_MAX_REQUEUES=3)" "$work/slot.out" && pass ||
  { fail "the cap: no requeue"; cat "$work/slot.out"; }
# A failed write: not requeued, the user told.
slot 1 fail5 solver.prototxt -o "$work/new"
[ "$rc" = 5 ] && grep -q "a file could not be written (exit 5" "$work/slot.out" && [ ! -f "$work/calls" ] && pass ||
  { fail "exit 5: told, not requeued"; cat "$work/slot.out"; }

# LSF through hydra: -disable-auto-cleanup, the user's --threads-per-rank, an empty RUDRA_LAUNCHER.
lsf() { LSB_MCPU_HOSTS="$(hostname) 8" LSB_JOBID=7 MPIEXEC=$bin/mpiexec bash "$lsf_script" "$@" >"$work/lsf.out" 2>&1; rc=$?; }
RUDRA_THREADS=2 lsf solver.prototxt --epochs 1
[ "$rc" = 0 ] && given -disable-auto-cleanup && given 2 && [ "$(count --threads-per-rank)" = 1 ] && ! given -launcher && pass ||
  { fail "lsf: mpiexec -disable-auto-cleanup, 2 threads per rank"; cat "$work/lsf.out" "$work/args"; }
RUDRA_THREADS=2 lsf solver.prototxt --threads-per-rank 1
[ "$(count --threads-per-rank)" = 1 ] && given 1 && grep -q "2 slots and 1 threads per rank" "$work/lsf.out" && pass ||
  { fail "lsf: the user's --threads-per-rank stands"; cat "$work/lsf.out" "$work/args"; }
finish
