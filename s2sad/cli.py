"""`s2sad compile module.py -o out/`: write each @differentiate function's derivative.
(`s2sad coverage [--write]`: print, or write into the README, what s2sad differentiates.)

For every function in the module decorated with `@s2sad.differentiate`, writes
`<name>.grad.py` (the generated derivative source) and `<name>.explain.txt` into the
output folder, and prints one summary line per function. On the first error it prints
the error (file:line, the source line, what to do) and exits with status 1.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from . import coverage
from .api import Differentiable
from .errors import S2SADError


def _load(path: Path):
    name = f"_s2sad_compile_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"s2sad: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


def compile_module(path: Path, out: Path) -> int:
    module = _load(path)
    found = [(n, v) for n, v in vars(module).items() if isinstance(v, Differentiable)]
    if not found:
        print(f"s2sad: no @s2sad.differentiate functions in {path}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in found:
        try:
            text = fn.source()
            report = str(fn.explain())
        except S2SADError as e:
            print(f"s2sad: error in {name}:\n{e}", file=sys.stderr)
            return 1
        (out / f"{name}.grad.py").write_text(text)
        (out / f"{name}.explain.txt").write_text(report)
        c = fn._vg.c
        sites = len(c.plan.sites)
        kernels = [k.name for k in c.program.kernels] if hasattr(c, "program") else [c.kernel.name]
        what = f"kernel {kernels[0]}" if len(kernels) == 1 else \
            f"array program with {len(kernels)} kernel(s){': ' + ', '.join(kernels) if kernels else ''}"
        print(f"{name}: {sites} elementwise site(s) -> {what}, wrote {out / (name + '.grad.py')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="s2sad", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="write the derivatives of a module's @differentiate functions")
    c.add_argument("module", type=Path)
    c.add_argument("-o", "--output", type=Path, default=Path("s2sad_out"))
    cov = sub.add_parser("coverage", help="print what s2sad differentiates (generated from its tables)")
    cov.add_argument("--write", nargs="?", const=coverage.README, type=Path, metavar="README",
                     help="rewrite the coverage list between the README's markers instead")
    args = parser.parse_args(argv)
    if args.command == "coverage":
        if args.write is None:
            print(coverage.coverage_markdown())
            return 0
        changed = coverage.write_readme(args.write)
        print(f"s2sad: {args.write}: coverage list {'rewritten' if changed else 'already up to date'}")
        return 0
    if args.command == "compile":
        if not args.module.exists():
            print(f"s2sad: {args.module}: no such file", file=sys.stderr)
            return 2
        try:
            return compile_module(args.module.resolve(), args.output)
        except S2SADError as e:
            print(f"s2sad: {e}", file=sys.stderr)
            return 1
        except OSError as e:    # the output folder: a file's name, not writable... (the user's module ran)
            if e.filename is None or Path(e.filename) == args.module.resolve():
                raise
            print(f"s2sad: cannot write {e.filename}: {e.strerror}; choose another folder with -o",
                  file=sys.stderr)
            return 2
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
