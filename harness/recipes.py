"""Fine-tuning recipes: the learning rate and epochs that ``--recipe`` fills in where
``--learning-rate`` and ``--epochs`` are not given (`harness.config.FineTuneConfig.resolved`),
and a resolved recipe in words for the report and the printed lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Recipe:
    """A fine-tuning learning rate and number of epochs, with the tasks that need their own epochs."""

    learning_rate: float
    epochs: float
    task_epochs: dict[str, float] = field(default_factory=dict)

    def epochs_for(self, task: str) -> float:
        """The recipe's epochs for ``task`` (its own where the recipe sets one)."""
        return self.task_epochs.get(task, self.epochs)

    def __str__(self) -> str:
        own = "".join(f", {task} {epochs:g}" for task, epochs in self.task_epochs.items())
        return f"{self.learning_rate:g} x {self.epochs:g} epochs{own}"


# The recipes that fill in --learning-rate and --epochs when they are not given. papers:
# Kovaleva et al.'s 3 epochs at 2e-5, BERT's recommended rate (their code used 5e-5). minilm:
# chosen by the sweep of benchmarks/sweep_recipe.py (docs/recipe.md): the offline MiniLM
# learns MRPC, STS-B and CoLA with it on three seeds (SST-2 on the one run); on RTE no setting
# swept (up to 10 epochs at 2e-5 and 3e-5) is clearly above the majority class on every seed,
# and 6 epochs at 5e-5 came closest.
RECIPES = {"papers": Recipe(2e-5, 3.0), "minilm": Recipe(5e-5, 3.0, {"rte": 6.0})}
AUTO_RECIPE = "auto"
MODEL_RECIPES = {"minilm": "minilm"}  # --recipe auto: the model's own preset, else the papers'
RECIPES_HELP = "; ".join(f"{name} = {recipe}" for name, recipe in RECIPES.items())


def recipe_name(asked: str, model: str) -> str:
    """The recipe that ``--recipe asked`` means for ``model``: auto is the model's preset, else the papers'."""
    return MODEL_RECIPES.get(model, "papers") if asked == AUTO_RECIPE else asked


def describe_recipe(settings: dict[str, Any]) -> str:  # a recipe as stored JSON, its values of several types
    """``"minilm, lr 5e-05, epochs 6, batch 32, seed 42"`` from a resolved `FineTuneConfig` as a
    dict (a stored run's ``run.recipe``; runs stored before recipes had names used the papers')."""
    return (
        f"{settings.get('recipe', 'papers')}, lr {settings['learning_rate']:g}, epochs {settings['epochs']:g}, "
        f"batch {settings['batch_size']}, seed {settings['seed']}"
    )
