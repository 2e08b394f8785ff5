"""Registers `MessagingService` with a grpc.aio server, with requests parsed leniently.

The generated registration turns an unparsable request into a bare gRPC error. Here each
method's request is parsed by a wrapper: bytes that are not the method's protobuf message become
`Malformed`, and the call is answered with the method's own response carrying
`Status{BAD_REQUEST}` (a Telemetry stream answers that command and stays open), as the protocol
answers every other bad request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb

SERVICE = "apache.rocketmq.v2.MessagingService"


class Malformed:
    """A request whose bytes are not the method's message."""

    def __init__(self, method: str, error: str) -> None:
        self.method = method
        self.error = error

    def status(self) -> pb.Status:
        return pb.Status(code=pb.BAD_REQUEST, message=f"{self.method}: the request is not a valid protobuf message")


def _parser(name: str, cls: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            return Malformed(name, str(exc))

    return parse


def _unary_unary(name: str, impl: Any, out: Any) -> Any:
    async def handle(request: Any, context: Any) -> Any:
        if isinstance(request, Malformed):
            return out(status=request.status())
        return await impl(request, context)

    return handle


def _unary_stream(name: str, impl: Any, out: Any) -> Any:
    async def handle(request: Any, context: Any) -> AsyncIterator[Any]:
        if isinstance(request, Malformed):
            yield out(status=request.status())
            return
        async for item in impl(request, context):
            yield item

    return handle


def generic_handler(service: Any) -> grpc.GenericRpcHandler:
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for method in spb.DESCRIPTOR.services_by_name["MessagingService"].methods:
        request_cls = getattr(spb, method.input_type.name)
        response_cls = getattr(spb, method.output_type.name)
        impl = getattr(service, method.name)
        parse = _parser(method.name, request_cls)
        serialize = response_cls.SerializeToString
        if method.client_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(
                impl, request_deserializer=parse, response_serializer=serialize)
        elif method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _unary_stream(method.name, impl, response_cls), request_deserializer=parse,
                response_serializer=serialize)
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _unary_unary(method.name, impl, response_cls), request_deserializer=parse,
                response_serializer=serialize)
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
