#!/usr/bin/env bash
# Issue 36's GPU check of the paper-scale training steps (README, "In Colab"; results/gpu_check/ABOUT.txt):
# run on a machine with CUDA, from the root of a checkout (a .git is not needed), with the book's Python
# packages importable:
#
#     bash scripts/gpu_steps.sh OUTDIR
#
# It takes at most 7 minutes (45 + 300 + 75 s of timeouts; GPU_STEPS_BUDGET_S, GPU_STEPS_CPU_BUDGET_S bound the measuring; every part has
# its own timeout) and writes six small files into OUTDIR (no subfolders):
#   machine.txt            the GPU, driver, Python, torch, commit (if any), cores
#   graph_check.json       scripts/gpu_graph_check.py: the device programs (lib.device_step) against the host
#                          loops on the GPU, in the modes host / eager / graph (05 and 09 must agree; 03 reported)
#   step_times_cuda.json   scripts/paper_step_times.py --device cuda --modes host eager graph --flops: seconds
#   step_times_cuda.md       and process-CPU seconds per step of every paper-scale case, the device programs
#                          side by side with the old host loops, paper-scale estimates and the arithmetic bound
#   step_times_cpu.json    the same on one thread of that machine's CPU, for the cases with a device program
#   steps.log              everything printed on stderr
# GPU_CHECK_DEVICE=cpu is a dry run on a machine without CUDA (modes host and eager; no CPU pass).
# The exit status is 0 only if every part passed. scripts/gpu_check.sh (issue 22's smoke runs) is separate.
set -u
OUT=${1:?usage: bash scripts/gpu_steps.sh OUTDIR}
PY=${PYTHON:-python3}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
BUDGET=${GPU_STEPS_BUDGET_S:-240}        # measuring time of the device pass (its timeout: BUDGET + 60 s)
CPU_BUDGET=${GPU_STEPS_CPU_BUDGET_S:-45} # measuring time of the CPU pass (its timeout: CPU_BUDGET + 30 s)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset REPRO_SCALE REPRO_PAPER_SMOKE REPRO_DEVICE REPRO_SEED REPRO_STEP_MODE REPRO_THREADS
start=$(date +%s)

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PY" -c "import torch, platform; print('python', platform.python_version(), 'torch', torch.__version__,
'cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
  git rev-parse HEAD 2>/dev/null && git status --porcelain --untracked-files=no | head; nproc; } > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# 1. the device programs against the host loops on the device (small shapes; at most 45 s)
timeout 45 "$PY" scripts/gpu_graph_check.py --device "$DEVICE" --json "$OUT/graph_check.json" 2>> "$OUT/steps.log"
check_rc=$?
echo "graph check: exit $check_rc after $(( $(date +%s) - start )) s"

# 2. step times on the device, every case; the device programs in every mode
if [ "$DEVICE" = cuda ]; then modes="host eager graph"; else modes="host eager"; fi
timeout $(( ${BUDGET%.*} + 60 )) "$PY" scripts/paper_step_times.py --device "$DEVICE" --modes $modes --flops \
  --budget "$BUDGET" --json "$OUT/step_times_$DEVICE.json" > "$OUT/step_times_$DEVICE.md" 2>> "$OUT/steps.log"
steps_rc=$?
echo "step times on $DEVICE: exit $steps_rc after $(( $(date +%s) - start )) s"

# 3. the same cases on one CPU thread of this machine (the host loops), for the comparison
cpu_rc=0
if [ "$DEVICE" = cuda ]; then
  REPRO_THREADS=1 timeout $(( ${CPU_BUDGET%.*} + 30 )) "$PY" scripts/paper_step_times.py --device cpu \
    --only "09 deep" "05 six-exit CNN, 1 model" "03 IMDB" "02 Table" "mnist" "batch 100" \
    --budget "$CPU_BUDGET" --json "$OUT/step_times_cpu.json" \
    >> "$OUT/steps.log" 2>&1
  cpu_rc=$?
  echo "step times on the CPU: exit $cpu_rc after $(( $(date +%s) - start )) s"
fi

cat "$OUT/step_times_$DEVICE.md"
echo "graph check exit $check_rc; step times exit $steps_rc (device), $cpu_rc (CPU); $(( $(date +%s) - start )) s in all"
[ "$check_rc" = 0 ] && [ "$steps_rc" = 0 ] && [ "$cpu_rc" = 0 ]
