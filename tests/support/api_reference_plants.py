#!/usr/bin/env python3
"""Shows that scripts/api_reference.py fails on what it must catch: an undocumented public
entity, and an undocumented public member of a class whose members must all be documented
(Array); and that it lists a documented member under its class and leaves private ones out."""
import importlib.util
import pathlib
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("api_reference", root / "scripts" / "api_reference.py")
api = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api)

HEADER = """// cunumpy/planted.hpp: planted entities.
#pragma once
namespace cunumpy {

// Documented.
template <typename T>
class Array {
 public:
  // Documented member.
  long long size() const noexcept { return 0; }

  T* data() const noexcept { return nullptr; }

 private:
  int hidden() const { return 1; }
};

int undocumented_function(int x);

}  // namespace cunumpy
"""

with tempfile.TemporaryDirectory(dir=root) as folder:
    path = pathlib.Path(folder) / "planted.hpp"
    path.write_text(HEADER)
    _, entries, undocumented, members = api.parse_header(path)
failures = []
if not any(u.endswith("Array::data") for u in undocumented):
    failures.append(f"the undocumented member Array::data was not reported: {undocumented}")
if not any(u.endswith("undocumented_function") for u in undocumented):
    failures.append(f"the undocumented function was not reported: {undocumented}")
names = [m[0] for m in members.get("Array", [])]
if names != ["size"]:
    failures.append(f"Array's listed members should be ['size'], got {names}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("api_reference catches the plants")
