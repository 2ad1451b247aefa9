"""The base of every profile section (pure): strict keys, frozen fields, finite numbers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Strict(BaseModel):
    """Base for every profile section: unknown keys are errors, fields are immutable, numbers are finite.

    NaN and infinity pass `gt=0` style bounds in pydantic unless refused here, and a timeout of `inf` never ends.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
