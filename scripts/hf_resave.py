"""Write tests/fixtures/hf-v5/NAME/config.json: each config fixture (tests/fixtures/hf and hf-kinds)
as transformers 5 saves it, so the reader is tested on the layouts transformers 5 writes
(``num_local_experts`` for qwen3_moe's ``num_experts``, nemotron_h's ``layers_block_type``,
``mlp_layer_types``, Gemma 4's ``per_layer_config``, ...) against the same checkpoint totals.

    pip install --no-deps transformers==5.24.0 && python scripts/hf_resave.py

Each file is ``CONFIG_MAPPING[model_type].from_dict(config).save_pretrained(folder)``, the
configuration class of transformers that builds the model (Kimi K2's ``kimi_k2`` is read as
deepseek_v3, as its architectures name DeepseekV3ForCausalLM; ``auto_map`` is dropped so no remote
code runs). A fixture whose model_type has no class in transformers (InternLM 2.5: remote code
only) or whose published config transformers refuses (Llama 4 Scout's ``attn_temperature_tuning:
4`` against a bool field) is skipped and listed in SKIPPED.yaml with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
OUT = ROOT / "hf-v5"
#: model_types of published configs that transformers builds under another class's model_type.
RENAMED = {"kimi_k2": "deepseek_v3", "RefinedWebModel": "falcon", "RefinedWeb": "falcon"}


def resave(source: Path, folder: Path) -> str | None:
    """Save ``source`` (a config.json) as transformers 5 writes it into ``folder``; the reason it
    cannot be, or None."""
    config = json.loads(source.read_text(encoding="utf-8"))
    model_type = RENAMED.get(config["model_type"], config["model_type"])
    if model_type not in CONFIG_MAPPING:
        return f"transformers {transformers.__version__} has no configuration class for model_type {model_type}"
    data = {k: v for k, v in config.items() if k != "auto_map"} | {"model_type": model_type}
    try:
        cfg = CONFIG_MAPPING[model_type].from_dict(data)
    except Exception as exc:  # noqa: BLE001 - recorded as the reason the fixture has no re-save
        return f"transformers {transformers.__version__} refuses the config: {' '.join(str(exc).split())[:160]}"
    folder.mkdir(parents=True, exist_ok=True)
    cfg.save_pretrained(folder)
    return None


def main() -> None:
    skipped = {}
    for source in sorted(ROOT.glob("hf*/*/config.json")):
        if source.parts[-3] == "hf-v5":
            continue
        reason = resave(source, OUT / source.parent.name)
        if reason:
            skipped[source.parent.name] = reason
    lines = [f"# Fixtures without a transformers {transformers.__version__} re-save (scripts/hf_resave.py)."]
    lines += [f"{name}: {json.dumps(reason)}" for name, reason in sorted(skipped.items())]
    (OUT / "SKIPPED.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(list(OUT.glob('*/config.json')))} re-saves, {len(skipped)} skipped")


if __name__ == "__main__":
    main()
