"""Time models: operators of a step + a GPU -> seconds per operator and per step.

One interface, :class:`~llm_cost.perf.timemodel.TimeModel`; the Roofline bound and the
MFU/MBU estimate are its implementations (a calibrated model is the next). No other code turns
FLOPs or bytes into seconds.
"""
