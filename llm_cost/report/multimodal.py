"""Tables for ``llm-cost image`` and ``llm-cost video``."""

from __future__ import annotations

from llm_cost.analyses.multimodal import ImageResult
from llm_cost.core.units import fmt_flops, fmt_iec, fmt_int
from llm_cost.report.base import print_conventions, print_facts


def render(con, r: ImageResult, video: bool = False) -> None:
    """Tokens, encoder FLOPs, decoder prefill and KV, headed as an image or (``video``) as frames."""
    v = r.vision
    if video:
        what = f"{r.frames:,} frame{'s' if r.frames > 1 else ''} of {r.width}x{r.height}"
    else:
        what = f"{r.width}x{r.height} image"
    con.print(f"[bold]{r.model}: {what}, decoder {r.decoder}[/bold]")
    facts = [
        ("resized to", f"{v.resized_width}x{v.resized_height} px"),
        (
            "patches",
            f"{fmt_int(v.patches)}"
            + (f" per group x {v.temporal_groups:,} temporal groups" if v.temporal_groups > 1 else ""),
        ),
        ("decoder tokens", f"[bold]{fmt_int(v.tokens)}[/bold] ({r.connector})"),
        (
            "encoder: ViT blocks + attention",
            f"{fmt_flops(v.blocks_with_attention_flops)} (attention {v.attention_share:.0%})",
        ),
        ("encoder: patch embedding + merger", fmt_flops(v.embed_and_merger_flops)),
        (
            "decoder prefill of the visual tokens",
            f"{fmt_flops(r.decoder_prefill_flops)} = weights "
            f"{fmt_flops(r.decoder_weight_flops)} + attention "
            f"{fmt_flops(r.decoder_attention_flops)}",
        ),
        ("KV of the visual tokens", fmt_iec(r.kv_bytes)),
        ("encoder output", fmt_iec(r.encoder_output_bytes)),
        ("KV / encoder output", f"{r.kv_to_encoder_output:g} (= 2 L n_kv d_head / d_model)"),
    ]
    print_facts(con, facts)
    print_conventions(con, r.conventions)


def render_video(con, r: ImageResult) -> None:
    """:func:`render` headed as a clip of ``r.frames`` frames, one frame too."""
    render(con, r, video=True)
