#!/usr/bin/env bash
# The ecosystem's openPMD readers in a virtual environment at $1: openPMD-api, the openPMD
# validator and h5py from PyPI.  Exit 77 (the reader tests are skipped) when they cannot be
# installed (no network, no python3-venv).
set -u
venv="$1"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import openpmd_api, h5py" 2>/dev/null &&
   [ -x "$venv/bin/openPMD_check_h5" ]; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv" || { echo "python3 -m venv failed (install python3-venv): skipped"; exit 77; }
"$venv/bin/pip" install --quiet --disable-pip-version-check openpmd-api openpmd-validator h5py numpy ||
  { echo "pip could not install openpmd-api / openpmd-validator / h5py (no network?): skipped"; exit 77; }
