"""Every example's ``commwall run`` output, to show a change left them byte for byte the same.

``python benchmarks/run_outputs.py DIR`` writes, for the built-in default scenario and each
``examples/*.yaml``, the text table (120 columns) and the ``--json`` result into ``DIR``;
``python benchmarks/run_outputs.py DIR --compare OLD`` then lists every file that differs from
``OLD`` (exit 1 if any does). Run it before and after a behaviour-unchanged restructuring.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cases() -> list[tuple[str, list[str]]]:
    """(name, arguments of ``commwall run``) for the default scenario and every example."""
    found = [("default", [])]
    found += [
        (p.stem, [str(p.relative_to(ROOT))]) for p in sorted((ROOT / "examples").glob("*.yaml"))
    ]
    return found


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COLUMNS": "120"}
    for name, args in cases():
        for suffix, extra in ((".txt", []), (".json", ["--json"])):
            done = subprocess.run(
                [sys.executable, "-m", "commwall.cli", "run", *args, *extra],
                cwd=ROOT, env=env, capture_output=True, check=False,
            )  # fmt: skip
            (folder / f"{name}{suffix}").write_bytes(done.stdout + done.stderr)
            print(f"{name}{suffix}: exit {done.returncode}, {len(done.stdout):,} bytes")


def compare(folder: Path, old: Path) -> int:
    differ = [
        p.name
        for p in sorted(old.iterdir())
        if not (folder / p.name).is_file() or (folder / p.name).read_bytes() != p.read_bytes()
    ]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(list(old.iterdir())) - len(differ)} of {len(list(old.iterdir()))} identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args()
    write(args.folder)
    return compare(args.folder, args.compare) if args.compare else 0


if __name__ == "__main__":
    sys.exit(main())
