#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver from Debian's packages (`chromium`,
# `chromium-driver`) for the dashboard's browser test (tests/suite/dashboard_browser.rs).
# Prints the chromedriver path on success; exits non-zero, saying why, when it cannot
# install them (the browser test then skips, saying so).
set -euo pipefail
if command -v chromedriver >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1; then
  command -v chromedriver
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no apt-get here; install chromium and chromium-driver by hand" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >&2; then
  echo "install-chromium: apt-get could not install chromium and chromium-driver" >&2
  exit 1
fi
command -v chromedriver
