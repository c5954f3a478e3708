#!/usr/bin/env bash
# The ecosystem's openPMD readers (openPMD-api, the validator, h5py) in a virtual environment
# at $1, made by scripts/openpmd_venv.sh.  Exit 77 (the reader tests are skipped) when they
# cannot be installed (no network, no python3-venv).
bash "$(dirname "$0")/../../scripts/openpmd_venv.sh" "$1" >/dev/null
