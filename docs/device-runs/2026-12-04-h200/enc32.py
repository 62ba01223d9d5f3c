"""Device side: the carried encoder's fp16 weights back to a float32 model.safetensors."""

import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

d = Path(sys.argv[1])
t = load_file(d / "model16.safetensors")
save_file(
    {k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in t.items()},
    d / "model.safetensors",
)
(d / "model16.safetensors").unlink()
print("encoder restored:", len(t), "tensors", file=sys.stderr)
