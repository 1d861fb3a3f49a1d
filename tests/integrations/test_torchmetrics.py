"""torchmetrics on accinte: stateful metrics updated batch by batch on the
device (their states live there), against the same on the CPU."""

from __future__ import annotations

import pytest
import torch

from .twins import run_both

torchmetrics = pytest.importorskip("torchmetrics")
LIB = "torchmetrics"


def test_classification_and_regression_metrics():
    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(16, 3, generator=g).softmax(-1), torch.randint(0, 3, (16,), generator=g),
                torch.randn(16, generator=g), torch.randn(16, generator=g)) for _ in range(4)]

    def fn(device):
        metrics = {
            "accuracy": torchmetrics.classification.MulticlassAccuracy(num_classes=3),
            "f1": torchmetrics.classification.MulticlassF1Score(num_classes=3, average="macro"),
            "auroc": torchmetrics.classification.MulticlassAUROC(num_classes=3),
            "confusion": torchmetrics.classification.MulticlassConfusionMatrix(num_classes=3),
            "mse": torchmetrics.MeanSquaredError(),
            "pearson": torchmetrics.PearsonCorrCoef(),
        }
        metrics = {k: m.to(device) for k, m in metrics.items()}
        for probs, labels, pred, target in batches:
            for name, metric in metrics.items():
                if name in ("mse", "pearson"):
                    metric.update(pred.to(device), target.to(device))
                else:
                    metric.update(probs.to(device), labels.to(device))
        return {k: m.compute() for k, m in metrics.items()}
    run_both(LIB, "classification + regression", fn)
