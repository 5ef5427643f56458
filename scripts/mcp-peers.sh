#!/usr/bin/env bash
# Installs the official MCP servers the peer tests (tests/mcp_peers.rs) run against, into
# a local prefix under target/ (nothing global):
#   npm  @modelcontextprotocol/server-everything, @modelcontextprotocol/server-filesystem
#        -> target/mcp-peers/node/node_modules/.bin/mcp-server-{everything,filesystem}
#   PyPI mcp-server-time, mcp-server-git (in a venv)
#        -> target/mcp-peers/venv/bin/mcp-server-{time,git}
# Idempotent: what is installed already is kept (pass --upgrade to reinstall). Prints
# what it installed and where; `--print-dir` prints only the prefix.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${CREW_MCP_PEERS:-$root/target/mcp-peers}"
upgrade=0
for arg in "$@"; do
    case "$arg" in
        --upgrade) upgrade=1 ;;
        --print-dir) echo "$prefix"; exit 0 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "mcp-peers.sh: unknown argument '$arg' (use --upgrade, --print-dir)" >&2; exit 2 ;;
    esac
done

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "mcp-peers.sh: '$1' is not installed; install it ($2) and run again" >&2
        exit 1
    }
}
need npm "Node.js 18 or later"
need python3 "Python 3.10 or later"

mkdir -p "$prefix/node"
node_pkgs=(@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem)
node_bins=(mcp-server-everything mcp-server-filesystem)
missing=()
for i in "${!node_pkgs[@]}"; do
    if [[ $upgrade == 1 || ! -x "$prefix/node/node_modules/.bin/${node_bins[$i]}" ]]; then
        missing+=("${node_pkgs[$i]}")
    fi
done
if ((${#missing[@]})); then
    echo "installing ${missing[*]} (npm) into $prefix/node" >&2
    [[ -f "$prefix/node/package.json" ]] || echo '{"private": true}' >"$prefix/node/package.json"
    npm install --prefix "$prefix/node" --no-audit --no-fund --loglevel=error "${missing[@]/%/@latest}" >&2
fi

venv="$prefix/venv"
if [[ ! -x "$venv/bin/python" ]]; then
    echo "creating the venv $venv" >&2
    python3 -m venv "$venv"
fi
py_pkgs=(mcp-server-time mcp-server-git)
missing=()
for p in "${py_pkgs[@]}"; do
    if [[ $upgrade == 1 || ! -x "$venv/bin/$p" ]]; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    echo "installing ${missing[*]} (PyPI) into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "${missing[@]}" >&2
fi

# What is there now, with versions.
node_version() {
    node -p "require('$prefix/node/node_modules/$1/package.json').version" 2>/dev/null || echo "?"
}
py_version() {
    "$venv/bin/python" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'
}
for i in "${!node_pkgs[@]}"; do
    echo "${node_pkgs[$i]}@$(node_version "${node_pkgs[$i]}") $prefix/node/node_modules/.bin/${node_bins[$i]}"
done
for p in "${py_pkgs[@]}"; do
    echo "$p==$(py_version "$p") $venv/bin/$p"
done
