"""AReaL's ``areal.infra``: only ``workflow_context``."""

from . import workflow_context

__all__ = ["workflow_context"]
