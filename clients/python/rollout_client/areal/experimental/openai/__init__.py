"""AReaL's ``areal.experimental.openai``: the interaction type a workflow may return."""

from .types import InteractionWithTokenLogpReward

__all__ = ["InteractionWithTokenLogpReward"]
