"""What a recording keeps of a session store: a copy of every file (for SQLite, through the
backup API from a read-only connection), with the run's keys, this installation's paths and the
run folder's replaced by placeholders."""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.agents.install import cache_root

KEY_PLACEHOLDER = "sk-stopbench-REDACTED"
CANARY = re.compile(rb"sk-stopbench-[0-9a-f]{32}")  # the shape of a run's key (harness.run.rundir.canary_key)
SQLITE_DUMP_ABOVE = 64 << 10  # bytes: a bigger database is kept as its SQL dump


class Scrubber:
    """Replaces the keys, this installation's paths and ``paths`` in everything that is kept."""

    def __init__(self, keys: Iterable[str], paths: Mapping[str, str] | None = None):
        repo = Path(__file__).resolve().parents[2]
        pairs = [*((key, KEY_PLACEHOLDER) for key in keys), *(paths or {}).items(),
                 (sys.executable, "python3"), (str(Path(sys.executable).resolve()), "python3"),
                 (sys.prefix, "/opt/stopbench-venv"), (str(repo), "/opt/stopbench"),
                 (str(cache_root()), "~/.cache/stopbench")]
        seen: dict[str, str] = {}
        for old, new in pairs:
            if old and old not in seen and old not in ("/", ""):
                seen[old] = new
        self.pairs = sorted(seen.items(), key=lambda p: -len(p[0]))

    def text(self, s: str) -> str:
        for old, new in self.pairs:
            s = s.replace(old, new)
        return s

    def data(self, b: bytes) -> bytes:
        for old, new in self.pairs:
            b = b.replace(old.encode(), new.encode())
        return b

    def sqlite(self, path: Path) -> None:
        con = sqlite3.connect(path)
        try:
            tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' "
                                                "and name not like 'sqlite_%'")]
            for table in tables:
                cols = [r[1] for r in con.execute(f'pragma table_info("{table}")')]
                for col in cols:
                    expr = f'"{col}"'
                    for old, new in self.pairs:
                        expr = f"replace({expr}, {_sql_str(old)}, {_sql_str(new)})"
                    con.execute(f'update "{table}" set "{col}" = {expr} where typeof("{col}") = \'text\'')
            con.commit()
            con.execute("vacuum")
        finally:
            con.close()


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def sqlite_copy(source: Path, dest: Path) -> None:
    """A consistent copy of a live SQLite database: the backup API, from a read-only connection."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=10)
    try:
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


def snapshot(files: Iterable[Path], run_dir: Path, dest: Path, scrub: Scrubber) -> list[str]:
    """Copy ``files`` of a run folder under ``dest``, scrubbed: a file under the run's HOME by its
    path there, any other by its path in the run folder. The paths kept, relative to ``dest``."""
    kept = []
    home = run_dir / "home"
    for path in files:
        rel = path.relative_to(home) if path.is_relative_to(home) else path.relative_to(run_dir)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".db":
            sqlite_copy(path, target)
            scrub.sqlite(target)
            if target.stat().st_size > SQLITE_DUMP_ABOVE:
                # Mostly empty pages of a few dozen tables: keep the SQL text instead.
                con = sqlite3.connect(target)
                try:
                    dump = "\n".join(con.iterdump()) + "\n"
                finally:
                    con.close()
                target.unlink()
                target = target.with_name(target.name + ".sql")
                target.write_text(dump, encoding="utf-8")
                rel = target.relative_to(dest)
        else:
            target.write_bytes(scrub.data(path.read_bytes()))
        kept.append(str(rel))
    return kept

