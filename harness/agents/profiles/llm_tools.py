"""The shell tool stopbench hands to llm (``llm --functions llm_tools.py``): llm has no tools
of its own, so the profile ships this one. The command runs to its end in the foreground;
its exit status and output are the tool's result, as a coding agent's shell tool returns them."""

import subprocess


def bash(command: str) -> str:
    """Run a shell command in the current folder and return its exit status and output."""
    done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    return f"exit status {done.returncode}\n{done.stdout}{done.stderr}"
