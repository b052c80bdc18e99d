"""The model's structure: weight tensors, parameters, KV-cache bytes, and per-GPU shares of a layout."""
