"""Images and video: Qwen2-VL's smart_resize, tokens, encoder and decoder costs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.multimodal import smart_resize


def test_image_cli(cli):
    r = cli("image", "qwen2-vl-7b", "--size", "1920x1080")
    assert r.code == 0 and "2,691" in r.out
    data = cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--decoder", "llama3-70b", "--json").json()
    assert data["vision"]["tokens"] == 1369 and data["kv_to_encoder_output"] == 20
    assert (
        cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--connector", "mlp", "--json").json()["vision"]["tokens"]
        == 5476
    )
    assert (
        cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--connector", "resampler:64", "--json").json()["vision"][
            "tokens"
        ]
        == 64
    )


def test_video_cli(cli):
    data = cli("video", "qwen2-vl-7b", "--size", "1280x720", "--seconds", "60", "--fps", "1", "--json").json()
    assert data["vision"]["tokens"] == 35_880 and data["vision"]["temporal_groups"] == 30


@pytest.mark.parametrize(
    "args,needle",
    [
        (["image", "llama3-8b", "--size", "1024x1024"], "no vision tower"),
        (["image", "qwen2-vl-7b", "--size", "1024"], "--size"),
        (["image", "qwen2-vl-7b", "--size", "0x10"], "--size"),
        (["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "resampler:0"], "--connector"),
        (["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "qformer"], "--connector"),
        (["video", "qwen2-vl-7b", "--size", "64x64", "--seconds", "0", "--fps", "1"], "--seconds"),
        (["train", "llama3-8b", "--tokens", "15X", "--mfu", "0.5"], "--tokens"),
        (["train", "llama3-8b", "--tokens", "15T", "--mfu", "1.5"], "--mfu"),
        (["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.5", "--pue", "0.5"], "--pue"),
        (["reproduce", "--row", "Z9"], "--row"),
    ],
)
def test_bad_input_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and needle in r.err and r.out == "", (r.code, r.err)


@settings(max_examples=200, deadline=None)
@given(st.integers(28, 4000), st.integers(28, 4000))
def test_smart_resize_multiples_and_bounds(h, w):
    if max(h, w) / min(h, w) > 200:
        return
    rh, rw = smart_resize(h, w)
    assert rh % 28 == 0 and rw % 28 == 0
    assert 56 * 56 <= rh * rw <= 28 * 28 * 16384


def test_an_unmodelled_tower_is_named_in_the_refusal(cli):
    """Gemma 3's SigLIP tower is counted by params, but its image costs are not modelled."""
    from pathlib import Path

    gemma = Path(__file__).resolve().parents[1] / "fixtures" / "hf" / "gemma-3-4b-it"
    r = cli("image", str(gemma), "--size", "896x896")
    assert r.code == 2 and "its SigLIP (Gemma 3) vision tower is counted by params" in r.err


def test_image_decoder_weights_leave_out_the_lm_head(cli):
    """Image tokens sit inside the prompt, so only the blocks' GEMMs run on them. Qwen2-VL-7B's
    decoder by hand from its config.json (d 3584, 28 layers, 28 query and 4 KV heads of 128,
    d_ff 18944): per layer q,k,v = d(d + 2 x 4 x 128), o = d^2, gate/up/down = 3 d d_ff."""
    d, layers, ff = 3584, 28, 18944
    per_layer = d * (d + 2 * 4 * 128) + d * d + 3 * d * ff
    data = cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--json").json()
    assert data["decoder_weight_flops"] == 2 * 1369 * layers * per_layer


def test_a_day_of_video_prints_its_counts_with_separators(cli):
    """86,400 s at 2 fps = 172,800 frames; Qwen2-VL's temporal patch of 2 makes 86,400 groups."""
    out = cli("video", "qwen2-vl-7b", "--size", "640x360", "--seconds", "86400", "--fps", "2").out
    assert "172,800 frames" in out and "86,400 temporal groups" in out


def test_a_one_frame_clip_is_headed_as_a_video_and_costs_what_the_still_image_costs(cli):
    """Qwen2-VL fills a temporal patch of 2 frames with one frame as it does with a still image
    (transformers' Qwen2VLImageProcessor tiles both to temporal_patch_size), so one frame's tokens
    are the image's; the heading still says what was asked: a clip, not an image."""
    clip = cli("video", "qwen2-vl-7b", "--size", "640x480", "--seconds", "1", "--fps", "1")
    still = cli("image", "qwen2-vl-7b", "--size", "640x480")
    assert "1 frame of 640x480" in clip.out.splitlines()[0] and "image" not in clip.out.splitlines()[0]
    assert "640x480 image" in still.out.splitlines()[0]
    frame = cli("video", "qwen2-vl-7b", "--size", "640x480", "--seconds", "1", "--fps", "1", "--json").json()
    image = cli("image", "qwen2-vl-7b", "--size", "640x480", "--json").json()
    # 644x476 after smart_resize: (644/14) x (476/14) = 46 x 34 patches, merged 2x2 into 391 tokens
    assert frame["vision"]["tokens"] == image["vision"]["tokens"] == 46 * 34 // 4


@pytest.mark.parametrize("seconds, frames", [(0.5, 1), (0.9, 1), (1.0, 1), (1.5, 2), (2.5, 3), (3.5, 4), (60, 60)])
def test_a_clip_counts_the_frames_sampled_within_it(cli, seconds, frames):
    """Frames sampled at t = 0, 1/fps, 2/fps, ... inside the clip: ceil(seconds x fps). Rounding had
    refused 0.5 s (0 frames) and sent halves to the even count (2.5 s: 2 frames), a helper found."""
    data = cli("video", "qwen2-vl-7b", "--size", "640x480", "--seconds", str(seconds), "--fps", "1", "--json").json()
    assert data["frames"] == frames
