#!/usr/bin/env python3
"""Every library sits below the libraries that use it.

Reads the link graph CMake wrote (BUILD/library_graph.txt: each target of
lib/ and apps/, its sources and what it links), the headers each library
exposes (its include folder BUILD/include/<target>/, hpcbench_headers in
lib/CMakeLists.txt) and every `#include "x/y.h"` in lib/ and apps/. Fails on:

- an include of a header whose library is not in the includer's link closure
  (an arrow back up, or sideways to a library it does not link);
- a header two libraries expose (then which one it belongs to is not known,
  and a library could include it through the other's folder);
- a cycle in the link graph;
- docs/architecture.md's table of libraries leaving one out, or listing one
  above a library it links ("from the bottom up"), or its picture (the
  mermaid block) drawing other arrows than the graph's.

--include FILE=HEADER adds a fabricated include to FILE (a path under the
source folder), for showing that the check fails. --print-picture writes the
picture the graph gives (what docs/architecture.md holds).
"""
import argparse
import os
import re
import sys
from collections import defaultdict

QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_SUFFIXES = (".cpp", ".cu", ".h", ".cuh", ".inc")


def read_graph(path):
    targets, sources, links = {}, defaultdict(set), defaultdict(set)
    with open(path) as f:
        for line in f:
            kind, name, rest = line.rstrip("\n").split(" ", 2)
            if kind == "target":
                kind_of, folder = rest.split(" ", 1)
                targets[name] = (kind_of, folder)
            elif kind == "source":
                sources[name].add(os.path.realpath(rest))
            elif kind == "link":
                m = re.fullmatch(r"\$<LINK_ONLY:(.+)>", rest)
                links[name].add(m.group(1) if m else rest)
    # Only the project's targets are layers; LibTorch, fmt and the like are not.
    links = {t: {l for l in ls if l in targets} for t, ls in links.items()}
    return targets, sources, links


def closures(targets, links):
    out = {}

    def visit(t, path):
        if t in out:
            return out[t]
        if t in path:
            raise SystemExit("link cycle: " + " -> ".join(path[path.index(t):] + [t]))
        below = set()
        for u in sorted(links.get(t, ())):
            below |= {u} | visit(u, path + [t])
        out[t] = below
        return below

    for t in sorted(targets):
        visit(t, [])
    return out


def exposures(build, targets):
    """Header (real path) -> the targets exposing it (its own link, or a link
    to a folder holding it); folder (real path) -> the targets exposing it."""
    owners = defaultdict(set)
    folders = defaultdict(set)
    root = os.path.join(build, "include")
    # A folder a target of an earlier configuration left is no one's.
    for target in sorted(t for t in os.listdir(root) if t in targets):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, target)):
            for entry in dirnames + filenames:
                link = os.path.join(dirpath, entry)
                if not os.path.islink(link):
                    continue
                real = os.path.realpath(link)
                if os.path.isdir(real):
                    for d, _, files in os.walk(real):
                        folders[d].add(target)
                        for f in files:
                            if f.endswith(SOURCE_SUFFIXES):
                                owners[os.path.join(d, f)].add(target)
                else:
                    owners[real].add(target)
    return owners, folders


def owner_of_header(path, owners):
    found = owners.get(path)
    if not found:
        return None, None
    if len(found) > 1:
        return None, "exposed by " + " and ".join(sorted(found))
    return next(iter(found)), None


def includes(path, extra):
    with open(path, errors="replace") as f:
        text = f.read()
    return QUOTED_INCLUDE.findall(text) + extra.get(path, [])


def check_includes(source, build, targets, sources, below, extra):
    problems = []
    owners, folders = exposures(build, targets)
    compiled = {}
    for t, srcs in sources.items():
        for s in srcs:
            compiled.setdefault(s, set()).add(t)
    include_root = os.path.join(build, "include")
    exposed_folders = set()
    for t in os.listdir(include_root):
        if t in targets:
            exposed_folders |= set(os.listdir(os.path.join(include_root, t)))

    def resolve(name):
        hits = set()
        for t in os.listdir(include_root):
            if t not in targets:
                continue
            candidate = os.path.join(include_root, t, name)
            if os.path.exists(candidate):
                hits.add(os.path.realpath(candidate))
        return hits

    def owner_of_file(path):
        if path.endswith((".cpp", ".cu")):
            ts = {t for t in compiled.get(path, ()) if t in targets}
            if len(ts) == 1:
                return next(iter(ts)), None
            if len(ts) > 1:
                return None, "compiled into " + " and ".join(sorted(ts))
            # Not compiled in this configuration (the CUDA sources without
            # nvcc, the TensorBoard writer's other form): the library of its
            # header, or of its folder.
            stem = os.path.splitext(path)[0]
            for h in (stem + ".h", stem + ".cuh"):
                if h in owners:
                    return owner_of_header(h, owners)
            folder_owner = folders.get(os.path.dirname(path), set())
            if len(folder_owner) == 1:
                return next(iter(folder_owner)), None
            return None, "belongs to no library"
        t, why = owner_of_header(path, owners)
        if t or why:
            return t, why
        stem = os.path.splitext(path)[0]
        for cpp in (stem + ".cpp", stem + ".cu"):
            ts = compiled.get(cpp, set())
            if len(ts) == 1:
                return next(iter(ts)), None
        return None, "belongs to no library (neither exposed nor beside a compiled source)"

    files = []
    for top in ("lib", "apps"):
        for dirpath, _, filenames in os.walk(os.path.join(source, top)):
            files += [os.path.realpath(os.path.join(dirpath, f)) for f in filenames if f.endswith(SOURCE_SUFFIXES)]
    for path in sorted(files):
        rel = os.path.relpath(path, source)
        incs = includes(path, extra)
        if not incs:
            continue
        t, why = owner_of_file(path)
        if why:
            problems.append(f"{rel}: {why}")
            continue
        for name in incs:
            if "/" not in name or name.split("/", 1)[0] not in exposed_folders:
                continue
            hits = resolve(name)
            if not hits:
                problems.append(f"{rel} includes {name}, which no library exposes")
                continue
            for h in hits:
                u, why = owner_of_header(h, owners)
                if why:
                    continue  # said once below, for the header
                if u != t and u not in below.get(t, set()):
                    problems.append(f"{rel} ({t}) includes {name} ({u}), which {t} does not link: "
                                    f"an arrow back up")
    # A header two libraries expose, even where nothing includes it yet.
    for path, found in owners.items():
        if len(found) > 1:
            problems.append(f"{os.path.relpath(path, source)} is exposed by {' and '.join(sorted(found))}: "
                            f"one library each")
    return sorted(set(problems))


def doc_rows(doc):
    with open(doc) as f:
        text = f.read()
    section = text.split("## The libraries", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `hpcbench_"):
            continue
        first = line.split("|")[1]
        names = []
        for token in re.findall(r"`([a-z0-9_]+)`", first):
            names.append(token if token.startswith("hpcbench_") else "hpcbench" + token)
        rows.append(names)
    return rows, text


def picture_edges(libraries, below):
    """The arrows of the picture: each library to those it links that no
    other library it links already stands on (the graph's transitive
    reduction among the libraries of the table)."""
    edges = set()
    for t in libraries:
        direct = {u for u in below[t] if u in libraries}
        for u in direct:
            if not any(u in below[v] for v in direct if v != u):
                edges.add((t, u))
    return sorted(edges)


def picture(edges):
    lines = ["```mermaid", "graph TD"]
    lines += [f"  {a.removeprefix('hpcbench_')} --> {b.removeprefix('hpcbench_')}" for a, b in edges]
    lines.append("```")
    return "\n".join(lines)


def check_doc(doc, targets, below, build):
    problems = []
    rows, text = doc_rows(doc)
    listed = [n for row in rows for n in row]
    # Every library another can include (it has an include folder).
    libraries = {t for t in os.listdir(os.path.join(build, "include")) if t in targets}
    for t in sorted(libraries - set(listed)):
        problems.append(f"{os.path.basename(doc)}: the table of libraries leaves out {t}")
    for n in listed:
        if n not in targets:
            problems.append(f"{os.path.basename(doc)}: the table lists {n}, which is no library")
    row_of = {n: i for i, row in enumerate(rows) for n in row}
    for n, i in row_of.items():
        for u in below.get(n, ()):
            if u in row_of and row_of[u] > i:
                problems.append(f"{os.path.basename(doc)}: {n} is listed below {u}, which it links "
                                f"(the table goes from the bottom up)")
    wanted = picture(picture_edges(set(listed) & set(targets), below))
    if wanted not in text:
        problems.append(f"{os.path.basename(doc)}: the picture of what links what is not the graph's; it is:\n"
                        + wanted)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("build")
    ap.add_argument("--doc", help="docs/architecture.md (default: the source folder's)")
    ap.add_argument("--include", action="append", default=[], metavar="FILE=HEADER")
    ap.add_argument("--print-picture", action="store_true")
    a = ap.parse_args()
    source, build = os.path.realpath(a.source), os.path.realpath(a.build)
    graph = os.path.join(build, "library_graph.txt")
    if not os.path.exists(graph):
        sys.exit(f"{graph}: no link graph (configure the build folder first)")
    targets, sources, links = read_graph(graph)
    below = closures(targets, links)
    if a.print_picture:
        rows, _ = doc_rows(a.doc or os.path.join(source, "docs", "architecture.md"))
        listed = {n for row in rows for n in row} & set(targets)
        print(picture(picture_edges(listed, below)))
        return 0
    extra = defaultdict(list)
    for item in a.include:
        f, _, h = item.partition("=")
        path = os.path.realpath(os.path.join(source, f))
        if not os.path.exists(path) or not h:
            sys.exit(f"--include {item}: FILE=HEADER with FILE under {source}")
        extra[path].append(h)
    problems = check_includes(source, build, targets, sources, below, extra)
    problems += check_doc(a.doc or os.path.join(source, "docs", "architecture.md"), targets, below, build)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layers: {len(targets)} targets, every include within its library's link closure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
