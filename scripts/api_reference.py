#!/usr/bin/env python3
"""The API reference of cunumpy's public headers, made from their comments.

    python3 scripts/api_reference.py            # writes docs/api/*.md
    python3 scripts/api_reference.py --check    # fails when a public entity has no comment,
                                                # or when docs/api is not what the headers give

The headers document themselves in plain // comments (the file's opening block says what the
header is for, with an example; each declaration has the comment above it, and one comment may
cover a group of declarations written without a blank line between them).  This script reads
every public header (the include/cunumpy folders of the layers, the device headers and the
testing helpers), takes each header's opening block and every declaration at namespace scope
(classes, structs, enums, aliases, functions, variables, function templates, and the CUNUMPY_
macros) outside `detail` and `internal` namespaces, with the comment that documents it, and
writes one Markdown page per layer plus an index.  A public entity without a comment is a
failure under --check (CI), so the reference cannot silently fall behind the headers.  The public
members of a documented class that have a comment (or share the comment of the member above)
are listed under it; for the classes of MEMBERS_REQUIRED every public member must have one.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = [  # (page, title, header folder), lowest layer first
    ("device", "Device headers (host and device code, NVRTC)", "device_headers/cunumpy"),
    ("core", "Core: backends, arrays, transfers, streams, profiling", "core/include/cunumpy"),
    ("memory", "Memory: pools, staging, mirrors", "memory/include/cunumpy"),
    ("loops", "Loops: parallel loops, random numbers, algorithms, FFT", "loops/include/cunumpy"),
    ("kernels", "Kernels: CUDA kernels compiled at run time, the emulator, kernel pairs", "kernels/include/cunumpy"),
    ("mpi", "MPI: communication, launcher, CUDA-awareness, mpi_buffer, PETSc", "mpi/include/cunumpy"),
    ("grid", "Grid: decomposition, halo exchange, migration, distributed FFT", "grid/include/cunumpy"),
    ("io", "I/O: HDF5 and openPMD", "io/include/cunumpy"),
    ("particles", "Particles: the particle container", "particles/include/cunumpy"),
    ("runtime", "Runtime: start-up", "runtime/include/cunumpy"),
    ("umbrella", "Umbrella and version headers", "include/cunumpy"),
    ("testing", "Testing helpers (GoogleTest)", "testing/include/cunumpy"),
]
SKIP_NAMESPACES = {"detail", "internal", "cunumpy_emulator"}
# Classes whose every public member must be documented (a port calls them first).
MEMBERS_REQUIRED = {"Array"}
MEMBER_START = re.compile(r"^(~?[A-Za-z_]\w*\s*\(|explicit\s|operator\s)")

DECL_START = re.compile(
    r"^(template\s*<|class\s|struct\s|enum\s|union\s|using\s|inline\s|constexpr\s|static\s|"
    r"extern\s|\[\[|[A-Za-z_][\w:<>,\s\*&]*\s+[\*&]*[A-Za-z_~][\w]*\s*\(|"
    r"[A-Za-z_][\w:<>,\s\*&]*\s+[A-Za-z_]\w*\s*(=|;|\{))")


def strip_strings(line):
    return re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', line)


def opening_block(lines):
    out = []
    for line in lines:
        s = line.strip()
        if s.startswith("//"):
            out.append(s[2:].removeprefix(" "))
        elif out or s:
            break
    return out


def entity_name(decl):
    d = re.sub(r"\s+", " ", decl)
    d = re.sub(r"^template ?<.*?> ?(?=(class|struct|inline|constexpr|auto|void|[A-Za-z_]))", "", d)
    m = re.match(r"(?:enum (?:class |struct )?|class |struct |union )(?:\[\[\w+\]\] )?(\w+)", d)
    if m:
        return m.group(1)
    m = re.match(r"using (\w+)", d)
    if m:
        return m.group(1)
    m = re.search(r"(operator\s*\S+?|~?\w+)\s*\(", d)
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(=|;|\{|\[)", d)
    return m.group(1) if m else d[:40]


def parse_header(path):
    """(opening block, [(name, declaration, comment lines)], [undocumented, with file:line])."""
    lines = path.read_text().splitlines()
    entries, undocumented = [], []
    members = {}  # class name -> [(name, declaration, comment lines)]
    member = None  # a member declaration being collected: [start line, text, comment, class]
    member_comment, last_was_member = [], False
    scopes = []  # ("ns", name) | ("class",) | ("other",)
    comment, last_was_decl = [], False
    pending = None  # a declaration being collected: [start line, text, comment]
    in_block_comment = continuation = False
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if in_block_comment:
            if "*/" in line:
                in_block_comment = False
            continue
        if line.startswith("/*"):
            in_block_comment = "*/" not in line
            continue
        at_namespace = all(s[0] == "ns" for s in scopes) and any(
            "cunumpy" in s[1:] for s in scopes) and not any(
            s[0] == "ns" and s[1] in SKIP_NAMESPACES for s in scopes)
        outer = scopes[:-1]
        in_public_class = bool(scopes) and scopes[-1][0] == "class" and len(scopes[-1]) > 2 and \
            scopes[-1][2] == "public" and all(s[0] == "ns" for s in outer) and any(
            "cunumpy" in s[1:] for s in outer) and not any(
            s[0] == "ns" and s[1] in SKIP_NAMESPACES for s in outer)
        if line.startswith("#define CUNUMPY_") and not re.match(r"#define CUNUMPY_(DETAIL|EMULATOR)_", line):
            name = re.match(r"#define (\w+)", line).group(1)
            if not name.endswith("_HPP") and not name.endswith("_CUH"):
                if comment or last_was_decl:
                    entries.append((name, line, list(comment)))
                else:
                    undocumented.append(f"{path.relative_to(ROOT)}:{number}: macro {name}")
            last_was_decl = bool(comment) or last_was_decl
            comment = []
            continuation = raw.rstrip().endswith("\\")
            continue
        if continuation:  # the rest of a macro's definition
            continuation = raw.rstrip().endswith("\\")
            continue
        if line.startswith("#"):
            continuation = raw.rstrip().endswith("\\")
            continue
        code = strip_strings(re.sub(r"//.*", "", line)).strip()
        if scopes and scopes[-1][0] == "class" and len(scopes[-1]) > 2 and member is None:
            access = re.match(r"(public|private|protected)\s*:", code)
            if access:
                scopes[-1] = scopes[-1][:2] + (access.group(1),)
                member_comment, last_was_member = [], False
                continue
        if line.startswith("//"):
            comment.append(line[2:].removeprefix(" "))
            member_comment.append(line[2:].removeprefix(" "))
            continue
        if not line:
            comment, last_was_decl = [], False
            member_comment, last_was_member = [], False
            continue
        if member is None and in_public_class and (DECL_START.match(code) or MEMBER_START.match(
                code)) and not re.match(
                r"(friend|return|if|for|while|else|case|using|static_assert)\b", code) and \
                not code.startswith("}"):
            member = [number, code, list(member_comment), scopes[-1][1]]
        elif member is not None:
            member[1] += " " + code
        if member is not None:
            text = member[1]
            if not re.fullmatch(r"template\s*<.*>", text) and (";" in text or "{" in text):
                decl = re.split(r"\{", text)[0].strip().rstrip(";").strip()
                decl = re.sub(r"\s*:\s*[\w_]+\(.*$", "", decl) if "(" in decl else decl
                name = entity_name(decl)
                if member[2] or last_was_member:
                    members.setdefault(member[3], []).append((name, decl, member[2]))
                elif member[3] in MEMBERS_REQUIRED:
                    undocumented.append(f"{path.relative_to(ROOT)}:{member[0]}: "
                                        f"{member[3]}::{name}")
                member = None
                last_was_member = True
                member_comment = []
        if pending is None and at_namespace and DECL_START.match(code) and not re.match(
                r"(namespace|friend|public|private|protected|return|if|for|while|else|case)\b",
                code) and not re.match(r"^(class|struct|enum)\s+[\w:]+\s*;$", code) and not \
                code.startswith("}"):
            pending = [number, code, list(comment)]
        elif pending is not None:
            pending[1] += " " + code
        # Scopes.
        for m in re.finditer(r"namespace\s+([\w:]*)\s*\{|\{|\}", code):
            token = m.group(0)
            if token == "}":
                if scopes:
                    scopes.pop()
            elif token.startswith("namespace"):
                # `namespace a::b {` opens one scope, closed by one brace: kept as its parts'
                # innermost name, with "cunumpy" noted when it is the outer one.
                parts = (m.group(1) or "anonymous").split("::")
                scopes.append(("ns", parts[-1]) if len(parts) == 1 else ("ns", parts[-1], parts[0]))
            else:
                kind = re.search(r"\b(class|struct|union|enum)\b(?:\s+\[\[\w+\]\])?\s+(\w+)?",
                                 pending[1] if pending is not None else code)
                if kind and kind.group(1) in ("class", "struct") and kind.group(2):
                    scopes.append(("class", kind.group(2),
                                   "private" if kind.group(1) == "class" else "public"))
                    member_comment, last_was_member = [], False
                else:
                    scopes.append(("class",) if kind else ("other",))
        if pending is not None:
            text = pending[1]
            template_only = re.fullmatch(r"template\s*<.*>", text)
            if not template_only and (";" in text or "{" in text):
                decl = re.split(r"\{", text)[0].strip().rstrip(";").strip()
                name = entity_name(decl)
                documented = bool(pending[2]) or last_was_decl
                if documented:
                    entries.append((name, decl, pending[2]))
                else:
                    undocumented.append(f"{path.relative_to(ROOT)}:{pending[0]}: {name}")
                pending = None
                last_was_decl = True
                comment = []
            continue
    return opening_block(lines), entries, undocumented, members


def page(title, folder):
    out = [f"# {title}", "", f"Headers in `{folder}/`.", ""]
    undocumented = []
    for header in sorted((ROOT / folder).glob("*")):
        if header.suffix not in (".hpp", ".cuh"):
            continue
        opening, entries, missing, members = parse_header(header)
        undocumented += missing
        include = f"cunumpy/{header.name}"
        out += [f"## `<{include}>`", ""]
        # The opening block names its file first ("cunumpy/x.hpp: what it is for"): dropped.
        body = list(opening)
        if body and body[0].startswith((f"{include}:", folder)):
            body[0] = body[0].split(":", 1)[-1].strip()
        text, code = [], []
        for l in body:
            (code if l.startswith("  ") else text).append(l)
        if text:
            summary = " ".join(text).strip()
            out += [summary[:1].upper() + summary[1:], ""]
        if code:
            out += ["```cpp"] + [l[2:] for l in code] + ["```", ""]
        listed = set()
        for name, decl, comment in entries:
            out += [f"- **`{name}`**: `{re.sub(chr(96), '', decl)[:200]}`"]
            if comment:
                out += ["  " + " ".join(comment)]
            if name in members and name not in listed:
                listed.add(name)
                for m_name, m_decl, m_comment in members[name]:
                    out += [f"  - `{re.sub(chr(96), '', m_decl)[:200]}`"]
                    if m_comment:
                        out += ["    " + " ".join(m_comment)]
        out.append("")
    return "\n".join(out), undocumented


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="fail on undocumented entities or a stale docs/api")
    args = parser.parse_args()
    out_dir = ROOT / "docs" / "api"
    pages, missing = {}, []
    index = ["# cunumpy API reference", "",
             "Made from the public headers' comments by `scripts/api_reference.py` (CI checks "
             "that every public entity has one and that these pages are current). One page per "
             "layer, lowest first:", ""]
    for name, title, folder in LAYERS:
        text, undocumented = page(title, folder)
        pages[f"{name}.md"] = text + "\n"
        missing += undocumented
        index.append(f"- [{title}]({name}.md)")
    pages["README.md"] = "\n".join(index) + "\n"
    if missing:
        print("api_reference: public entities without a comment:", file=sys.stderr)
        for m in missing:
            print("  " + m, file=sys.stderr)
    stale = [n for n, t in pages.items()
             if not (out_dir / n).exists() or (out_dir / n).read_text() != t]
    if args.check:
        if stale:
            print("api_reference: docs/api is out of date (" + ", ".join(stale) +
                  "): run python3 scripts/api_reference.py", file=sys.stderr)
        if missing or stale:
            return 1
        print(f"api_reference: {sum(t.count('- **') for t in pages.values())} entities, "
              "all documented, pages current")
        return 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for n, t in pages.items():
        (out_dir / n).write_text(t)
    print(f"api_reference: wrote {len(pages)} pages in docs/api ({len(missing)} undocumented)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
