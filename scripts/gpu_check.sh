#!/usr/bin/env bash
# The book's GPU check (issue 22; README, "In Colab"): run on a machine with CUDA, from the root of a
# clean checkout of a commit, with the book's Python packages importable:
#
#     bash scripts/gpu_check.sh OUTDIR [CHAPTER.ipynb]
#
# It does three things, each bounded in time, and writes every log under OUTDIR (GPU_CHECK_DEVICE=cpu
# makes it a dry run on a CPU-only machine; GPU_CHECK_LIMIT_S, GPU_CHECK_BUDGET_S and GPU_SMOKE_JOBS
# bound the time, see below):
#   1. the paper-path smoke run of every chapter with a paper scale of its own (tests/test_paper_smoke.py's
#      list) with REPRO_DEVICE=cuda, GPU_SMOKE_JOBS at a time: the check that no paper-only cell mixes a
#      CPU tensor with a CUDA one, which a CPU-only CI cannot see (smoke-<stem>.log, smoke.tsv);
#   2. while 1 runs, one chapter (default: chapter 10's first section) end to end at REPRO_SCALE=paper,
#      REPRO_DEVICE=auto (so CUDA): its executed notebook, results/<chapter>/paper.json and paper.log;
#   3. then, alone on the machine, the time per optimisation step of the paper-scale models on CUDA and
#      on the CPU (scripts/paper_step_times.py; step_times_cuda.json, step_times_cpu.json).
# The exit status is 0 only if all three passed. Nothing here is needed by CI or by a reader.
# Issue 36's check of the device programs (lib.device_step) and of every paper model's step times in the
# modes host / eager / graph is the shorter scripts/gpu_steps.sh OUTDIR (at most 6 minutes); part 3 here
# measures the default mode only (graph on CUDA).
set -u
OUT=${1:?usage: bash scripts/gpu_check.sh OUTDIR [CHAPTER.ipynb]}
CHAPTER=${2:-chapters/10_optimization_landscape.ipynb}
PY=${PYTHON:-python3}
JOBS=${GPU_SMOKE_JOBS:-6}
LIMIT=${GPU_CHECK_LIMIT_S:-300}   # each of the three parts is stopped after this many seconds
DEVICE=${GPU_CHECK_DEVICE:-cuda}  # cpu: a dry run of this script on a machine without CUDA
BUDGET=${GPU_CHECK_BUDGET_S:-45}  # measuring time of paper_step_times.py per device
mkdir -p "$OUT/nb" "$OUT/smoke"
export PYTHONUNBUFFERED=1
unset REPRO_SCALE REPRO_PAPER_SMOKE REPRO_DEVICE REPRO_SEED MPLBACKEND  # the kernels draw inline figures

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PY" -c "import torch, platform; print('python', platform.python_version(), 'torch', torch.__version__,
'cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
  git rev-parse HEAD 2>/dev/null && git status --porcelain --untracked-files=no | head; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# 1. paper-path smoke runs on CUDA, in the background
stems=$("$PY" -c "from tests.test_paper_smoke import declared_scales
print(' '.join(stem for stem, found in declared_scales().items() if found and found[1]))")
echo "smoke chapters: $stems"
smoke_one() {  # stem -> one line of smoke.tsv: stem, exit status, seconds
  local start=$(date +%s)
  REPRO_DEVICE=$DEVICE timeout "$LIMIT" "$PY" -m lib.run --paper-smoke --out "$OUT/smoke" "chapters/$1.ipynb" \
    > "$OUT/smoke-$1.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$1" "$rc" "$(( $(date +%s) - start ))"
}
export -f smoke_one; export OUT PY LIMIT DEVICE
( printf '%s\n' $stems | xargs -P "$JOBS" -I{} bash -c 'smoke_one {}' > "$OUT/smoke.tsv" ) &
smoke_pid=$!

# 2. one chapter at paper scale (REPRO_DEVICE=auto: CUDA at paper scale)
start=$(date +%s)
REPRO_SCALE=paper timeout "$LIMIT" "$PY" -m lib.run --out "$OUT/nb" "$CHAPTER" > "$OUT/paper.log" 2>&1; paper_rc=$?
echo "paper run of $CHAPTER: exit $paper_rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/paper.log"
cp results/*/paper.json "$OUT/" 2>/dev/null

wait "$smoke_pid"
smoke_failed=$(awk -F'\t' '$2 != 0' "$OUT/smoke.tsv")

# 3. time per step of the paper models, on the device then on the CPU (one thread), alone on the machine
timeout "$LIMIT" "$PY" scripts/paper_step_times.py --device "$DEVICE" --budget "$BUDGET" --json "$OUT/step_times_$DEVICE.json" \
  > "$OUT/step_times.log" 2>&1; steps_rc=$?
REPRO_THREADS=1 timeout "$LIMIT" "$PY" scripts/paper_step_times.py --device cpu --budget "$BUDGET" \
  --json "$OUT/step_times_cpu.json" >> "$OUT/step_times.log" 2>&1 || steps_rc=$?

echo "smoke runs (stem, exit, s):"; cat "$OUT/smoke.tsv"
echo "step times exit $steps_rc; paper run exit $paper_rc; failed smoke runs: ${smoke_failed:-none}"
[ -z "$smoke_failed" ] && [ "$steps_rc" = 0 ] && [ "$paper_rc" = 0 ]
