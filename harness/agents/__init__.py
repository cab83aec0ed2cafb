"""Real agents: the installable ones (built-in profiles with ``[install]``), installs into a
per-user cache, and session-store recordings.

Other code calls :func:`installed_path` and :func:`binary`; ``stopbench agents`` is the command.
"""

from harness.agents.install import (
                                    InstallError,
                                    NotInstalled,
                                    PythonNotFound,
                                    RegistryUnreachable,
                                    UnknownAgent,
                                    agents,
                                    binary,
                                    cache_root,
                                    get_agent,
                                    install,
                                    install_dir,
                                    installed_path,
)

__all__ = ["InstallError", "NotInstalled", "PythonNotFound", "RegistryUnreachable", "UnknownAgent", "agents",
           "binary", "cache_root", "get_agent", "install", "install_dir", "installed_path"]
