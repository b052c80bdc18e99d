"""llm-cost: exact cost arithmetic for decoder-only LLMs.

The package is arranged in layers; each imports only the layers below it (``tests/test_layers.py``
fails on an upward import or a cycle, imports inside functions included):

``core``
    errors, the engine's enums and the one dtype table (``core.types``), parsing and formatting
    of quantities (``core.units``).
``specs``
    pydantic schemas of model and GPU specs, file reading, shipped names and aliases, Hugging
    Face ``config.json`` (``specs.hf``).
``model``
    the structure: the weight-tensor list with each tensor's shard rule (``model.structure``),
    parameters, the cache's shape and KV bytes, and what one GPU of a layout holds
    (``model.layout``).
``workload``
    a step as a list of operators on each GPU (``workload.step.build_step``): GEMMs, attention,
    recurrences, vectors, embedding rows and collectives, with FLOPs and bytes by category;
    expert routing; forward FLOPs by group.
``perf``
    time models: operators + GPU -> seconds (``perf.timemodel``: the Roofline bound and the
    MFU/MBU estimate behind one interface); ridge points.
``analyses``
    one module per question (roofline, deployment/fit, speculative, context, moe, training,
    memory, multimodal, rope, numerics, reproduce, catalog, import), each returning a result
    object of numbers.
``report``, ``cli``
    Rich tables and JSON from those objects; Typer commands that parse, call and render.
"""

__version__ = "0.1.0"
