#!/usr/bin/env python3
"""Size guard: no source file over 600 lines, no function over 120.

Scans the .py, .c, .cpp and .h files under DIRECTORIES of ROOT (the
repository by default). Python functions are measured by ``ast``, from the
``def`` line to the last line of the body; C and C++ functions by
``c_functions`` below, from the first line of the signature to the closing
brace. With ``--line-length`` it also refuses C and C++ lines over 100
characters (Python lines are ruff's, see pyproject.toml).

Usage: ``python tools/sz.py [--line-length] [ROOT]``. Prints one
``path:line: what (N lines, limit M)`` per offender and exits 1 if there is
any, 0 otherwise.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

DIRECTORIES = ("csrc", "torch_accinte", "third_party/accinte", "tools", "benchmarks",
               "examples", "tests")
SUFFIXES = {".py", ".c", ".cpp", ".h"}
SKIP_NAMES = {"__pycache__", "build", "_build", "node_modules"}  # and hidden directories
MAX_FILE, MAX_FUNCTION, MAX_LINE = 600, 120, 100

# What cannot hold a brace that counts: comments, string and character
# literals (raw strings too), preprocessor lines with their continuations.
C_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"'
                     r"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.S | re.M)
# The text before a `{` that opens a function body: a parameter list's `)`,
# then qualifiers or a trailing return type.
C_SIGNATURE = re.compile(r"\)(?:\s*(?:const|volatile|noexcept|override|final|mutable|&&|&"
                         r"|->[^{};]+))*\s*$")
C_INIT_LIST = re.compile(r"\)\s*:(?!:)")  # a constructor's `) :`
# A function's name: what precedes the first `(` (a lambda has none).
C_NAME = re.compile(r"(operator\s*(?:\(\)|[^\s(]+)|[~\w:]+)\s*\(")
C_ACCESS = re.compile(r".*\b(?:public|protected|private)\s*:(?!:)", re.S)


def c_functions(text: str):
    """(name, first line, last line) of each function body in C/C++ ``text``.

    Braces at namespace or class level are classified by the text before
    them: a signature opens a function; `namespace`/`extern` or a class key
    opens a scope that is entered, so methods defined in a class count one
    by one; anything else (an initializer) is skipped whole. A brace in a
    constructor's initializer list (`: a_{x}`) belongs to the signature."""
    code = C_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # lines kept

    def line(pos: int) -> int:
        return code.count("\n", 0, pos) + 1

    head, body, depth = 0, None, 0  # body: (kind, head text start) while inside one
    for match in re.finditer(r"[{};]", code):
        char, pos = match.group(), match.start()
        if body:
            depth += {"{": 1, "}": -1, ";": 0}[char]
            if depth == 0:
                kind, start = body
                if kind == "function":
                    name = C_NAME.search(code[start:pos])
                    yield (name.group(1) if name else "lambda"), line(start), line(pos)
                body, head = None, (head if kind == "member" else pos + 1)
            continue
        if char != "{":
            head = pos + 1
            continue
        sig = code[head:pos].strip()
        if C_SIGNATURE.search(sig) or (C_INIT_LIST.search(sig) and sig.endswith("}")):
            access = C_ACCESS.match(code, head, pos)
            start = access.end() if access else head
            start += len(code[start:pos]) - len(code[start:pos].lstrip())
            body, depth = ("function", start), 1
        elif C_INIT_LIST.search(sig):
            body, depth = ("member", head), 1
        elif re.search(r"\b(namespace|extern|class|struct|union|enum)\b", sig) \
                and not sig.endswith(("=", "]")):
            head = pos + 1  # entered: its closing brace is just another `}`
        else:
            body, depth = ("initializer", head), 1


def python_functions(text: str):
    """(name, first line, last line) of each function, nested ones included."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno


def offenders(path: Path, shown: str, line_length: bool):
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    if len(lines) > MAX_FILE:
        yield f"{shown}:1: file ({len(lines)} lines, limit {MAX_FILE})"
    functions = python_functions if path.suffix == ".py" else c_functions
    for name, first, last in functions(text):
        length = last - first + 1
        if length > MAX_FUNCTION:
            yield f"{shown}:{first}: function {name} ({length} lines, limit {MAX_FUNCTION})"
    if line_length and path.suffix != ".py":
        for number, text_line in enumerate(lines, 1):
            if len(text_line) > MAX_LINE:
                yield f"{shown}:{number}: line ({len(text_line)} characters, limit {MAX_LINE})"


def sources(root: Path):
    for directory in DIRECTORIES:
        for path in sorted((root / directory).rglob("*")):
            parts = path.relative_to(root).parts
            if path.suffix in SUFFIXES and path.is_file() and not any(
                    p in SKIP_NAMES or p.startswith(".") for p in parts):
                yield path


def main(argv: list[str]) -> int:
    line_length = "--line-length" in argv
    args = [a for a in argv if a != "--line-length"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent
    found = [o for path in sources(root)
             for o in offenders(path, str(path.relative_to(root)), line_length)]
    print("\n".join(found) if found else "sizes ok")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
