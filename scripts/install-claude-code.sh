#!/usr/bin/env bash
# Installs the real Claude Code CLI, the oracle of the differential tests
# (tests/claude_code_differential.rs), into a cache directory (nothing global):
#   npm  @anthropic-ai/claude-code (its postinstall puts the native binary from the
#        platform package @anthropic-ai/claude-code-<os>-<arch> in place)
#        -> $prefix/node/node_modules/@anthropic-ai/claude-code/bin/claude.exe
#   else PyPI claude-agent-sdk, whose wheel bundles the same binary
#        -> $prefix/venv/lib/python*/site-packages/claude_agent_sdk/_bundled/claude
# Only the npm and PyPI registries are needed. The prefix is $CREW_CLAUDE_CODE_PREFIX,
# else ~/.cache/crew-peers/claude-code. Idempotent: a CLI that runs is kept (pass
# --upgrade to reinstall). Prints the path of the `claude` program on stdout (the tests
# read it from $CREW_CLAUDE_CODE); progress goes to stderr.
set -euo pipefail

prefix="${CREW_CLAUDE_CODE_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-peers/claude-code}"
upgrade=0
for arg in "$@"; do
    case "$arg" in
        --upgrade) upgrade=1 ;;
        --print-dir) echo "$prefix"; exit 0 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "install-claude-code.sh: unknown argument '$arg' (use --upgrade, --print-dir)" >&2; exit 2 ;;
    esac
done

# Whether $1 is a Claude Code program that runs here.
works() {
    [[ -x "$1" ]] && "$1" --version 2>/dev/null | grep -q 'Claude Code'
}

npm_bin="$prefix/node/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
find_wheel_bin() {
    compgen -G "$prefix/venv/lib/python*/site-packages/claude_agent_sdk/_bundled/claude" | head -n1 || true
}

if [[ $upgrade == 0 ]]; then
    if works "$npm_bin"; then echo "$npm_bin"; exit 0; fi
    wheel_bin="$(find_wheel_bin)"
    if [[ -n "$wheel_bin" ]] && works "$wheel_bin"; then echo "$wheel_bin"; exit 0; fi
fi

if command -v npm >/dev/null 2>&1; then
    echo "installing @anthropic-ai/claude-code (npm) into $prefix/node" >&2
    mkdir -p "$prefix/node"
    [[ -f "$prefix/node/package.json" ]] || echo '{"private": true}' >"$prefix/node/package.json"
    if npm install --prefix "$prefix/node" --no-audit --no-fund --loglevel=error \
        @anthropic-ai/claude-code@latest >&2 && works "$npm_bin"; then
        echo "$npm_bin"
        exit 0
    fi
    echo "the npm package did not give a working CLI; trying the PyPI wheel" >&2
else
    echo "npm is not installed; trying the PyPI wheel" >&2
fi

if ! command -v python3 >/dev/null 2>&1; then
    echo "install-claude-code.sh: neither npm nor python3 gave a Claude Code CLI; install Node.js 18+ or Python 3.10+ and run again" >&2
    exit 1
fi
if [[ ! -x "$prefix/venv/bin/python" ]]; then
    echo "creating the venv $prefix/venv" >&2
    python3 -m venv "$prefix/venv"
fi
echo "installing claude-agent-sdk (PyPI) into $prefix/venv" >&2
"$prefix/venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade claude-agent-sdk >&2
wheel_bin="$(find_wheel_bin)"
if [[ -n "$wheel_bin" ]] && works "$wheel_bin"; then
    echo "$wheel_bin"
    exit 0
fi
echo "install-claude-code.sh: claude-agent-sdk installed, but its bundled CLI (claude_agent_sdk/_bundled/claude) is missing or does not run" >&2
exit 1
