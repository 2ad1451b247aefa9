"""huggingface_hub.constants.HF_HUB_CACHE, as constants.py derives it: `$HF_HOME/hub`."""

import os

HF_HUB_CACHE = os.path.join(os.environ["HF_HOME"], "hub")
