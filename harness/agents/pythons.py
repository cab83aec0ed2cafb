"""The Python interpreters on this machine, and which of them a pip agent's package accepts.

A pip agent gets a virtualenv made with an interpreter its package accepts (``[install]
python``, a range such as ``">=3.10,<3.13"``); this module reads such a range, finds the
interpreters installed here (the running one, ``python3.N`` on PATH, pyenv's) and asks each
its version. ``harness.agents.install`` picks one of them for an install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def parse_python_spec(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """``">=3.10,<3.13"`` → ``[(">=", (3, 10)), ("<", (3, 13))]``; ValueError on anything else."""
    out = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        for op in (">=", "<=", "==", "!=", ">", "<"):
            if part.startswith(op):
                numbers = part[len(op):].strip()
                try:
                    version = tuple(int(n) for n in numbers.split("."))
                except ValueError:
                    raise ValueError(f"bad Python version in {spec!r}: {part!r}") from None
                out.append((op, version))
                break
        else:
            raise ValueError(f"bad Python version range {spec!r}: {part!r} has no comparison")
    return out


def python_accepts(spec: str | None, version: tuple[int, ...]) -> bool:
    if not spec:
        return True
    for op, bound in parse_python_spec(spec):
        have = tuple(version[: len(bound)])
        ok = {">=": have >= bound, "<=": have <= bound, "==": have == bound, "!=": have != bound,
              ">": have > bound, "<": have < bound}[op]
        if not ok:
            return False
    return True


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: tuple[int, int, int]

    def __str__(self) -> str:
        return f"{self.path} ({'.'.join(map(str, self.version))})"


def candidate_pythons() -> list[Path]:
    """``sys.executable``, ``python3.N`` on PATH, and ``~/.pyenv/versions/*/bin/python3``."""
    seen: dict[str, Path] = {}
    paths: list[Path] = [Path(sys.executable)]
    for minor in range(20, 7, -1):
        found = shutil.which(f"python3.{minor}")
        if found and "/.pyenv/shims/" not in found:
            paths.append(Path(found))
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        paths.extend(sorted(pyenv.glob("*/bin/python3")))
    for p in paths:
        try:
            real = os.path.realpath(p)
        except OSError:
            continue
        if os.access(real, os.X_OK) and real not in seen:
            seen[real] = p
    return list(seen.values())


def interpreter_version(path: Path) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([str(path), "-c", "import sys; print(*sys.version_info[:3])"],
                             capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 3:
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def wanted_names(spec: str | None) -> str:
    """One or two interpreter names a version range accepts, to suggest in an error."""
    names = [f"python3.{m}" for m in range(8, 20) if python_accepts(spec, (3, m, 0))]
    return " or ".join(names[:2])
