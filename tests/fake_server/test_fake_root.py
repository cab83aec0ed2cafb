"""The server finds its way for a person or a script: ``GET /`` lists its endpoints, and a
path it does not answer is a recorded 404 with a JSON error body."""

from __future__ import annotations

import aiohttp

from fake_server.records import Error


async def test_the_root_lists_the_endpoints(server):
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url + "/") as resp:
            assert resp.status == 200
            listing = await resp.json()
    endpoints = {(e["method"], e["path"]) for e in listing["endpoints"]}
    assert {("POST", "/v1/chat/completions"), ("POST", "/v1/responses"), ("POST", "/v1/messages"),
            ("POST", "/v1beta/models/{model}:{method}"), ("GET", "/v1/models"),
            ("GET", "/_stopbench/records"), ("POST", "/_stopbench/beacon")} <= endpoints
    assert not any("{tail" in path or method in ("HEAD", "*") for method, path in endpoints)
    assert len(endpoints) == len(listing["endpoints"])


async def test_each_listed_endpoint_is_answered_by_its_own_route(server):
    """No listed GET endpoint falls through to the unknown-path answer."""
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url + "/") as resp:
            listing = await resp.json()
        for endpoint in listing["endpoints"]:
            if endpoint["method"] == "GET" and "{" not in endpoint["path"]:
                async with http.get(server.url + endpoint["path"]) as resp:
                    assert resp.status == 200, endpoint
    assert not [r for r in server.records if isinstance(r, Error)]


async def test_an_unknown_path_is_a_recorded_404_that_points_at_the_listing(server):
    async with aiohttp.ClientSession() as http:
        async with http.post(server.url + "/chat/completion", json={}) as resp:
            assert resp.status == 404
            body = await resp.json()
    assert body == {"error": {"type": "not_found",
                              "message": "Invalid URL (POST /chat/completion): GET / lists the endpoints of this server"}}
    (error,) = [r for r in server.records if isinstance(r, Error)]
    assert (error.method, error.path, error.status) == ("POST", "/chat/completion", 404)
    assert error.problem == "Invalid URL (POST /chat/completion)"
