"""Built-in profiles, shipped as YAML data files beside this module."""
