"""What a request record keeps of the credentials a request carries: where they were, never their values.

The server records every request it sees, and records go to files, long polls and reports; a
client's API key (in a header, or Google's ``?key=``) and the run's beacon token must never
reach them. These are the names of those secrets and the functions that replace them.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from aiohttp import web

SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization", "cookie"}
SECRET_QUERY = {"key"}      # Google's clients may send the API key as ?key=…


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    """Header names lower-cased (HTTP does not care) and secrets replaced."""
    return {k.lower(): ("[redacted]" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


def credentials(request: web.Request) -> list[str]:
    """The secrets a request carries in its headers and query (a bearer token without its scheme)."""
    values = [v for k, v in request.headers.items() if k.lower() in SECRET_HEADERS]
    values += [request.query[name] for name in SECRET_QUERY if name in request.query]
    return [v.split(" ", 1)[1] if v.lower().startswith("bearer ") else v for v in values]


def redacted_path(request: web.Request) -> str:
    """The path and query as a record keeps them: secret query parameters replaced."""
    if not any(name in request.query for name in SECRET_QUERY):
        return request.path_qs
    return str(request.rel_url.update_query({name: "[redacted]" for name in SECRET_QUERY if name in request.query}))


def redacted_beacon(path: str) -> str:
    """A beacon path as a record keeps it: whatever token it carries replaced."""
    return re.sub(r"^/run/[^/]*/", "/run/[redacted]/", path)
