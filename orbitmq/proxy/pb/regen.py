"""Regenerates the committed protobuf/gRPC modules from the .proto files beside this one.

Run from the repository root: ``python -m orbitmq.proxy.pb.regen`` (``./run protos``). Needs
grpcio-tools (the ``test`` extra). ``generate(outdir)`` writes into another folder, which is how the
test checks that the committed modules are what the .proto files give.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROTOS = ("orbitmq/proxy/pb/definition.proto", "orbitmq/proxy/pb/service.proto")


def generate(outdir: Path) -> None:
    from grpc_tools import protoc  # the test extra; not needed at run time

    include = str(resources.files("grpc_tools") / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"-I{include}",
        f"--python_out={outdir}",
        f"--pyi_out={outdir}",
        f"--grpc_python_out={outdir}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def main() -> None:
    generate(ROOT)
    print("regenerated " + ", ".join(PROTOS), file=sys.stderr)


if __name__ == "__main__":
    main()
