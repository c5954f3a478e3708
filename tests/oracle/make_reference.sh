#!/usr/bin/env bash
# Builds the Python oracle's reference file: a virtual environment in $1 with the Python
# cunumpy 0.7.1 (NumPy backend) from PyPI, then make_reference.py writes $2.  Exit 77 (the
# test is skipped) when the package cannot be installed (no network, no python3-venv).
set -u
venv="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import cunumpy" 2>/dev/null; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv"; then
    echo "python3 -m venv failed (install python3-venv): the oracle is skipped"
    exit 77
  fi
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check "cunumpy==0.7.1" numpy; then
    echo "pip could not install cunumpy==0.7.1 (no network?): the oracle is skipped"
    exit 77
  fi
fi
# The fake CuPy (a host stand-in) lets the Python library record transfers without a GPU.
CUNUMPY_FAKE_CUPY=1 "$venv/bin/python" "$here/make_reference.py" "$out.tmp" && mv "$out.tmp" "$out"
