"""``stopbench agents``: the installable real agents (built-in profiles with [install]), their installs, and recordings.

    stopbench agents list
    stopbench agents install NAME[@VERSION] [--registry URL] [--force]   # --version V: the same as @V
    stopbench agents path NAME[@VERSION]
    stopbench agents record NAME CASE [--out DIR] [--keep]
    stopbench agents doctor NAME|PROFILE      # one short turn: what the profile starts, sends and finds

Exit codes: 0 done, 2 a usage or install error (the message says which and why).
"""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_ERROR = 0, 2


class UsageError(Exception):
    """Arguments that contradict themselves."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("agents", help="pinned real agents: list, install, record their session stores")
    sub = parser.add_subparsers(dest="agents_command", required=True)
    sub.add_parser("list", help="each agent, its pinned version, and whether and where it is installed")
    inst = sub.add_parser("install", help="install an agent into the cache ($STOPBENCH_CACHE or ~/.cache/stopbench)")
    inst.add_argument("name", help="an installable agent, NAME or NAME@VERSION (another version than the pinned one)")
    inst.add_argument("--version", help="another version than the pinned one (the same as NAME@VERSION)")
    inst.add_argument("--registry", help="registry URL (npm --registry, pip --index-url)")
    inst.add_argument("--force", action="store_true", help="reinstall even if installed")
    path = sub.add_parser("path", help="print the program of an installed agent")
    path.add_argument("name", help="NAME or NAME@VERSION")
    path.add_argument("--version", help="the same as NAME@VERSION")
    doctor = sub.add_parser("doctor", help="one short turn against the demo scenario, and what went wrong if it did")
    doctor.add_argument("agent", help="a built-in profile name or a profile TOML")
    from harness.agents import record

    record.add_arguments(sub.add_parser("record", help="record an agent's session store around kills and resumes"))
    parser.set_defaults(func=main)
    return parser


def main(args: argparse.Namespace) -> int:
    from harness.agents.install import InstallError, NotInstalled, UnknownAgent

    try:
        if args.agents_command in ("install", "path"):
            args.name, args.version = _name_and_version(args.name, args.version)
        if args.agents_command == "list":
            return _list()
        if args.agents_command == "install":
            from harness.agents.install import install

            install(args.name, args.version, registry=args.registry, force=args.force,
                    say=lambda s: print(s, flush=True))
            return EXIT_OK
        if args.agents_command == "path":
            from harness.agents.install import binary

            print(binary(args.name, args.version))
            return EXIT_OK
        if args.agents_command == "doctor":
            return _doctor(args.agent)
        if args.agents_command == "record":
            from harness.agents import record

            return record.main(args)
    except (UnknownAgent, InstallError, NotInstalled, UsageError) as exc:
        print(f"stopbench agents: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"stopbench agents: unknown command {args.agents_command!r}", file=sys.stderr)
    return EXIT_ERROR


def _name_and_version(spec: str, option: str | None) -> tuple[str, str | None]:
    """NAME@VERSION or NAME with ``--version``; both ways at once must agree."""
    from harness.agents.install import split_version

    try:
        name, version = split_version(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if version and option and option != version:
        raise UsageError(f"{spec!r} and --version {option} name two versions; give one")
    return name, version or option


def _doctor(agent: str) -> int:
    from harness.agents.doctor import doctor
    from harness.profiles import ProfileError, agent_binary, load_profile

    try:
        profile = load_profile(agent)
        if profile.agent:
            agent_binary(profile)
    except ProfileError as exc:
        print(f"stopbench agents doctor: {exc}", file=sys.stderr)
        return EXIT_ERROR
    code, lines = doctor(profile)
    print("\n".join(lines))
    return code


def _list() -> int:
    from harness.agents.install import agents_root, listing

    rows = listing()
    print(f"cache: {agents_root()}")
    width = max(len(r["name"]) for r in rows)
    spec_width = max(len(f"{r['package']}@{r['version']}") for r in rows)
    for r in rows:
        state = f"installed  {r['where']}" if r["installed"] else "not installed"
        extra = f" (also: {', '.join(r['other_versions'])})" if r["other_versions"] else ""
        py = f" python {r['python']}" if r["python"] else ""
        spec = f"{r['package']}@{r['version']}"
        print(f"  {r['name']:<{width}}  {r['registry']:<4}  {spec:<{spec_width}}  {py.strip():<20}  {state}{extra}")
    return EXIT_OK
