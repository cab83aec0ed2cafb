"""Provider-shaped errors: the bodies OpenAI, Anthropic and Google really send.

Clients branch on these shapes (the SDKs raise typed exceptions from them, agents retry on
429/529 and give up on 400), so a fake error must look like a real one down to the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field

OPENAI_DEFAULTS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found", "Not found."),
    408: ("server_error", None, "Request timed out."),
    409: ("server_error", None, "Conflict."),
    413: ("invalid_request_error", "request_too_large", "Request too large."),
    429: ("requests", "rate_limit_exceeded",
          "Rate limit reached for requests. Please try again in 1s."),
    500: ("server_error", None,
          "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    529: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
ANTHROPIC_DEFAULTS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found."),
    408: ("timeout_error", "Request timed out."),
    409: ("api_error", "Conflict."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    502: ("api_error", "Bad gateway."),
    503: ("api_error", "Service unavailable."),
    529: ("overloaded_error", "Overloaded"),
}
# Google's canonical status names per HTTP status, and the API's usual message for each.
GOOGLE_DEFAULTS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "Requested entity was not found."),
    408: ("DEADLINE_EXCEEDED", "The request timed out."),
    409: ("ABORTED", "The operation was aborted."),
    413: ("INVALID_ARGUMENT", "Request payload size exceeds the limit."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in "
                      "https://developers.generativeai.google/guide/troubleshooting"),
    502: ("UNAVAILABLE", "Bad gateway."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    529: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}
# Mid-stream error kinds (scenario `error = …`) → HTTP-status-like family used for the type.
STREAM_ERROR_STATUS = {"server_error": 500, "rate_limit": 429, "overloaded": 529, "invalid_request": 400}


@dataclass
class ApiError(Exception):
    """A refusal to answer: status, provider-shaped JSON body, extra headers."""
    status: int
    body: dict
    headers: dict = field(default_factory=dict)

    @property
    def message(self) -> str:
        error = self.body.get("error") or {}
        return error.get("message", "") if isinstance(error, dict) else str(error)


def openai_error(status: int, message: str | None = None, *, param: str | None = None,
                 code: str | None = None, kind: str | None = None,
                 retry_after: float | None = None) -> ApiError:
    d_kind, d_code, d_message = OPENAI_DEFAULTS.get(status, OPENAI_DEFAULTS[500])
    body = {"error": {"message": message or d_message, "type": kind or d_kind,
                      "param": param, "code": code if code is not None else d_code}}
    return ApiError(status, body, _retry_headers(retry_after))


def anthropic_error(status: int, message: str | None = None, *, kind: str | None = None,
                    retry_after: float | None = None, request_id: str = "req_stopbench") -> ApiError:
    d_kind, d_message = ANTHROPIC_DEFAULTS.get(status, ANTHROPIC_DEFAULTS[500])
    body = {"type": "error", "error": {"type": kind or d_kind, "message": message or d_message},
            "request_id": request_id}
    return ApiError(status, body, _retry_headers(retry_after))


def google_error(status: int, message: str | None = None, *, retry_after: float | None = None) -> ApiError:
    """Google's error body; a retry delay travels as a ``RetryInfo`` detail, which is where
    Google's clients read it (the API sends no Retry-After header)."""
    d_status, d_message = GOOGLE_DEFAULTS.get(status, GOOGLE_DEFAULTS[500])
    error: dict = {"code": status, "message": message or d_message, "status": d_status}
    if retry_after is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}]
    return ApiError(status, {"error": error})


def api_error(family: str, status: int, message: str | None = None, **kw) -> ApiError:
    """The error for ``family`` ("openai", "anthropic" or "google")."""
    if family == "anthropic":
        kw.pop("param", None), kw.pop("code", None)
        return anthropic_error(status, message, **kw)
    if family == "google":
        return google_error(status, message, retry_after=kw.get("retry_after"))
    return openai_error(status, message, **kw)


def _retry_headers(retry_after: float | None) -> dict:
    if retry_after is None:
        return {}
    return {"retry-after": f"{retry_after:g}", "retry-after-ms": str(int(retry_after * 1000))}
