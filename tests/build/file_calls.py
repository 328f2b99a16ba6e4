#!/usr/bin/env python3
"""Every file this program reads goes through the one reader, and no
std::filesystem call in lib/ or apps/ can throw.

A read outside lib/core/bounded_read.cpp (std::ifstream, fopen for reading,
open(2) read-only) skips its checks: a link to /dev/zero read until the
process is killed for memory, a FIFO whose open waits for ever, a stop signal
that does not end the read. A std::filesystem call without a std::error_code
throws filesystem_error on a link loop, a folder it may not enter or a
TMPDIR that is not there, which reaches the user as "internal error:
filesystem error" instead of a message naming the path and its cause.

    file_calls.py SOURCE_DIR         the self-test, then the check: lists
                                     each stray, fails on one
    file_calls.py --self-test        shows it finds one of each kind, and
                                     passes the allowed forms

Calls of the C library (rename(2), unlink(2), mkdir(2)) never throw and say
their failure in their result; they are left to the code that calls them.

A stop signal ends a read or a wait with Interrupted, which is a UserError
(core/error.h): a catch of UserError, std::exception or anything (...) whose
try block reads a file or waits (the one reader, a lock, a stop poll) must
let it through (a `catch (const Interrupted&)` before it, or a rethrow), or a
stop would be taken for a file to skip.
"""
import re
import sys
from pathlib import Path

READER = "lib/core/bounded_read.cpp"

READS = [
    (re.compile(r"\bstd::(?:basic_)?i?fstream\b|\bifstream\b"), "a std::ifstream"),
    (re.compile(r"\bfopen\s*\([^;]*\"r"), "fopen for reading"),
    (re.compile(r"::open\s*\([^;]*O_RDONLY"), "open(2) for reading"),
]

# std::filesystem's calls that throw unless given a std::error_code.
THROWING = (
    "create_directories|create_directory|create_symlink|create_directory_symlink|create_hard_link|rename|remove|"
    "remove_all|copy|copy_file|copy_symlink|resize_file|permissions|exists|is_directory|is_regular_file|"
    "is_symlink|is_empty|is_fifo|is_other|file_size|status|symlink_status|canonical|weakly_canonical|"
    "read_symlink|last_write_time|space|equivalent|temp_directory_path|current_path|directory_iterator|"
    "recursive_directory_iterator|hard_link_count"
)
FS_CALL = re.compile(r"\b(?:fs|std::filesystem)::(" + THROWING + r")\s*\(")
# A query on a file_status already taken (fs::exists(st)) cannot throw.
STATUS_ARG = re.compile(r"^\s*(?:st|s|status|\w+_st|\w+_status)\s*$")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def call_args(text, start):
    """The text between the parenthesis at `start` and its match."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return text[start + 1 :]


def top_level_args(args):
    out, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [a.strip() for a in out if a.strip()]


# What a stop signal can end (core/bounded_read.h, core/file_lock.h,
# core/stop_signal.h), and what a catch-all does that lets it through.
STOPPABLE = re.compile(r"\b(?:read_file\w*|open_regular_file|read_some|read_at|FileLock|throw_if_stopped)\b")
PASSES_ON = re.compile(r"\bthrow\s*;|current_exception|warn_current")


def block_after(text, pos):
    """The text of the {...} block that starts at the first '{' from `pos`."""
    start = text.find("{", pos)
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start : i + 1]
    return text[start:]


def swallowed_stops(name, text, line_of):
    found = []
    for m in re.finditer(r"\bcatch\s*\(\s*(\.\.\.|const\s+(?:hpcbench::)?UserError|const\s+std::exception)", text):
        try_at = text.rfind("try", 0, m.start())
        chain = text[try_at : m.start()] if try_at >= 0 else ""
        if re.search(r"catch\s*\(\s*const\s+(?:hpcbench::)?Interrupted", chain):
            continue
        if STOPPABLE.search(chain) and not PASSES_ON.search(block_after(text, m.end())):
            found.append(f"{name}:{line_of(m.start())}: catch ({m.group(1)}...) around a read or a wait neither lets "
                         "a stop signal's Interrupted through nor rethrows")
    return found


def strays(name, text):
    text = strip_comments(text)
    found = []
    line_of = lambda pos: text.count("\n", 0, pos) + 1
    if name != READER:
        for pattern, what in READS:
            for m in pattern.finditer(text):
                if "/dev/null" in text[m.start() : text.find(";", m.start())]:
                    continue  # a child's stdin, not a file read
                found.append(f"{name}:{line_of(m.start())}: {what}, not the one reader (core/bounded_read.h)")
    found += swallowed_stops(name, text, line_of)
    for m in FS_CALL.finditer(text):
        args = top_level_args(call_args(text, m.end() - 1))
        has_ec = bool(args) and re.search(r"\bec\w*\b|error_code", args[-1])
        on_status = len(args) == 1 and STATUS_ARG.match(args[0]) and m.group(1) not in ("directory_iterator",)
        end_iterator = not args and m.group(1).endswith("directory_iterator")
        if not has_ec and not on_status and not end_iterator:
            found.append(f"{name}:{line_of(m.start())}: std::filesystem::{m.group(1)} without a std::error_code "
                         "(throws filesystem_error)")
    return found


def self_test():
    bad = {
        "lib/x/a.cpp": "std::ifstream in(path);",
        "lib/x/b.cpp": 'FILE* f = std::fopen(p, "re");',
        "lib/x/c.cpp": "int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);",
        "lib/x/d.cpp": "fs::create_directories(dir);",
        "lib/x/e.cpp": "if (fs::exists(dir / \"sweep.json\")) {}",
        "lib/x/f.cpp": "for (auto& e : fs::directory_iterator(dir)) {}",
        "lib/x/g.cpp": "auto t = std::filesystem::temp_directory_path() / \"x\";",
        "lib/x/h.cpp": "fs::rename(a,\n           b);",
        "lib/x/i.cpp": "try { t = read_file_bounded(p, 9); } catch (...) { continue; }",
        "lib/x/j.cpp": "try { t = read_file(p, 9); } catch (const UserError& e) { fail(\"{}\", e.what()); }",
    }
    good = {
        "lib/core/bounded_read.cpp": "const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);",
        "lib/x/a.cpp": "fs::create_directories(dir, ec); fs::rename(a, b, ec2); if (fs::exists(st)) {}",
        "lib/x/b.cpp": "for (auto& e : fs::directory_iterator(dir, ec)) {} // std::ifstream in a comment",
        "lib/x/c.cpp": 'FILE* f = std::fopen(p, "wb"); ::rename(a, b);',
        "lib/x/d.cpp": "auto s = fs::symlink_status(p, ec); if (fs::is_directory(s)) {}",
        "lib/x/e.cpp": "for (auto it = fs::directory_iterator(d, ec); it != fs::directory_iterator(); ) {}",
        "lib/core/process.cpp": 'int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);',
        "lib/x/f.cpp": "try { t = read_file(p, 9); } catch (...) { fs::remove(p, ec); throw; }",
        "lib/x/g.cpp": "try { v = std::stod(s); } catch (...) { return 0; }",
        "lib/x/h.cpp": "try { t = read_file(p, 9); } catch (const Interrupted&) { throw; } catch (const UserError&) {}",
    }
    ok = True
    for name, text in bad.items():
        if not strays(name, text):
            print(f"self-test: {name} ({text!r}) not found", file=sys.stderr)
            ok = False
    for name, text in good.items():
        if strays(name, text):
            print(f"self-test: {name} ({text!r}) flagged: {strays(name, text)}", file=sys.stderr)
            ok = False
    print("self-test: " + ("passes" if ok else "FAILS"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if self_test() != 0:
        return 1
    root = Path(sys.argv[1])
    found = []
    for folder in ("lib", "apps"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cpp", ".h", ".cu", ".inc"):
                found += strays(path.relative_to(root).as_posix(), path.read_text(errors="replace"))
    for line in found:
        print(line)
    print(f"{len(found)} stray file call(s) in lib/ and apps/")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
