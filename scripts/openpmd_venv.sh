#!/usr/bin/env bash
# A virtual environment with the openPMD ecosystem's Python readers (openPMD-api, the
# validator, h5py, numpy, matplotlib) at $1 (default: <repository>/.venv-openpmd).  Prints its
# python.  Exit 77 when it cannot be made (no network, no python3-venv).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$here/.venv-openpmd}"
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import openpmd_api, h5py, matplotlib" 2>/dev/null &&
       [ -x "$venv/bin/openPMD_check_h5" ]; }; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { echo "openpmd_venv: python3 -m venv failed (install python3-venv)" >&2; exit 77; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check openpmd-api openpmd-validator h5py numpy matplotlib >&2 ||
    { echo "openpmd_venv: pip could not install the openPMD readers (no network?)" >&2; exit 77; }
fi
echo "$venv/bin/python"
