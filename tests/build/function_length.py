#!/usr/bin/env python3
"""No function in lib/ longer than the limit unless a comment says why.

usage: function_length.py SOURCE_DIR [--limit N] [--list] [--self-test]

Every function body in lib/**/*.{h,cpp} (free functions, member functions
defined in or out of their class, lambdas counted with the function that
holds them) is measured from its signature's first line to its closing
brace. One longer than the limit fails the check unless the comment block
right above its signature holds a line starting `// long:` that says why it
cannot be split, or it is on ALLOWED below.

The scan matches braces after blanking comments, string and character
literals and preprocessor lines, so it needs no compiler; it knows C++ well
enough for this code base (the self-test shows it measures what it should,
and that the check fails on a long function).
"""
import re
import sys
from pathlib import Path

LIMIT = 80

# Functions another change in flight is splitting or moving, as
# "path:function", and files it rewrites whole: none now. Keep both empty
# on main.
ALLOWED = set()
ALLOWED_FILES = ()

NOT_FUNCTIONS = {"namespace", "struct", "class", "union", "enum", "extern", "if", "for", "while", "switch",
                 "catch", "do", "else", "try", "return", "requires"}


def blank(text):
    """Comments, literals and preprocessor lines as spaces, newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    out.append(" \n")
                    j += 2
                    continue
                out.append(" ")
                j += 1
            i = j
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # a digit separator (1'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The name a brace's head defines, or None when it is no function."""
    head = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", head).strip()
    if not head or ")" not in head or "(" not in head:
        return None
    words = re.findall(r"[A-Za-z_]\w*", head)
    if words and words[0] in NOT_FUNCTIONS:
        return None
    # The name before the head's first '(': the function's (a constructor's
    # initialiser list and a trailing return type come after it).
    before = head[: head.index("(")].rstrip()
    w = re.search(r"(~?[A-Za-z_][\w:~]*(?:operator\s*\S+)?)\s*$", before)
    m = w.group(1) if w else None
    if not m or m.split("::")[-1] in NOT_FUNCTIONS:
        return None
    if re.search(r"=\s*$", before):
        return None  # a variable's initialiser, `T x = f(...) {`
    return m


def functions(path, text):
    """(name, first line, last line, comment above) per function of a file."""
    code = blank(text)
    lines = text.split("\n")
    out = []
    # A stack of (kind, start offset of the head) per open brace; kind is
    # "scope" (namespace, class, extern "C", initialiser) or "function".
    stack = []
    head_start = 0
    i = 0
    while i < len(code):
        ch = code[i]
        if ch == "{":
            inside_function = any(kind == "function" for kind, *_ in stack)
            if inside_function:
                stack.append(("inner", i))
            else:
                head = code[head_start:i]
                name = function_name(head)
                if name:
                    first = head_start + (len(head) - len(head.lstrip()))
                    stack.append(("function", first, name))
                else:
                    stack.append(("scope", i))
            head_start = i + 1
        elif ch == "}":
            if stack:
                top = stack.pop()
                if top[0] == "function":
                    first_line = code.count("\n", 0, top[1]) + 1
                    last_line = code.count("\n", 0, i) + 1
                    out.append((top[2], first_line, last_line, comment_above(lines, first_line)))
            head_start = i + 1
        elif ch == ";":
            head_start = i + 1
        elif ch == ":" and not any(k == "function" for k, *_ in stack):
            # access specifiers (public:) end a head; '::' and initialiser lists do not
            before = code[head_start:i].strip()
            if before in ("public", "private", "protected"):
                head_start = i + 1
        i += 1
    return out


def comment_above(lines, first_line):
    """The comment lines right above a signature (and on its first line)."""
    block = [lines[first_line - 1]]
    k = first_line - 2
    while k >= 0 and (lines[k].strip().startswith("//") or lines[k].strip().startswith("template")):
        block.append(lines[k])
        k -= 1
    return "\n".join(block)


def check(root, limit, show_all=False):
    failures, listed = [], []
    for path in sorted((root / "lib").rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu", ".cuh") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        for name, first, last, comment in functions(path, path.read_text(errors="replace")):
            length = last - first + 1
            if length <= limit:
                continue
            short = name.split("::")[-1]
            explained = re.search(r"//\s*long:", comment) is not None
            allowed = f"{rel}:{short}" in ALLOWED or f"{rel}:{name}" in ALLOWED or (bool(ALLOWED_FILES) and rel.startswith(ALLOWED_FILES))
            listed.append(f"{rel}:{first}: {name}: {length} lines" +
                          (" (a // long: comment says why)" if explained else " (allowed for now)" if allowed else ""))
            if not explained and not allowed:
                failures.append(listed[-1])
    if show_all:
        print("\n".join(listed))
    return failures


def self_test():
    """The scan measures a known function, and the check fails on a long one."""
    import tempfile
    body = "\n".join(f"  x += {k};  // {{ a brace in a comment" for k in range(85))
    text = ('// A comment.\nnamespace a {\nstruct S {\n  int short_one() { return 1; }\n};\n'
            'int long_one(int x) {\n  const char* s = "}";\n' + body + "\n  return x;\n}\n"
            'int S::out_of_class(int y) const {\n  auto f = [&] { return y; };\n  return f();\n}\n'
            '// long: one table, one entry a line.\nint explained() {\n' + body + "\n  return 0;\n}\n}\n")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "lib").mkdir()
        (root / "lib" / "x.cpp").write_text(text)
        found = {f[0]: f[2] - f[1] + 1 for f in functions(root / "lib" / "x.cpp", text)}
        expected = {"short_one": 1, "long_one": 89, "S::out_of_class": 4, "explained": 88}
        if found != expected:
            sys.exit(f"self-test: measured {found}, expected {expected}")
        failures = check(root, LIMIT)
        if len(failures) != 1 or "long_one" not in failures[0]:
            sys.exit(f"self-test: the check found {failures}, expected long_one alone")


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    root = Path(args[0])
    limit = int(args[args.index("--limit") + 1]) if "--limit" in args else LIMIT
    self_test()
    if "--self-test" in args:
        print("self-test passed")
        return
    failures = check(root, limit, show_all="--list" in args)
    if failures:
        print(f"functions in lib/ longer than {limit} lines, without a `// long:` comment above them saying why "
              "they cannot be split:")
        print("\n".join("  " + f for f in failures))
        sys.exit(1)
    print(f"every function in lib/ is at most {limit} lines or says why not")


if __name__ == "__main__":
    main()
