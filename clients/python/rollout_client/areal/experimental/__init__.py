"""AReaL's ``areal.experimental``: only ``openai.types``."""
