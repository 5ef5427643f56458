#!/usr/bin/env bash
# Runs `crew -p` against llmock (PyPI: a scriptable OpenAI/Anthropic mock with fault
# injection) with random 429/500/503 errors and torn/malformed/disconnected streams,
# for both APIs, then prints llmock's resilience verdict of how crew retried.
#
# Usage: scripts/llmock_check.sh [RUNS_PER_API]   (default 12)
# Needs python3; installs llmock 0.2.2 into a private venv on first use.
# Exit status: llmock's (0 = no client misbehaviour found).
set -euo pipefail

runs="${1:-12}"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LLMOCK_VENV:-${TMPDIR:-/tmp}/crew-llmock-venv}"
port="${LLMOCK_PORT:-18431}"

if [ ! -x "$venv/bin/llmock" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "llmock==0.2.2"
fi
cargo build -q --manifest-path "$root/Cargo.toml" --bin crew
crew="$root/target/debug/crew"

work="$(mktemp -d)"
log="$work/llmock.log"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "notes: hello from the llmock check" > "$work/notes.txt"

"$venv/bin/llmock" serve --port "$port" --log-level warning \
  --error-rate 429=0.15 --error-rate 500=0.1 --error-rate 503=0.1 \
  --stream-fault truncate=0.1 --stream-fault malformed=0.05 --stream-fault disconnect=0.05 \
  >"$log" 2>&1 &
server=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.2
done

fail=0
run() { # api model env...
  local api="$1" model="$2"; shift 2
  for i in $(seq "$runs"); do
    if ! env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u ANTHROPIC_BASE_URL -u OPENAI_BASE_URL \
        "$@" "$crew" -p "Read notes.txt and summarise it (run $i)." --model "$model" \
        --cwd "$work" --output-format json >"$work/out.json" 2>"$work/err.txt"; then
      echo "$api run $i failed: $(tail -n 3 "$work/err.txt" | tr '\n' ' ') $(cut -c1-300 "$work/out.json")"
      fail=$((fail + 1))
    fi
    grep -h "retrying" "$work/err.txt" | sed "s/^/  $api run $i: /" || true
  done
}
run anthropic anthropic:claude-sonnet-4-5 \
  ANTHROPIC_API_KEY=k-anthropic ANTHROPIC_BASE_URL="http://127.0.0.1:$port/anthropic"
run openai openai:gpt-4.1 \
  OPENAI_API_KEY=k-openai OPENAI_BASE_URL="http://127.0.0.1:$port/v1"

echo "crew runs that ended in an error: $fail of $((2 * runs))"
"$venv/bin/llmock" report --url "http://127.0.0.1:$port"
