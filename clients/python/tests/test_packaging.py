"""The package builds with no network and no setuptools: the in-tree backend's wheel, sdist and metadata."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[1]


def backend():
    spec = importlib.util.spec_from_file_location("rollout_build", CLIENT / "_build_backend" / "rollout_build.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_the_wheel_holds_the_package_and_metadata_from_pyproject(tmp_path: Path) -> None:
    b = backend()
    assert b.get_requires_for_build_wheel() == []
    name = b.build_wheel(str(tmp_path))
    assert name == "rollout_client-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read("rollout_client-0.1.0.dist-info/METADATA").decode()
        record = wheel.read("rollout_client-0.1.0.dist-info/RECORD").decode()
    assert {"rollout_client/__init__.py", "rollout_client/client.py", "rollout_client/py.typed"} <= names
    assert not any("__pycache__" in n or n.startswith("_build_backend") or n.startswith("tests/") for n in names)
    assert "Name: rollout-client" in metadata
    assert "Requires-Python: >=3.9" in metadata
    assert "Requires-Dist: numpy\n" in metadata
    assert 'Requires-Dist: torch; extra == "torch"' in metadata
    recorded = {line.split(",")[0] for line in record.splitlines()}
    assert recorded == names, "RECORD lists every file of the wheel"


def test_the_fallback_reader_for_old_pythons_agrees_with_tomllib() -> None:
    tomllib = pytest.importorskip("tomllib")
    b = backend()
    text = (CLIENT / "pyproject.toml").read_text()
    expected = tomllib.loads(text)["project"]
    simple = b._read_simple_toml(text)
    for key in ("name", "version", "description", "requires-python", "dependencies", "optional-dependencies"):
        assert simple[key] == expected[key], key


def test_the_sdist_rebuilds_without_the_source_tree(tmp_path: Path) -> None:
    b = backend()
    name = b.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as sdist:
        members = sdist.getnames()
        sdist.extractall(tmp_path / "x")
    assert "rollout_client-0.1.0/PKG-INFO" in members
    assert "rollout_client-0.1.0/_build_backend/rollout_build.py" in members
    unpacked = tmp_path / "x" / "rollout_client-0.1.0"
    out = tmp_path / "wheels"
    out.mkdir()
    code = (
        "import sys; sys.path.insert(0, '_build_backend'); import rollout_build; "
        f"print(rollout_build.build_wheel({str(out)!r}))"
    )
    built = subprocess.run([sys.executable, "-c", code], cwd=unpacked, capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    assert built.stdout.strip() == "rollout_client-0.1.0-py3-none-any.whl"
