"""Refit the training planner's training-efficiency factors on the published runs and print every
row's error (issue 25).

Usage: python scripts/fit_training.py. Prints ``TRAINING_EFFICIENCY`` as
:func:`llm_cost.analyses.train_published.fit_all` refits it (per profile family: the factor on the
reference rows and their leave-one-out errors; paste it into llm_cost/analyses/train_plan.py when
the model or the rows change, and tests/analyses/test_train_plan.py checks it), then each published
row: measured and predicted TFLOP/s per GPU in the row's convention, the relative error and the
layout the planner predicts it with.
"""

from __future__ import annotations

from pprint import pformat

from llm_cost.analyses.train_published import fit_all, published_errors


def main() -> None:
    print("TRAINING_EFFICIENCY =", pformat(fit_all(), width=110, sort_dicts=False))
    print(f"{'row':42} {'measured':>9} {'predicted':>9} {'error':>7}  layout")
    for r in published_errors():
        print(
            f"{r.id:42} {r.measured_tflops_per_gpu:9.1f} {r.predicted_tflops_per_gpu:9.1f} "
            f"{r.relative_error:+7.1%}  {r.layout}{'' if r.fits else ' (does not fit)'}"
        )


if __name__ == "__main__":
    main()
