#!/usr/bin/env bash
# On a machine with an NVIDIA GPU that reaches nothing (the device machine): builds llama.cpp with CUDA from the
# pack's trimmed sources, writes random-weight GGUF files with the exact shapes and types of the default target
# and draft and of Qwen2.5-Coder 7B and 14B, measures each target's T(n) for n = 1..17 at a 500-token depth and
# the draft's costs, and writes one cost file per target to OUT (for `tandem bench --costs FILE`).
#   run.sh PACK OUT        (PACK: made here by pack.sh; SIZES="1.5b 7b 14b" by default; REPS=20; DEPTH=500)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PACK=$(cd "${1:?usage: run.sh PACK OUT}" && pwd)
OUT=${2:?usage: run.sh PACK OUT}
SIZES=${SIZES:-1.5b 7b 14b}
REPS=${REPS:-20}
DEPTH=${DEPTH:-500}
WORK=${WORK:-/tmp/tandem-gpu-costs}
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK"
rm -f "$WORK"/*.done
export GGUF_PY="$PACK/llama.cpp/gguf-py"
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 ))s] $*" >&2; }

# the random-weight files are written while llama.cpp builds (both take the processor; the disk is local), each
# marked done as it is finished, so that each target is measured as soon as both are ready: a run cut short by its
# time limit still leaves the cost files of the sizes it reached
say "writing random-weight models: draft 0.5b, targets $SIZES"
(
  "$PY" "$HERE/random_gguf.py" write "$PACK/spec-0.5b.json.gz" "$WORK/draft-0.5b.gguf" && touch "$WORK/draft-0.5b.done"
  for s in $SIZES; do
    like=(); [ "$s" = 1.5b ] || like=(--like "$s")
    "$PY" "$HERE/random_gguf.py" write "$PACK/spec-1.5b.json.gz" "$WORK/target-$s.gguf" "${like[@]}" \
      && touch "$WORK/target-$s.done"
  done
) > "$WORK/write.log" 2>&1 &
writer=$!
say "building llama.cpp ($(command -v nvcc >/dev/null && nvcc --version | tail -1 || echo 'no nvcc'))"
tool=$(bash "$HERE/build.sh" "$PACK/llama.cpp" "$WORK/build" 2> "$WORK/build.log") || { tail -40 "$WORK/build.log" >&2; exit 1; }
say "built $tool"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
[ -n "$gpu" ] || gpu="$(uname -n), CPU only"

ready() {   # waits for a written file; fails if the writer ended without it
  while [ ! -f "$WORK/$1.done" ]; do
    kill -0 $writer 2>/dev/null || { [ -f "$WORK/$1.done" ] || { cat "$WORK/write.log" >&2; return 1; }; }
    sleep 1
  done
}
ready draft-0.5b
"$tool" "$WORK/draft-0.5b.gguf" --depth "$DEPTH" --max-n 16 --reps "$REPS" --last-row > "$WORK/draft.json" 2> "$WORK/measure.log"
say "draft measured: $(grep -o '"batch_s": {[^,]*' "$WORK/draft.json")"
for s in $SIZES; do
  ready "target-$s"
  "$tool" "$WORK/target-$s.gguf" --depth "$DEPTH" --max-n 17 --reps "$REPS" > "$WORK/target-$s.json" 2>> "$WORK/measure.log"
  "$PY" "$HERE/cost_file.py" "$WORK/target-$s.json" "$WORK/draft.json" "$OUT/costs-qwen2.5-coder-$s.json" \
    --name "costs-qwen2.5-coder-$s.json" --machine "$gpu" \
    --models "random weights: Qwen2.5-Coder $s Q4_K_M target, 0.5B draft (the defaults' shapes and types)"
  say "measured $s"
  rm -f "$WORK/target-$s.gguf"
done
wait $writer || true
grep -v "tensors$" "$WORK/write.log" >&2 || true
cp "$WORK/build.log" "$WORK/measure.log" "$OUT/" 2>/dev/null || true
say "done: $(ls "$OUT"/costs-*.json | tr '\n' ' ')"
