#!/usr/bin/env bash
# Installs the official Claude Agent SDK for Python (PyPI `claude-agent-sdk`), the client
# of tests/suite/claude_agent_sdk.rs, into a venv in a cache directory (nothing global).
# The prefix is $CREW_AGENT_SDK_PREFIX, else ~/.cache/crew-peers/claude-agent-sdk.
# Idempotent: a venv that imports the SDK is kept (pass --upgrade to reinstall). Prints
# the venv's python on stdout (the tests read it from $CREW_AGENT_SDK_PYTHON, else look
# in the cache directory); progress goes to stderr. Needs only python3 and PyPI.
set -euo pipefail

prefix="${CREW_AGENT_SDK_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/crew-peers/claude-agent-sdk}"
upgrade=0
for arg in "$@"; do
    case "$arg" in
        --upgrade) upgrade=1 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "install-claude-agent-sdk.sh: unknown argument '$arg' (use --upgrade)" >&2; exit 2 ;;
    esac
done

python="$prefix/venv/bin/python"
works() { [[ -x "$python" ]] && "$python" -c 'import claude_agent_sdk' 2>/dev/null; }

if [[ $upgrade == 0 ]] && works; then echo "$python"; exit 0; fi
command -v python3 >/dev/null 2>&1 || {
    echo "install-claude-agent-sdk.sh: python3 is needed (3.10 or later)" >&2; exit 1; }
[[ -x "$python" ]] || { echo "creating the venv $prefix/venv" >&2; python3 -m venv "$prefix/venv"; }
echo "installing claude-agent-sdk (PyPI) into $prefix/venv" >&2
"$python" -m pip install --quiet --disable-pip-version-check --upgrade claude-agent-sdk >&2
works || { echo "install-claude-agent-sdk.sh: claude-agent-sdk installed but does not import" >&2; exit 1; }
"$python" -c 'import importlib.metadata as m; print("claude-agent-sdk", m.version("claude-agent-sdk"))' >&2
echo "$python"
