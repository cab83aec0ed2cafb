"""Real agents: a pinned catalog, installs into a per-user cache, and session-store recordings.

Other code calls :func:`installed_path` and :func:`binary`; ``stopbench agents`` is the command.
"""

from harness.agents.catalog import AGENTS, Agent, UnknownAgent, get_agent
from harness.agents.install import (
                                    InstallError,
                                    NotInstalled,
                                    PythonNotFound,
                                    RegistryUnreachable,
                                    binary,
                                    cache_root,
                                    install,
                                    install_dir,
                                    installed_path,
)

__all__ = ["AGENTS", "Agent", "InstallError", "NotInstalled", "PythonNotFound", "RegistryUnreachable",
           "UnknownAgent", "binary", "cache_root", "get_agent", "install", "install_dir", "installed_path"]
