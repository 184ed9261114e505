#!/usr/bin/env bash
# Prepares, here, what run.sh needs on a machine that reaches nothing: the trimmed llama.cpp sources and the
# specs (metadata and tensor lists) of the default models, in PACK (default .gpu-costs, ignored by git; carry
# it to the device machine). About 25 MB.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PACK=${1:-$ROOT/.gpu-costs}
PY=${PYTHON:-$ROOT/.venv/bin/python}
bash "$HERE/trim.sh" "$PACK"
paths=$("$PY" -c "from lsp_server.engine import registry as r; print(*(r.default_path(s) for s in r.DEFAULTS))")
read -r target draft <<<"$paths"
[ -f "$target" ] && [ -f "$draft" ] || { echo "the default models are not here: run \`make models\` first" >&2; exit 1; }
for spec in "1.5b:$target" "0.5b:$draft"; do
  GGUF_PY="$PACK/llama.cpp/gguf-py" "$PY" "$HERE/random_gguf.py" spec "${spec#*:}" "$PACK/spec-${spec%%:*}.json.gz"
done
du -sm "$PACK" | cut -f1 | xargs -I{} echo "$PACK: {} MB" >&2
