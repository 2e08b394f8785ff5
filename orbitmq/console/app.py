"""The console's aiohttp application: static pages, the JSON API under /api, login sessions.

Routes map one-to-one onto `orbitmq.console.service` functions, each run with
an AdminClient signed by the session's account (or the console's own
credentials when login is off). Failures become JSON `{"error", "code"}`
answers: 400 for bad input, 401 without a session when login is required,
403 for a read-only account's change, 404 for an unknown topic, 502 when a
NameServer or broker refused or did not answer.
"""

from __future__ import annotations

import json
import logging
import secrets
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from orbitmq.admin.api import AdminClient
from orbitmq.admin.times import parse_timestamp
from orbitmq.client.acl import AclCredentials
from orbitmq.client.validation import check_group, check_topic
from orbitmq.console import service
from orbitmq.console.openapi import openapi_document
from orbitmq.errors import BrokerError, ClientError, NoPermission, OrbitMQError, TopicNotExist
from orbitmq.remoting.tls import TlsSettings

log = logging.getLogger("orbitmq.console")

SESSION_COOKIE = "orbitmq_console"
#: Sessions end after this many seconds without a request.
SESSION_IDLE_SECONDS = 8 * 3600

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    def __init__(self, status: int, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


@dataclass
class Session:
    credentials: AclCredentials
    admin: bool
    client: AdminClient
    last_used: float


@dataclass(frozen=True)
class ConsoleSettings:
    namesrv_addrs: Sequence[str]
    #: Login required: every API call runs as the logged-in account.
    login: bool = False
    #: Credentials used when login is off (None: unsigned requests).
    credentials: AclCredentials | None = None
    timeout: float = 5.0
    #: Client TLS settings for NameServers and brokers (None: the admin API's defaults).
    tls: TlsSettings | None = None


APP_SETTINGS = web.AppKey("settings", ConsoleSettings)
APP_SESSIONS = web.AppKey("sessions", dict)
APP_CLIENT = web.AppKey("client", AdminClient)


def _static_dir() -> Path:
    return Path(str(resources.files("orbitmq.console") / "static"))


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, ensure_ascii=False))


# --- request parsing ------------------------------------------------------------------


def _int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be between {low} and {high}, got {value}")
    return value


def _time(value: Any, name: str) -> int:
    if isinstance(value, int):
        return value
    try:
        return parse_timestamp(str(value))
    except ValueError as exc:
        raise ApiError(400, f"{name}: {exc}") from None


def _checked(value: Any, check: Callable[[str], None]) -> str:
    """A topic or group name from the request, checked by the client's own name rules."""
    name = str(value or "")
    try:
        check(name)
    except ClientError as exc:
        raise ApiError(400, str(exc)) from None
    return name


def _topic(value: Any) -> str:
    return _checked(value, check_topic)


def _group(value: Any) -> str:
    return _checked(value, check_group)


async def _body(request: web.Request) -> dict[str, Any]:
    # A page of another site can POST text/plain here without asking first; JSON cannot be sent
    # cross-site without a CORS preflight, which this server never grants.
    if request.content_type != "application/json":
        raise ApiError(415, "send the request body as application/json")
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(400, "the request body must be a JSON object") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return data


def _page(request: web.Request) -> tuple[int, int]:
    return _int(request, "page", 0, 0, 10**9), _int(request, "size", 20, 1, service.MAX_PAGE_SIZE)


# --- sessions and the admin client per request ---------------------------------------


def _session(request: web.Request) -> Session | None:
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    sessions: dict[str, Session] = request.app[APP_SESSIONS]
    found = sessions.get(token)
    if found is None:
        return None
    if time.monotonic() - found.last_used > SESSION_IDLE_SECONDS:
        return None
    found.last_used = time.monotonic()
    return found


def _client(request: web.Request, write: bool = False) -> AdminClient:
    settings = request.app[APP_SETTINGS]
    if not settings.login:
        return request.app[APP_CLIENT]
    session = _session(request)
    if session is None:
        raise ApiError(401, "log in first")
    if write and not session.admin:
        raise ApiError(403, f"account {session.credentials.access_key!r} is read-only: it cannot change anything")
    return session.client


def api(write: bool = False) -> Callable[[Callable[[web.Request, AdminClient], Awaitable[Any]]], Handler]:
    """Wrap a handler: resolve the AdminClient, answer JSON, map errors to statuses."""

    def wrap(func: Callable[[web.Request, AdminClient], Awaitable[Any]]) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            try:
                result = await func(request, _client(request, write))
            except ApiError as exc:
                return _json({"error": exc.message, "code": exc.code}, exc.status)
            except TopicNotExist as exc:
                return _json({"error": exc.remark or "topic does not exist", "code": exc.code}, 404)
            except NoPermission as exc:
                return _json({"error": exc.remark or "no permission", "code": exc.code}, 403)
            except BrokerError as exc:
                return _json({"error": exc.remark or str(exc), "code": exc.code}, 502)
            except ClientError as exc:
                return _json({"error": str(exc), "code": None}, 400)
            except (OrbitMQError, OSError) as exc:
                return _json({"error": str(exc) or type(exc).__name__, "code": None}, 502)
            if isinstance(result, web.StreamResponse):
                return result
            return _json(result)

        handler.__name__ = func.__name__
        return handler

    return wrap


# --- handlers -------------------------------------------------------------------------


async def get_session(request: web.Request) -> web.Response:
    settings = request.app[APP_SETTINGS]
    if not settings.login:
        return _json({"loginRequired": False, "loggedIn": True, "accessKey": "", "admin": True})
    session = _session(request)
    return _json({
        "loginRequired": True, "loggedIn": session is not None,
        "accessKey": session.credentials.access_key if session else "", "admin": bool(session and session.admin),
    })


async def login(request: web.Request) -> web.Response:
    settings = request.app[APP_SETTINGS]
    try:
        data = await _body(request)
    except ApiError as exc:
        return _json({"error": exc.message, "code": None}, exc.status)
    access_key, secret_key = str(data.get("accessKey") or ""), str(data.get("secretKey") or "")
    if not settings.login:
        return _json({"error": "this console runs without login", "code": None}, 400)
    if not access_key or not secret_key:
        return _json({"error": "give accessKey and secretKey", "code": None}, 400)
    try:
        creds = AclCredentials(access_key, secret_key)
    except ValueError as exc:
        return _json({"error": str(exc), "code": None}, 400)
    client = AdminClient(settings.namesrv_addrs, timeout=settings.timeout, credentials=creds, tls=settings.tls)
    try:
        admin = await _check_account(client)
    except ApiError as exc:
        await client.close()
        return _json({"error": exc.message, "code": exc.code}, exc.status)
    await _forget_idle_sessions(request.app)
    token = secrets.token_urlsafe(32)
    request.app[APP_SESSIONS][token] = Session(creds, admin, client, time.monotonic())
    response = _json({"loginRequired": True, "loggedIn": True, "accessKey": access_key, "admin": admin})
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="Strict", max_age=SESSION_IDLE_SECONDS)
    return response


async def _forget_idle_sessions(app: web.Application) -> None:
    sessions: dict[str, Session] = app[APP_SESSIONS]
    now = time.monotonic()
    for token in [t for t, found in sessions.items() if now - found.last_used > SESSION_IDLE_SECONDS]:
        await sessions.pop(token).client.close()


async def _check_account(client: AdminClient) -> bool:
    """True for an admin account, False for a read-only one; ApiError when the brokers refuse it."""
    try:
        info = await client.cluster_info()
        masters = [d.master_addr for d in info.broker_addr_table.values() if d.master_addr]
        if not masters:
            raise ApiError(502, "no master broker is registered with the NameServer")
        await client.broker_runtime_info(masters[0])
    except NoPermission as exc:
        raise ApiError(401, f"the brokers refuse this account: {exc.remark}", exc.code) from None
    except BrokerError as exc:
        raise ApiError(401, f"the brokers refuse this account: {exc.remark}", exc.code) from None
    except OrbitMQError as exc:
        raise ApiError(502, str(exc)) from None
    try:
        await client.acl_config(masters[0])
    except BrokerError:
        return False
    return True


async def logout(request: web.Request) -> web.Response:
    token = request.cookies.get(SESSION_COOKIE)
    session = request.app[APP_SESSIONS].pop(token, None) if token else None
    if session is not None:
        await session.client.close()
    login_required = request.app[APP_SETTINGS].login
    response = _json({"loginRequired": login_required, "loggedIn": not login_required, "accessKey": "",
                      "admin": not login_required})
    response.del_cookie(SESSION_COOKIE)
    return response


@api()
async def get_cluster(request: web.Request, client: AdminClient) -> Any:
    return await service.cluster(client)


@api()
async def list_topics(request: web.Request, client: AdminClient) -> Any:
    page, size = _page(request)
    return await service.topics(client, request.query.get("q", ""), request.query.get("kind", ""), page, size)


@api()
async def get_topic(request: web.Request, client: AdminClient) -> Any:
    return await service.topic_detail(client, _topic(request.match_info["topic"]))


def _queue_nums(data: dict[str, Any], name: str) -> int:
    value = data.get(name, 8)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1024:
        raise ApiError(400, f"{name} must be an integer from 1 to 1024")
    return value


@api(write=True)
async def put_topic(request: web.Request, client: AdminClient) -> Any:
    data = await _body(request)
    perm = data.get("perm", 6)
    if not isinstance(perm, int) or isinstance(perm, bool) or not 0 <= perm <= 7:
        raise ApiError(400, "perm must be an integer from 0 to 7 (4 read, 2 write, 1 inherit)")
    cluster = data.get("cluster") or None
    return await service.put_topic(
        client, _topic(request.match_info["topic"]), _queue_nums(data, "readQueueNums"),
        _queue_nums(data, "writeQueueNums"), perm, bool(data.get("order", False)),
        str(cluster) if cluster else None,
    )


@api(write=True)
async def delete_topic(request: web.Request, client: AdminClient) -> Any:
    return await service.delete_topic(client, _topic(request.match_info["topic"]))


@api()
async def list_groups(request: web.Request, client: AdminClient) -> Any:
    page, size = _page(request)
    return await service.groups(client, request.query.get("q", ""), page, size)


@api()
async def get_group(request: web.Request, client: AdminClient) -> Any:
    return await service.group_detail(client, _group(request.match_info["group"]))


@api(write=True)
async def reset_offset(request: web.Request, client: AdminClient) -> Any:
    data = await _body(request)
    group = _group(request.match_info["group"])
    topic = _topic(data.get("topic"))
    if data.get("skipBacklog"):
        when = -1
    else:
        when = _time(data.get("timestamp", ""), "timestamp")
    return await service.reset_offset(client, group, topic, when)


@api()
async def query_messages(request: web.Request, client: AdminClient) -> Any:
    topic = _topic(request.query.get("topic"))
    key, msg_id = request.query.get("key", ""), request.query.get("msgId", "")
    if msg_id:
        return await service.message_by_id(client, topic, msg_id)
    if key:
        return await service.messages_by_key(client, topic, key)
    page, size = _page(request)
    begin = _time(request.query.get("begin") or "0", "begin")
    end = _time(request.query.get("end") or "now", "end")
    return await service.messages_by_time(client, topic, begin, end, page, size)


@api()
async def get_trace(request: web.Request, client: AdminClient) -> Any:
    trace_topic = _topic(request.query.get("traceTopic") or service.DEFAULT_TRACE_TOPIC)
    return await service.message_trace(client, request.match_info["msgId"].strip(), trace_topic)


@api(write=True)
async def resend_message(request: web.Request, client: AdminClient) -> Any:
    data = await _body(request)
    return await service.resend_to_group(
        client, _group(data.get("group")), str(request.match_info["offsetMsgId"]), str(data.get("clientId") or ""),
    )


@api()
async def get_producers(request: web.Request, client: AdminClient) -> Any:
    return await service.producers(client, _group(request.match_info["group"]))


@api()
async def get_dlq(request: web.Request, client: AdminClient) -> Any:
    page, size = _page(request)
    return await service.dlq_page(client, _group(request.match_info["group"]), page, size)


@api(write=True)
async def resend_dlq(request: web.Request, client: AdminClient) -> Any:
    data = await _body(request)
    ids = data.get("msgIds") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ApiError(400, "msgIds must be a list of message ids (offset, message or original ids)")
    return await service.dlq_resend(client, _group(request.match_info["group"]), ids)


@api()
async def export_dlq(request: web.Request, client: AdminClient) -> Any:
    group = _group(request.match_info["group"])
    response = web.StreamResponse(headers={
        "Content-Type": "application/x-ndjson",
        "Content-Disposition": f'attachment; filename="dlq-{group}.jsonl"',
    })
    await response.prepare(request)
    for line in await service.dlq_export(client, group):
        await response.write(line.encode())
    await response.write_eof()
    return response


@api()
async def get_acl(request: web.Request, client: AdminClient) -> Any:
    return await service.acl(client)


async def get_openapi(request: web.Request) -> web.Response:
    return _json(openapi_document())


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(_static_dir() / "index.html")


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
    return response


def make_app(settings: ConsoleSettings) -> web.Application:
    app = web.Application(middlewares=[security_headers])
    app[APP_SETTINGS] = settings
    app[APP_SESSIONS] = {}
    app[APP_CLIENT] = AdminClient(settings.namesrv_addrs, timeout=settings.timeout, credentials=settings.credentials,
                                  tls=settings.tls)

    async def close_clients(app: web.Application) -> None:
        await app[APP_CLIENT].close()
        for session in app[APP_SESSIONS].values():
            await session.client.close()

    app.on_cleanup.append(close_clients)
    r = app.router
    r.add_get("/", index)
    r.add_static("/static", _static_dir())
    r.add_get("/api/openapi.json", get_openapi)
    r.add_get("/api/session", get_session)
    r.add_post("/api/login", login)
    r.add_post("/api/logout", logout)
    r.add_get("/api/cluster", get_cluster)
    r.add_get("/api/topics", list_topics)
    r.add_get("/api/topics/{topic}", get_topic)
    r.add_put("/api/topics/{topic}", put_topic)
    r.add_delete("/api/topics/{topic}", delete_topic)
    r.add_get("/api/groups", list_groups)
    r.add_get("/api/groups/{group}", get_group)
    r.add_post("/api/groups/{group}/reset-offset", reset_offset)
    r.add_get("/api/messages", query_messages)
    r.add_get("/api/messages/{msgId}/trace", get_trace)
    r.add_post("/api/messages/{offsetMsgId}/resend", resend_message)
    r.add_get("/api/producers/{group}", get_producers)
    r.add_get("/api/dlq/{group}", get_dlq)
    r.add_post("/api/dlq/{group}/resend", resend_dlq)
    r.add_get("/api/dlq/{group}/export", export_dlq)
    r.add_get("/api/acl", get_acl)
    return app


async def start_console(
    settings: ConsoleSettings, host: str, port: int, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, str, int]:
    """Start the console on host:port (0: any free port), over HTTPS with `ssl_context`; returns the
    runner and the bound address."""
    runner = web.AppRunner(make_app(settings), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    return runner, str(bound_host), int(bound_port)
