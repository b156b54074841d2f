"""Objects named by a dotted path, as AReaL's ``areal.utils.dynamic_import``."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["import_from_string"]


def import_from_string(module_path: str) -> Any:
    """The object ``ObjectName`` of module ``module.path`` named as ``"module.path.ObjectName"``.

    Raises ``ValueError`` for an empty or non-string path or one without a dot, ``ImportError``
    when the module cannot be imported, ``AttributeError`` when it has no such object; each
    message names the path.
    """
    if not isinstance(module_path, str) or not module_path:
        raise ValueError(f"invalid module path {module_path!r}: expected a string like 'module.path.ObjectName'")
    module_name, dot, object_name = module_path.rpartition(".")
    if not dot or not module_name or not object_name:
        raise ValueError(f"invalid module path {module_path!r}: expected 'module.path.ObjectName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ImportError(f"cannot import module '{module_name}' of '{module_path}': {e}") from e
    try:
        return getattr(module, object_name)
    except AttributeError as e:
        raise AttributeError(f"module '{module_name}' has no attribute '{object_name}'") from e
