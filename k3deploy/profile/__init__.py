"""Profiles: the pydantic model, the built-in profiles and loading with `--set` overrides."""

from k3deploy.profile.load import DEFAULT_PROFILE, builtin_names, load_profile, profile_schema
from k3deploy.profile.model import Profile

__all__ = ["DEFAULT_PROFILE", "Profile", "builtin_names", "load_profile", "profile_schema"]
