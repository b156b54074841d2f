"""AReaL's ``areal.utils`` modules a workflow imports: ``logging`` and ``stats_tracker`` here,
``data``, ``dynamic_import`` and ``hf_utils`` as submodules."""

from . import logging, stats_tracker

__all__ = ["logging", "stats_tracker"]
