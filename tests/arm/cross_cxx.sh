#!/usr/bin/env bash
# The kernel emulator's host compiler for tests/arm/emulator_check.cpp under qemu-user: the
# aarch64 cross compiler, which runs on the x86-64 machine and so cannot take the emulator's
# -march=native (the emulated CPU's baseline instead).
args=()
for a in "$@"; do
  [[ "$a" == -march=native ]] && a=-march=armv8-a
  args+=("$a")
done
exec aarch64-linux-gnu-g++ "${args[@]}"
