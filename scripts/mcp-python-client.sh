#!/usr/bin/env bash
# Installs the official Python MCP client (PyPI `mcp`) into a venv under target/, for
# tests/mcp_serve.rs::python_client_lists_tools_and_reads_a_file (skipped without it),
# then runs that test once.
#   scripts/mcp-python-client.sh            install (if needed) and run the test
#   scripts/mcp-python-client.sh --install  install only
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/mcp-python
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet mcp
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python mcp client", m.version("mcp"))'
if [ "${1:-}" = "--install" ]; then
    exit 0
fi
cargo test --test mcp_serve python_client -- --nocapture
