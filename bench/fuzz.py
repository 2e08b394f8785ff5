"""Long fuzzing run against a NameServer and a broker (not a test): `python -m bench.fuzz [options]`.

Two engines, the same checks as tests/fuzz (see tests/fuzz/harness.py):

* `hypothesis` (default): `orbitmq dev` in a child process; batches of
  hypothesis-generated requests for every request code (hostile header values,
  bodies of every shape, both header serializations) to the broker and the
  NameServer, and mutated or random byte streams, until `--seconds` pass.
* `atheris`: coverage-guided (libFuzzer through atheris, when it is installed):
  a NameServer and a broker run in this process on a background event loop, the
  orbitmq code is instrumented, and each input is decoded into either a raw
  byte stream or a structured request, sent over loopback, and checked.

Both keep going after a finding and print, at the end: inputs sent, findings
grouped by kind (with one input each, as hex), and the final health checks
(servers up, acknowledged messages readable, unexpected exceptions logged).

    python -m bench.fuzz --seconds 300                 # hypothesis, 5 minutes
    python -m bench.fuzz --engine atheris --seconds 300
    python -m bench.fuzz --engine both --seconds 120   # 120 s each
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import harness

#: Inputs per hypothesis batch; a health check runs between batches.
BATCH = 400


@dataclass
class Findings:
    """Problems seen, grouped by a signature with numbers and addresses taken out."""

    inputs: collections.Counter[str] = field(default_factory=collections.Counter)
    kinds: dict[str, tuple[int, str]] = field(default_factory=dict)  # signature -> (count, example hex)

    def add(self, problem: str, data: bytes) -> None:
        # One signature per kind: numbers (but request codes), byte values and addresses taken out.
        signature = re.sub(r"0x[0-9a-f]+|(?<!code )(?<!code\(s\) \[)(?<![\w-])\d+\b", "N", problem)[:240]
        known = harness.fixed_elsewhere(problem)
        if known:
            signature = f"[known: issue 10 {known}] {signature}"
        count, example = self.kinds.get(signature, (0, data[:160].hex()))
        self.kinds[signature] = (count + 1, example)

    def report(self) -> list[str]:
        lines = [f"inputs: {sum(self.inputs.values())} ({', '.join(f'{k} {v}' for k, v in self.inputs.items())})"]
        if not self.kinds:
            lines.append("findings: none")
        for signature, (count, example) in sorted(self.kinds.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"finding x{count}: {signature}\n    example input (hex, head): {example}")
        return lines


# --- hypothesis engine --------------------------------------------------------------


def run_hypothesis(seconds: float, findings: Findings) -> list[str]:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tests.fuzz.strategies import mutated_streams, requests

    process = harness.start_dev(Path(tempfile.mkdtemp(prefix="orbitmq-fuzz-")))
    namesrv, broker = process.addresses[0], process.addresses[1]
    kept = harness.send_acknowledged(broker)
    fuzz_settings = settings(
        max_examples=BATCH, deadline=None, database=None, phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    targets = {"broker request": (broker, requests(harness.ALL_CODES)),
               "namesrv request": (namesrv, requests(harness.ALL_CODES)),
               "mutated stream": (None, mutated_streams(harness.ALL_CODES))}

    def make_batch(kind: str, addr: str | None, strategy: st.SearchStrategy[bytes]) -> Callable[[], None]:
        @fuzz_settings
        @given(data=strategy, to_broker=st.booleans())
        def batch(data: bytes, to_broker: bool) -> None:
            target = addr or (broker if to_broker else namesrv)
            findings.inputs[kind] += 1
            for problem in harness.exchange(target, data).problems():
                findings.add(f"{kind}: {problem}", data)

        return batch  # type: ignore[no-any-return]

    deadline = time.monotonic() + seconds
    health: list[str] = []
    try:
        while time.monotonic() < deadline:
            for kind, (addr, strategy) in targets.items():
                make_batch(kind, addr, strategy)()
                if process.popen.poll() is not None:
                    health.append("the server process died")
                    return health
                try:
                    harness.check_alive(broker, namesrv)
                except AssertionError as exc:
                    findings.add(f"health check failed: {exc}", b"")
        try:
            harness.check_readable(broker, kept)
            health.append(f"acknowledged messages readable: all {len(kept.bodies)}")
        except AssertionError as exc:
            health.append(f"ACKNOWLEDGED MESSAGES NOT READABLE: {exc}")
        for line in harness.unexpected_log_lines(process.output):
            findings.add(f"server log: {re.sub(r'127.0.0.1:[0-9]+ ', '', line)}", b"")
        health.append("server process up" if process.popen.poll() is None else "SERVER PROCESS DIED")
    finally:
        process.stop()
    return health


# --- atheris engine -------------------------------------------------------------------


def run_atheris(seconds: float, findings: Findings) -> list[str]:
    """Run the coverage-guided worker in a child process (libFuzzer ends its process) and read its findings."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        return ["atheris is not installed (pip install atheris); the coverage-guided run was skipped"]
    out = Path(tempfile.mkdtemp(prefix="orbitmq-atheris-")) / "findings.jsonl"
    corpus = out.parent / "corpus"
    corpus.mkdir()
    cmd = [sys.executable, "-m", "bench.fuzz", "--atheris-worker", str(out), f"-max_total_time={int(seconds)}",
           "-timeout=30", "-rss_limit_mb=4096", str(corpus)]
    log = out.parent / "libfuzzer.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
        try:
            proc.wait(seconds + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")
    stats = [line for line in text.splitlines() if re.match(r"#\d+\s+(DONE|pulse|REDUCE|NEW|INITED)", line)]
    health = [f"libFuzzer: {stats[-1].strip()}" if stats else "libFuzzer printed no statistics",
              f"corpus kept: {len(list(corpus.iterdir()))} inputs (libFuzzer log: {log})"]
    if proc.returncode != 0:
        health.append(f"worker exit code {proc.returncode}; the end of its log: {text.strip().splitlines()[-3:]}")
    last_health = "no health check reported"
    if out.exists():
        for raw in out.read_text().splitlines():
            entry = json.loads(raw)
            if entry["kind"] == "inputs":
                findings.inputs["atheris inputs"] += entry["count"]
            elif entry["kind"] == "health":
                last_health = entry["text"]
            else:
                findings.add(entry["problem"], bytes.fromhex(entry["input"]))
    return [*health, last_health]


def atheris_worker(out_path: str, libfuzzer_args: list[str]) -> None:
    import asyncio
    import logging
    import threading

    import atheris

    from orbitmq.broker.config import BrokerConfig
    from orbitmq.broker.server import Broker
    from orbitmq.namesrv import NameServer, NamesrvConfig
    from orbitmq.remoting.command import SerializeType
    from tests.fuzz.strategies import PLAUSIBLE

    out = open(out_path, "a", encoding="utf-8")  # noqa: SIM115 - written until libFuzzer ends the process
    current = [""]  # the input being sent (hex), named by findings the server logs meanwhile

    def record(kind: str, **fields: object) -> None:
        out.write(json.dumps({"kind": kind, **fields}) + "\n")
        out.flush()

    class Unexpected(logging.Handler):
        def emit(self, rec: logging.LogRecord) -> None:
            if harness.UNEXPECTED.search(rec.getMessage()):
                exc = rec.exc_info[1] if rec.exc_info else None
                where = ""
                if exc is not None and exc.__traceback__ is not None:
                    tb = exc.__traceback__
                    while tb.tb_next is not None:
                        tb = tb.tb_next
                    where = f" in {tb.tb_frame.f_code.co_name} ({Path(tb.tb_frame.f_code.co_filename).name})"
                problem = re.sub(r"from \S+ ", "", rec.getMessage()) + f"{where}: {type(exc).__name__}: {exc}"
                record("finding", problem=f"server log: {problem}", input=current[0])

    logging.getLogger("orbitmq").addHandler(Unexpected(logging.ERROR))
    logging.getLogger("orbitmq").setLevel(logging.ERROR)

    root = Path(tempfile.mkdtemp(prefix="orbitmq-atheris-store-"))
    loop = asyncio.new_event_loop()
    addresses: list[str] = []
    ready = threading.Event()

    async def serve() -> None:
        ns = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0,
                                      kv_config_path=str(root / "kvConfig.json")))
        host, port = await ns.start()
        broker = Broker(BrokerConfig.from_properties({
            "listenHost": "127.0.0.1", "listenPort": "0", "brokerIP1": "127.0.0.1",
            "namesrvAddr": f"{host}:{port}", "storePathRootDir": str(root / "store"),
            "mappedFileSizeCommitLog": str(16 << 20), "mappedFileSizeConsumeQueue": "120000",
            "enablePropertyFilter": "true",
        }))
        bhost, bport = await broker.start()
        addresses.extend([f"{host}:{port}", f"{bhost}:{bport}"])
        ready.set()
        await asyncio.Event().wait()

    threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True).start()
    ready.wait(60)
    namesrv, broker = addresses
    kept = harness.send_acknowledged(broker)
    atheris.instrument_all()

    fields_names = sorted(set(harness.FIELD_NAMES) | set(PLAUSIBLE))
    values = harness.NUMBERS + harness.TEXTS
    counter = [0]

    def one_input(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        shape = fdp.ConsumeIntInRange(0, 3)
        target = broker if fdp.ConsumeBool() else namesrv
        if shape == 0:
            stream = fdp.ConsumeBytes(fdp.remaining_bytes())
        else:
            code = harness.ALL_CODES[fdp.ConsumeIntInRange(0, len(harness.ALL_CODES) - 1)]
            fields = dict(PLAUSIBLE) if shape == 2 else {}
            for _ in range(fdp.ConsumeIntInRange(0, 6)):
                name = fields_names[fdp.ConsumeIntInRange(0, len(fields_names) - 1)]
                if fdp.ConsumeBool():
                    fields[name] = values[fdp.ConsumeIntInRange(0, len(values) - 1)]
                else:
                    fields[name] = fdp.ConsumeUnicodeNoSurrogates(24)
            pick = fdp.ConsumeIntInRange(0, len(harness.BODIES))
            body = harness.BODIES[pick] if pick < len(harness.BODIES) else fdp.ConsumeBytes(fdp.remaining_bytes())
            serialize = SerializeType.ROCKETMQ if shape == 3 else SerializeType.JSON
            stream = harness.request(code, fields, body, serialize=serialize)
        if not stream:
            return
        current[0] = stream[:160].hex()
        for problem in harness.exchange(target, stream).problems():
            record("finding", problem=problem, input=stream[:160].hex())
        counter[0] += 1
        if counter[0] % 500 == 0:  # libFuzzer ends the process without notice: report as we go
            record("inputs", count=500)
            try:
                harness.check_alive(broker, namesrv)
                harness.check_readable(broker, kept)
                record("health", text=f"after {counter[0]} inputs: servers up, all {len(kept.bodies)} "
                                      "acknowledged messages readable")
            except AssertionError as exc:
                record("health", text=f"AFTER {counter[0]} INPUTS: {exc}")

    atheris.Setup([sys.argv[0], *libfuzzer_args], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--atheris-worker"]:
        atheris_worker(args[1], args[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300.0, help="duration of each engine's run")
    parser.add_argument("--engine", choices=["hypothesis", "atheris", "both"], default="hypothesis")
    opts = parser.parse_args(args)
    engines: dict[str, Callable[[float, Findings], list[str]]] = {
        "hypothesis": run_hypothesis, "atheris": run_atheris,
    }
    chosen = list(engines) if opts.engine == "both" else [opts.engine]
    for name in chosen:
        findings = Findings()
        started = time.monotonic()
        health = engines[name](opts.seconds, findings)
        print(f"== {name}: {time.monotonic() - started:.0f} s, pid {os.getpid()}")
        for line in findings.report() + health:
            print(line)


if __name__ == "__main__":
    main()
