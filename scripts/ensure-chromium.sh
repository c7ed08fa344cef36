#!/usr/bin/env bash
# Installs Debian's chromium when /usr/bin/chromium is missing, for the browser test of the reference page.
# Exit 0 when chromium is there (already or after the install), non-zero when it could not be installed.
set -u
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "ensure-chromium: $CHROMIUM is missing and installing it needs root (run: apt-get install -y chromium)" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: $CHROMIUM is missing and apt-get is not available on this machine" >&2
  exit 1
fi
echo "ensure-chromium: installing chromium with apt-get (a minute or two the first time)" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2 || { echo "ensure-chromium: apt-get update failed (no network?)" >&2; exit 1; }
$SUDO apt-get install -y -q --no-install-recommends chromium >&2 || {
  echo "ensure-chromium: apt-get install chromium failed" >&2
  exit 1
}
[ -x "$CHROMIUM" ] || { echo "ensure-chromium: $CHROMIUM still missing after the install" >&2; exit 1; }
echo "ensure-chromium: $("$CHROMIUM" --version 2>/dev/null)" >&2
