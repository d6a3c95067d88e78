"""The SDK as a user gets it: a wheel built from clients/python, installed into a fresh virtualenv of its
own (not this one's editable install), talking to the live server."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"

pytestmark = pytest.mark.django_db(transaction=True)


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--quiet", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (setuptools' build/ in the tree could hold stale files)."""
    root = tmp_path_factory.mktemp("sdk")
    shutil.copytree(CLIENT, root / "src", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _pip("wheel", "--no-deps", "--wheel-dir", str(root / "dist"), str(root / "src"))
    (built,) = (root / "dist").glob("atlas_memory_client-*.whl")
    return built


def test_the_wheel_holds_the_package_and_declares_httpx_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n for n in names if n.startswith("atlas_memory/")} == {
        f"atlas_memory/{name}"
        for name in (
            "__init__.py",
            "_async.py",
            "_async.pyi",
            "_client.py",
            "_operations.py",
            "_retry.py",
            "_version.py",
            "errors.py",
            "_plan.py",
            "_sessions.py",
            "langchain.py",
            "langgraph.py",
            "models.py",
            "openai_agents.py",
            "py.typed",
        )
    }
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == [
        "Requires-Dist: httpx<1,>=0.27",
        'Requires-Dist: langchain-core>=0.3; extra == "langchain"',
        'Requires-Dist: langgraph<2,>=1.0; extra == "langgraph"',
        'Requires-Dist: openai-agents<0.25,>=0.24; extra == "openai-agents"',
    ]
    assert "Name: atlas-memory-client" in metadata


def test_the_installed_wheel_talks_to_the_server(wheel: Path, world, tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    # httpx from this environment's site-packages (a path, so its editable install of the SDK is not seen).
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _pip("--python", str(python), "install", "--no-deps", str(wheel))
    script = textwrap.dedent(
        f"""
        import atlas_memory
        from atlas_memory import Atlas
        assert atlas_memory.__file__.startswith({str(env)!r}), atlas_memory.__file__
        with Atlas({world.url!r}, {world.svc!r}) as atlas:
            fact = atlas.fact_write(subject="alice", text="Installed from the wheel")
            print(atlas.me().name, atlas.memory_get(subject="alice", memory_id=fact.id).text)
        """
    )
    run = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "svc Installed from the wheel"
