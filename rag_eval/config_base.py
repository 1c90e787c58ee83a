"""The base of every stage's settings (``<stage>/settings.py``): a key the model does not know is an
error, so a misspelt key in a config is reported rather than ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Settings(BaseModel):
    """A section of the config: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")
