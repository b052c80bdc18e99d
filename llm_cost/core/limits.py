"""The limit table: every size a file, a flag or an API argument can set, in one place.

Each bound is checked where the value enters (a flag's parser, an API argument's check, a file's
reader) and is the same for every way in: ``--prefix-groups`` and a workload file's
``prefix.groups``, ``--requests`` and a workload's ``requests`` or a trace's rows are held to one
constant each. A bound says how much memory and time an accepted input may cost: every accepted
input answers within 2 s and 200 MB on a 2-core machine (``tests/test_hostile_inputs.py`` holds a
row for each limit that guards work), and each constant's comment says what it costs or why a
larger value is a mistake. Counts are Python ints; seconds and rates floats.
"""

from __future__ import annotations

# --- text and files ---------------------------------------------------------------------------

#: Characters of a value echoed back in an error message; a longer value is cut in the middle
#: and its length given (a 5,000-digit ``--context`` is shown, not printed whole). A real path is
#: shown whole: a Hugging Face cache snapshot's config.json is about 150 characters, a test's
#: temporary folder under pytest-xdist about 110 (at 80, both were cut and the file not named).
MAX_ECHO = 256
#: Characters of a model, GPU or profile name or alias: a longer one is a path or a mistake.
MAX_NAME = 128
#: Bytes of a YAML spec, config.json, workload file, profile or measurement file (specs are a
#: few kilobytes; a model's config.json at most tens).
MAX_SPEC_BYTES = 1_000_000
#: A config.json may carry a quantization layer map: nvidia's NVFP4 MiniMax-M3 and Nemotron-3-Super
#: publish 3 and 6 MB of it (the rest is a few kB). Bytes and values a config.json may hold.
MAX_CONFIG_BYTES = 16_000_000
MAX_CONFIG_VALUES = 1_000_000
#: Values (scalars, lists, mappings) a spec may hold once its aliases are expanded: a spec has a
#: few hundred, a 10,000-layer ``layer_types`` list 10,000; an alias bomb has billions.
MAX_VALUES = 100_000
#: Nesting depth of lists and mappings in a spec or config.json (specs use 3 or 4 levels).
MAX_DEPTH = 32
#: Digits in an integer (Python refuses to convert more than 4,300; no spec field needs 20).
MAX_DIGITS = 4300
#: Bytes of a safetensors header (DeepSeek-V3's largest shard header is about 1 MB).
MAX_HEADER_BYTES = 100_000_000
#: Rows of a measurement file a profile is fitted on: leave-one-out refits once per row.
MAX_CALIBRATION_ROWS = 1000

# --- a model's spec and config.json (the schema's field bounds) ---------------------------------

MAX_LAYERS = 10_000  #: decoder blocks, vision blocks, layer indices, list lengths per layer
MAX_WIDTH = 2**20  #: hidden, FFN, head and latent widths (1,048,576)
MAX_HEADS = 2**16  #: attention heads of any kind (65,536)
MAX_VOCAB = 2**24  #: vocabulary entries (16,777,216)
MAX_EXPERTS = 2**16  #: routed experts per layer (65,536)
MAX_POSITIONS = 2**32  #: positions and window lengths in tokens
MAX_SMALL = 1024  #: kernel, patch and ratio sizes, MTP modules
MAX_TEXT = 4096  #: characters in a note or a URL (a path may be this long)

# --- counts a flag or argument sets -----------------------------------------------------------

#: The largest context, batch or count a flag or argument takes (larger values are typing
#: mistakes, and floats derived from them would lose exactness).
MAX_COUNT = 10**15
#: The most points a sweep (batches x contexts, batches x prompt lengths) takes in one call.
MAX_GRID_POINTS = 10_000
#: The most GPUs one layout dimension (TP, PP, EP, DP, CP) takes, and the most redundant experts.
MAX_LAYOUT = 2**20
#: The largest ``max_gpus`` of a memory fit's layout search (the search itself stops at the
#: largest layout a model has, TP x L).
MAX_SEARCH_GPUS = 1_000_000
#: The largest image side in pixels.
MAX_PIXELS_PER_SIDE = 10**6
#: The most tokens a resampler connector may emit per image (real ones emit 64 to 1,024).
MAX_RESAMPLER_TOKENS = 1_000_000
#: The largest rotated width a RoPE question takes (real heads have at most a few hundred dims).
MAX_ROPE_DIMS = 8192

# --- serving: the plan and the simulation -----------------------------------------------------

#: The most GPUs a serving plan may use (a search over more would take minutes); a GPU spec's
#: ``gpus_per_node`` (a plan's default budget) is held to it too.
MAX_PLAN_GPUS = 4096
#: The largest budget an analytic plan refused within its ``gpus`` tries, doubling, before it
#: searches without a budget for the fewest GPUs that meet its targets (``api/serving.py``,
#: ``_with_fewest_gpus``): a search of a few dozen GPUs weighs far fewer layouts and pools than one
#: of :data:`MAX_PLAN_GPUS` (deepseek-v3 on H200s at 20 requests/s: 1.0 s at 16 GPUs, 1.4 s at 32,
#: 3.2 s at 64, 9.2 s without a budget), and a target no count meets is refused after them all.
MAX_DOUBLED_BUDGET = 32
#: GPUs one comparison plans side by side.
MAX_COMPARED = 16
#: The largest concurrency per replica (the analytic form's ``--batch``).
MAX_CONCURRENCY = 1 << 20
#: The largest token budget per step of the analytic planner (``chunk_tokens``).
MAX_CHUNK_TOKENS = 1 << 20
#: The fewest and most tokens one engine step may schedule (vLLM's ``max_num_batched_tokens``,
#: serve's ``--chunk``): one rule for every argument that sets it.
MIN_STEP_TOKENS = 2
MAX_STEP_TOKENS = 2**24
#: The most sequences an engine runs at once (``max_num_seqs``) and the longest request it
#: accepts (``max_model_len``), tokens.
MAX_NUM_SEQS = 2**24
MAX_MODEL_LEN = 2**24
#: The longest request length (a prompt, an output, a shared prefix) and the largest mean or
#: standard deviation of a length distribution, tokens; ``(sd / mean)^2`` stays finite.
MAX_LENGTH = 2**32
#: The most requests one simulation runs (about a second and a half on a 2-core machine): a
#: workload's ``requests`` and ``--requests``, its users, its stages' expected count (rate_rps x
#: duration_s) and a trace's rows are held to it.
MAX_REQUESTS = 20_000
#: The most users a shared prefix has (``groups x users_per_group``, ``--prefix-groups x
#: --users-per-prefix``): requests go to the users in turn, so a user past the requests one
#: simulation runs never sends one, and each user is a table entry.
MAX_PREFIX_USERS = MAX_REQUESTS
#: The most output tokens one simulation decodes (2^23: 1,000 requests of 8K tokens). The
#: simulator's time grows with them: about 2.3 million a second on a 2-core machine (measured:
#: 20,000 x 256 tokens in 1.8 s, 20,000 x 1,000 in 9.3 s, 2,000 x 8,000 in 6.6 s).
MAX_SIMULATED_TOKENS = 2**23
#: The most engine steps one simulation may need at the least: its requests' prompt and output
#: tokens over the token budget per step (``--chunk``). One step costs the simulator about 13 us
#: at the smallest budget (``--chunk 2``: 1,000 requests of 2,048 + 256 tokens are 1.15 million
#: steps, 15 s); 2^17 steps take under 2 s.
MAX_SIMULATED_STEPS = 2**17
#: The decode steps one simulation may take, estimated (a low rate decodes its requests nearly one
#: at a time: llm_cost.analyses.simulated_serving.check_decode_steps): runs of decode steps advance
#: together at about 1 us a step on a 2-core machine (20,000 requests of 419 tokens at 0.01/s, 8.4
#: million steps one sequence at a time: 9 s), so about 2 s.
MAX_DECODE_STEPS = 2**21
#: The most tokens a trace row's prompt or output holds, and the most bytes a trace file has.
MAX_TRACE_TOKENS = 2**27
MAX_TRACE_BYTES = 100_000_000
#: The gamma gaps' coefficient of variation, from nearly constant to very bursty (shape 1/cv^2
#: from 10^4 to 10^-4; beyond, ``random.gammavariate`` divides by zero or never returns).
CV_RANGE = (0.01, 100.0)
#: The longest think time of a closed loop's users, and the longest latency target, seconds (a day).
MAX_THINK_S = 86_400.0
MAX_TARGET_S = 86_400.0
#: The request rates a simulation takes, requests per second.
QPS_RANGE = (1e-3, 1e6)
#: How deep a config dict given to the API may nest: a config.json's deepest is a few levels
#: (rope_scaling, a vision_config's own dicts); a cyclic or 100,000-deep dict is no config.
MAX_CONFIG_DEPTH = 32
#: A data centre's power usage effectiveness (1: all power reaches the GPUs).
PUE_RANGE = (1.0, 10.0)
#: The least span of a trace's arrivals a plan sizes GPUs for, seconds: requests closer together
#: are a burst, whose n / span "rate" an attacker's two rows 10 µs apart turned into 100,000
#: requests/s, a 30 s search and an overflow. A layout replays any trace.
MIN_PLAN_TRACE_SPAN_S = 1.0
#: A GPU's board power, W: from 1 W to 10 kW (the B200's TDP is 1,000 W); 1e-320 W is a slip.
POWER_W_RANGE = (1.0, 10_000.0)
#: A grid's carbon intensity, kg CO2e per kWh: 0 (all renewable) to 2 (coal is about 1).
MAX_GRID_KG_PER_KWH = 2.0
#: A speculative draft step's cost c, as a fraction of a target step (0: free; 100: a draft a hundred
#: times the target's cost, past any draft that pays).
DRAFT_COST_RANGE = (0.0, 100.0)
#: A MoE layer's expert capacity factor (1: each expert takes its fair share of tokens).
MOE_CAPACITY_FACTOR_RANGE = (1.0, 16.0)
#: The network bandwidth per GPU between nodes, GB/s.
NETWORK_GB_S_RANGE = (0.1, 1e6)
#: The percentiles a latency target takes, and their decimals: a simulation of at most
#: :data:`MAX_REQUESTS` requests resolves a percentile to 100 / 20,000 = 0.005, so p99.99 is the
#: finest percentile that means something, and p0.01 the lowest.
PERCENTILE_RANGE = (0.01, 99.99)
PERCENTILE_DECIMALS = 2
#: The largest random seed.
MAX_SEED = 2**63
#: The shortest and longest duration a latency target or a time takes, seconds: from a nanosecond
#: (an attack's 1e-320 s was taken and printed as '1e-314 µs') to a day.
DURATION_RANGE_S = (1e-9, 86_400)
