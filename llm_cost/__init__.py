"""llm-cost: exact cost arithmetic for decoder-only LLMs.

The engine is pure: specs (``llm_cost.spec``) are loaded by ``llm_cost.load``, expanded into
weight tensors by ``llm_cost.structure``, and each question has its own module (``params``,
``kv``, ...) returning a result dataclass that the CLI renders as a table or as JSON.
"""

__version__ = "0.1.0"
