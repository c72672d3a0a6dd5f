"""The help of the commands that analyse lists the analysis flags as it did while `AnalysisConfig`
declared every analysis's settings (before commit 33c9f0a): each analysis's own settings in their
old places (`option`'s ``after`` and ``before``) and ``--quick``'s caps in their old order
(``quick_after``), whatever order the views' modules register them in."""

import pytest

from harness.cli import build_parser, subcommands

# The analysis group of `harness run --help` at commit 7991adb, before the settings moved.
ANALYSIS_FLAGS = [
    "--analyses",
    "--max-eval-examples",
    "--eval-batch-size",
    "--analysis-seed",
    "--corpus",
    "--syntax-data",
    "--syntax-train-data",
    "--syntax-min-count",
    "--probe-train-sentences",
    "--probe-init",
    "--coref-data",
    "--coref-windows",
    "--max-tokens",
    "--word-attention-from",
    "--pattern-weights",
    "--clustering-tokens",
    "--max-corpus-items",
    "--ablation",
    "--transplant",
    "--ablation-examples",
    "--max-dev-examples",
    "--trajectory-analyses",
    "--quick",
]
QUICK_HELP = (
    "a quick look: caps every source (max_eval_examples 64, max_corpus_items 100, probe_train_sentences 200, "
    "syntax_min_count 20, ablation_examples 64, max_dev_examples 256) so that every analysis runs in minutes; "
    "the sizes used are recorded with the results"
)
GROUP = "Which analyses run, on how much data, and where their extra inputs come from"


@pytest.mark.parametrize("command", ["run", "study", "ablate", "figures", "maps"])
def test_the_analysis_flags_are_listed_in_their_old_order_and_quick_names_its_caps_as_before(command):
    parser = subcommands(build_parser(command))[command]
    (group,) = [group for group in parser._action_groups if group.title == GROUP]
    flags = [action.option_strings[0] for action in group._group_actions]
    assert flags == [flag for flag in ANALYSIS_FLAGS if not (command == "figures" and flag == "--analyses")]
    (quick,) = [action for action in group._group_actions if action.option_strings == ["--quick"]]
    assert quick.help == QUICK_HELP
