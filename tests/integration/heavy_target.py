"""A target with many times the draft's compute that still decodes exactly what the draft decodes.

Speculation pays off when the target is much dearer per step than the draft (Kimi K3 against its DSpark draft).
The rehearsal model drafting for itself is not: both cost the same, and on a busy 2-core host vLLM's per-step
overhead decides the wall-clock speedup either way. This builds the rehearsal model's heavy twin: the same
embeddings, the same two layers, the same head, and `extra_layers` more decoder layers whose output
projections (`self_attn.o_proj`, `mlp.down_proj`) are zero. Each extra layer does its full work (norms,
attention over the KV cache, the MLP) and adds exactly 0.0 to the residual stream, so the twin's logits are the
rehearsal model's, bit for bit: every draft token is accepted, and each verify step costs the twin's forward.
Llama's decoder layer: transformers/models/llama/modeling_llama.py (LlamaDecoderLayer: residual + o_proj(attn),
residual + down_proj(mlp)); vLLM's: vllm/model_executor/models/llama.py.

Made with safetensors' numpy API from the generated folder; nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: Files of the rehearsal folder the twin shares unchanged (the marker is left out: the twin is not its recipe).
SHARED_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja")
#: Projections whose zero weights make a layer add nothing to the residual stream.
ZEROED = ("self_attn.o_proj.weight", "mlp.down_proj.weight")


def make_heavy_twin(rehearsal: Path, dest: Path, extra_layers: int) -> Path:
    """Write the heavy twin of the rehearsal model at `rehearsal` into `dest` (a new folder); returns `dest`."""
    from safetensors.numpy import load_file, save_file

    config = json.loads((rehearsal / "config.json").read_text(encoding="utf-8"))
    tensors = load_file(str(rehearsal / "model.safetensors"))
    layers = int(config["num_hidden_layers"])
    template = {
        k.split(f"model.layers.{layers - 1}.", 1)[1]: v
        for k, v in tensors.items()
        if k.startswith(f"model.layers.{layers - 1}.")
    }
    for i in range(layers, layers + extra_layers):
        for name, value in template.items():
            tensors[f"model.layers.{i}.{name}"] = value * 0 if name in ZEROED else value.copy()
    config["num_hidden_layers"] = layers + extra_layers
    dest.mkdir(parents=True)
    save_file(tensors, str(dest / "model.safetensors"), metadata={"format": "pt"})
    (dest / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for name in SHARED_FILES:
        if (rehearsal / name).is_file():
            shutil.copy2(rehearsal / name, dest / name)
    return dest


def checkpoint_bytes(folder: Path) -> int:
    """Bytes of the weights in `folder` (for the profile's model.checkpoint_bytes)."""
    return (folder / "model.safetensors").stat().st_size
