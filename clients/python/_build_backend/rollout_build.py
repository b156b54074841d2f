"""An in-tree PEP 517 build backend for rollout-client that needs nothing but the standard library.

Why: ``pip install ./clients/python`` builds in an isolated environment and would otherwise download
setuptools from PyPI, which machines without PyPI access (clusters behind a proxy, air-gapped
training nodes) cannot do. The package is pure Python, so a wheel is a zip of ``rollout_client/``
plus its metadata, written here.

Metadata comes from ``pyproject.toml``'s ``[project]`` table (``tomllib`` on Python >= 3.11; a
reader for the simple ``key = value`` lines this file uses otherwise).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "rollout_client"


def _project() -> dict:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python >= 3.11
    except ImportError:
        return _read_simple_toml(text)
    return tomllib.loads(text)["project"]


def _read_simple_toml(text: str) -> dict:
    """The [project] and [project.optional-dependencies] tables: strings and lists of strings."""
    project: dict = {}
    table: Optional[dict] = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([^\]]+)\]", line)
        if header:
            name = header.group(1).strip()
            if name == "project":
                table = project
            elif name == "project.optional-dependencies":
                table = project.setdefault("optional-dependencies", {})
            else:
                table = None
            continue
        if table is None or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if value.startswith("["):
            table[key] = re.findall(r'"([^"]*)"', value)
        elif value.startswith('"'):
            table[key] = value.strip('"')
    return project


def _dist_name(project: dict) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
    ]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f'Requires-Dist: {dep}; extra == "{extra}"')
    readme = ROOT / "README.md"
    if readme.exists():
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, files: Dict[str, bytes]) -> str:
    project = _project()
    dist = _dist_name(project)
    version = project["version"]
    info = f"{dist}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(project).encode("utf-8")
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: rollout_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode("ascii")
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    filename = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return filename


def _package_files() -> Dict[str, bytes]:
    files = {}
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(ROOT).as_posix()] = path.read_bytes()
    return files


# --- PEP 517 hooks -------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings=None) -> List[str]:
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """PEP 660: a wheel whose .pth file puts this source tree on sys.path."""
    return _write_wheel(wheel_directory, {f"{PACKAGE}_editable.pth": (str(ROOT) + "\n").encode("utf-8")})


def build_sdist(sdist_directory, config_settings=None) -> str:
    project = _project()
    base = f"{_dist_name(project)}-{project['version']}"
    filename = f"{base}.tar.gz"
    members = ["pyproject.toml", "README.md", PACKAGE, "_build_backend"]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for member in members:
            path = ROOT / member
            if path.exists():
                sdist.add(
                    path,
                    arcname=f"{base}/{member}",
                    filter=lambda info: None if "__pycache__" in info.name else info,
                )
        pkg_info = _metadata(project).encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return filename
