"""AReaL's ``areal.experimental``: ``openai.types`` (interactions) and ``openai.AsyncOpenAI``, a
standard-library asyncio client for agents where the ``openai`` package is not installed."""
