"""Shared fixtures and helpers: a tiny BERT built from a config, checkpoints around it, tiny data,
a local download mirror, the argument lists of tiny runs, and paths to the real data. Loaded as a
plugin by `tests/conftest.py` in the processes that run tests; test modules import the helpers."""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache, partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch
from filelock import FileLock
from mlflow import MlflowClient
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast, PreTrainedModel

from harness.analyses.base import Analysis, AnalysisContext
from harness.config import AnalysisConfig
from harness.inputs.batches import AttentionBatch, EncodedBatch
from harness.inputs.encoding import batched
from harness.inputs.sources import SourceContext
from harness.model.forward import use_harness_attention
from harness.model.loading import Checkpoint
from harness.results.checkpoints import FINETUNED, PRETRAINED
from harness.run.engine import GradientTargets, run_checkpoints
from tasks.corpora import CORPORA
from tasks.examples import Example
from tasks.spec import Task

if "OMP_NUM_THREADS" in os.environ:  # a pytest-xdist worker's share of the cores (tests/conftest.py)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # beside this checkout
GLUE_DIR = Path(os.environ.get("GLUE_DIR", SHARED_DATA / "glue")).resolve()  # subprocesses run in other folders
CPU = torch.device("cpu")
PAIRS = ((PRETRAINED, FINETUNED),)

TINY_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    ",",
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "is",
    "not",
    "happy",
    "ran",
    "##s",
    "he",
    "she",
    "it",
    "and",
]


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder ``name``, filled by ``make(folder)`` once per test session. Under pytest-xdist
    the first worker to ask makes it while the others wait, and every worker reads the same
    folder: expensive set-up is done once, and what a path enters (a tiny run's key) is the same
    in every worker."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / name, root / f"{name}.done"
    with FileLock(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def write_tiny_vocabulary(folder: Path) -> None:
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> BertTokenizerFast:
    vocabulary = made_once(tmp_path_factory, "tiny_vocab", write_tiny_vocabulary)
    # transformers 5 ignores vocab_file in the constructor (leaving only the special tokens),
    # so load the folder as a saved tokenizer.
    return BertTokenizerFast.from_pretrained(str(vocabulary), do_lower_case=True)


def tiny_bert(seed: int, num_labels: int = 2, positions: int = 128, init: float = 0.5) -> BertForSequenceClassification:
    """A 2-layer, 4-head BERT, eager attention; by default a large init so its attention is far from
    uniform (one that saturates: it learns nothing), ``init=0.1`` for one that learns the tiny SST-2."""
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(TINY_VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=positions,
        num_labels=num_labels,
        initializer_range=init,
        attn_implementation="eager",
    )
    return BertForSequenceClassification(config).eval()


def as_checkpoints(models: dict[str, PreTrainedModel]) -> list[Checkpoint]:
    """Named checkpoints around models (switched to the harness attention), identified by name."""
    return [
        Checkpoint(name, use_harness_attention(model), {"model": name}, {"trained": name != PRETRAINED})
        for name, model in models.items()
    ]


SENTENCES = [
    "the cat sat on the mat .",
    "the dog ran .",
    "he is not happy",
    "she sat",
    "a dog sat on a mat",
    "it is happy",
    "the cats ran and the dog sat .",
    "he ran , she sat .",
]
CONLLU_SENTENCE = """1\tthe\t_\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\t_\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\t_\tVERB\tVBD\t_\t0\troot\t_\t_
4\ton\t_\tADP\tIN\t_\t6\tcase\t_\t_
5\tthe\t_\tDET\tDT\t_\t6\tdet\t_\t_
6\tmat\t_\tNOUN\tNN\t_\t3\tobl\t_\t_
7\t.\t_\tPUNCT\t.\t_\t3\tpunct\t_\t_
"""
CONLL_DOCUMENT = """#begin document (story); part 0
story\t0\t0\tthe\t_\t_\t_\t_\t_\t_\t(0
story\t0\t1\tcat\t_\t_\t_\t_\t_\t_\t0)
story\t0\t2\tsat\t_\t_\t_\t_\t_\t_\t_
story\t0\t3\t.\t_\t_\t_\t_\t_\t_\t_

story\t0\t0\tit\t_\t_\t_\t_\t_\t_\t(0)
story\t0\t1\tran\t_\t_\t_\t_\t_\t_\t_
story\t0\t2\tand\t_\t_\t_\t_\t_\t_\t_
story\t0\t3\tthe\t_\t_\t_\t_\t_\t_\t(1
story\t0\t4\tdog\t_\t_\t_\t_\t_\t_\t1)
story\t0\t5\tsat\t_\t_\t_\t_\t_\t_\t_
story\t0\t6\t.\t_\t_\t_\t_\t_\t_\t_

story\t0\t0\the\t_\t_\t_\t_\t_\t_\t(1)
story\t0\t1\tsat\t_\t_\t_\t_\t_\t_\t_
story\t0\t2\t.\t_\t_\t_\t_\t_\t_\t_

#end document
"""


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer: BertTokenizerFast) -> Path:
    """A tiny BERT saved as a local model folder, so the whole pipeline runs on it in seconds."""

    def save(folder: Path) -> None:
        tiny_bert(0).save_pretrained(folder)
        tiny_tokenizer.save_pretrained(folder)

    return made_once(tmp_path_factory, "tiny_model", save)


@pytest.fixture(scope="session")
def tiny_learner_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer: BertTokenizerFast) -> Path:
    """A tiny BERT that learns the tiny SST-2 (`LEARNS`: every dev example right), as a local model folder."""

    def save(folder: Path) -> None:
        tiny_bert(0, init=0.1).save_pretrained(folder)
        tiny_tokenizer.save_pretrained(folder)

    return made_once(tmp_path_factory, "tiny_learner", save)


LEARNS = ("--learning-rate", "3e-3", "--epochs", "10")  # the recipe with which `tiny_learner_dir` learns SST-2


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``folder`` with its modification time and content (lock files aside:
    each run writes its pid into the ones it takes)."""
    return {
        str(path.relative_to(folder)): (path.stat().st_mtime_ns, path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix != ".lock"
    }


# `harness.cli.main` on its arguments in a fresh interpreter (``python -c MAIN_REPORTING_IMPORTS ARGS``),
# which prints at exit which of torch, transformers and MLflow it imported, then "|" and its peak memory
# (VmHWM, kB: that of the program exec'd, where getrusage would count the forking parent's).
MAIN_REPORTING_IMPORTS = (
    "import atexit, sys; from harness.cli import main; "
    "atexit.register(lambda: print(' '.join(name for name in ('torch', 'transformers', 'mlflow') if name in "
    "sys.modules) + '|' + next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))); "
    "sys.exit(main(sys.argv[1:]))"
)


def assert_one_line_and_no_work(
    code: int, message: str, root: Path, capsys: pytest.CaptureFixture, caplog: pytest.LogCaptureFixture
) -> None:
    """A command's failure as bad input: exit 2, one line holding ``message`` and no traceback,
    nothing written under ``root`` (no MLflow store, no checkpoint, no lock)."""
    err = capsys.readouterr().err
    assert code == 2, err
    assert not caplog.records  # a log line would be printed beside the error
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert message in err
    assert store_untouched(root)
    assert not (root / "cache").exists() or not any((root / "cache").iterdir())
    assert not list(root.rglob("*.lock"))


def harness_arguments(
    command: str, model: Path | str, data_dir: Path, root: Path, *extra: str, task: str = "rte"
) -> list[str]:
    """``harness <command>`` on ``model`` and ``task`` from the GLUE folder ``data_dir``, with
    ``extra`` flags, everything it writes (runs, checkpoints, MLflow store) under ``root``."""
    return [
        command,
        "--task",
        task,
        "--model",
        str(model),
        "--data-dir",
        str(data_dir),
        *output_arguments(root),
        *extra,  # last: a flag given again here wins
    ]


def output_arguments(root: Path) -> list[str]:
    """The flags that put everything a command writes (runs, checkpoints, MLflow store) under
    ``root`` (its MLflow store: `store_uri`)."""
    return ["--output-dir", str(root / "out"), "--cache-dir", str(root / "cache"), "--tracking-uri", store_uri(root)]


def store_uri(root: Path) -> str:
    """The URI of the MLflow store in ``root``, which starts as a copy of `empty_store` unless ``root`` has one."""
    store = root / STORE
    if not store.exists():
        root.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(empty_store(), store)
    return f"sqlite:///{store}"


STORE = "mlflow.db"
# The MLflow servers the tests start serve the harness's runs and nothing else: no job runner (MLflow
# 3 starts seven processes for its GenAI jobs, two minutes of CPU on a 2-core machine) and one web
# worker (the UI's default is four, each importing MLflow).
MLFLOW_SERVER_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_WORKERS": "1"}
_SESSION: dict[str, pytest.TempPathFactory] = {}


@pytest.fixture(scope="session", autouse=True)
def _session_folders(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What `empty_store` makes its store in: the session's folders (a plain function has no fixtures)."""
    _SESSION["factory"] = tmp_path_factory


@cache
def empty_store() -> Path:
    """An MLflow SQLite store as MLflow creates it (its tables, no experiment of the harness), made
    once per session. Creating one runs MLflow's schema migrations, about 3 s, and tens of tests
    track runs in a store of their own: they start from a copy, as a user's later runs find the
    store the first made. The tests of a store's creation (`test_tracking`, two runs started
    together on a fresh store) pass a URI of their own."""

    def create(folder: Path) -> None:
        notes = logging.getLogger("mlflow")  # its notes on creating the tables are no test's output
        level = notes.level
        notes.setLevel(logging.WARNING)
        try:
            MlflowClient(tracking_uri=f"sqlite:///{folder / STORE}").search_experiments()
        finally:
            notes.setLevel(level)

    return made_once(_SESSION["factory"], "empty_mlflow_store", create) / STORE


def store_untouched(root: Path) -> bool:
    """Whether nothing was written to the MLflow store under ``root``: none, or the copy of
    `empty_store` that `output_arguments` put there, byte for byte."""
    store = root / STORE
    return not store.exists() or store.read_bytes() == empty_store().read_bytes()


TINY_RECIPE = ("--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3")  # the tiny model, in seconds
# Figures as PNG alone, where a test checks the drawing, not its vector copies (a quarter of the
# drawing time): `test_every_figure_is_drawn_as_png_and_pdf...` and the study tests check those.
PNG_ONLY = ("--vector-formats", "none")


def tiny_dev_sources(
    tokenizer: Any, task: Task, examples: list[Example], settings: AnalysisConfig | None = None
) -> SourceContext:
    """The sources of a tiny run whose task sample and dev split are both ``examples``."""
    return SourceContext(
        tokenizer,
        settings or AnalysisConfig(eval_batch_size=4),
        tokenizer_name="tiny",
        max_length=64,
        task=task,
        task_examples=examples,
        task_identity={"split": "dev"},
        eval_examples={"dev": examples},
        eval_identity={"dev": "tiny dev"},
    )


def tiny_run_arguments(tiny_model_dir: Path, tiny_data: Path, root: Path, *extra: str, task: str = "rte") -> list[str]:
    """``harness run`` on the tiny model and data, everything written under ``root``, in seconds."""
    return harness_arguments(
        "run",
        tiny_model_dir,
        tiny_data / "glue",
        root,
        *TINY_RECIPE,
        "--eval-batch-size",
        "4",
        "--syntax-data",
        str(tiny_data / "tiny-dev.conllu"),
        "--probe-train-sentences",
        "5",
        "--syntax-min-count",
        "1",
        "--coref-data",
        str(tiny_data / "coref"),
        "--corpus",
        str(tiny_data / "tiny-corpus.txt"),
        "--clustering-tokens",
        "2",
        *extra,
        task=task,
    )


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GLUE RTE, MRPC and SST-2 folders (SST-2 one a tiny BERT learns), a treebank (dev and train), a
    coreference file and a corpus of running text, in the tiny vocabulary."""
    return made_once(tmp_path_factory, "tiny_data", write_tiny_data)


def sentiment_sentences() -> list[tuple[str, int]]:
    """A single-sentence task a tiny BERT learns in a few epochs: positive unless it says "not"."""
    subjects = ["the cat", "the dog", "a cat", "a dog", "he", "she", "it", "the cats"]
    endings = ["", " and ran", " on the mat", " and sat .", " ,", " and the dog ran", " on a mat", " and she sat ."]
    return [
        (f"{subject} is {'' if label else 'not '}happy{ending}", label)
        for ending in endings
        for subject in subjects
        for label in (1, 0)
    ]


def write_tiny_data(root: Path) -> None:
    pairs = [(a, b) for a in SENTENCES for b in SENTENCES[:4]]
    rte, mrpc = root / "glue" / "RTE", root / "glue" / "MRPC"
    rte.mkdir(parents=True)
    mrpc.mkdir()
    for split, rows in (("train", pairs[:24]), ("dev", pairs[24:])):
        (rte / f"{split}.tsv").write_text(
            "index\tsentence1\tsentence2\tlabel\n"
            + "".join(
                f"{i}\t{a}\t{b}\t{'entailment' if i % 2 else 'not_entailment'}\n" for i, (a, b) in enumerate(rows)
            )
        )
        (mrpc / f"{split}.tsv").write_text(
            "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            + "".join(f"{i % 2}\t{i}\t{i}\t{a}\t{b}\n" for i, (a, b) in enumerate(rows))
        )
    sst2, sentiment = root / "glue" / "SST-2", sentiment_sentences()
    sst2.mkdir()
    dev = [row for i, row in enumerate(sentiment) if (i // 2) % 2 == 0]  # both labels of every other subject
    for split, rows in (("train", [row for row in sentiment if row not in dev]), ("dev", dev)):
        (sst2 / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{a}\t{b}\n" for a, b in rows))
    for split, count in (("dev", 6), ("train", 10)):
        (root / f"tiny-{split}.conllu").write_text("\n".join([CONLLU_SENTENCE] * count))
    documents = [SENTENCES[:3], SENTENCES[3:6], SENTENCES[5:]]  # one paragraph a line, a blank line between
    (root / "tiny-corpus.txt").write_text("\n\n".join("\n".join(document) for document in documents) + "\n")
    (root / "coref").mkdir()
    (root / "coref" / "story.conll").write_text(CONLL_DOCUMENT)


@pytest.fixture
def tiny_pair() -> dict[str, BertForSequenceClassification]:
    """Two different tiny BERTs standing in for the pre-trained and fine-tuned checkpoints."""
    return {PRETRAINED: tiny_bert(0), FINETUNED: tiny_bert(1)}


def stream(
    models: dict[str, PreTrainedModel],
    batches: Iterable[EncodedBatch],
    tokenizer: Any = None,
    needs: frozenset[str] = frozenset({"attention"}),
    seed: int = 0,
) -> Iterator[AttentionBatch]:
    """Each batch through every model via the forward API, as the pipeline streams them."""
    checkpoints = as_checkpoints(models)
    targets = GradientTargets(tokenizer, seed) if tokenizer is not None else None
    for encoded in batches:
        yield run_checkpoints(encoded, checkpoints, {c.name: needs for c in checkpoints}, targets)


def analysis_context(
    models_or_names: Sequence[str] | dict[str, Any],
    layers: int = 2,
    heads: int = 4,
    tokenizer: Any = None,
    pairs: tuple[tuple[str, str], ...] = PAIRS,
    device: torch.device = CPU,
    task: Task | None = None,
    **settings: Any,
) -> AnalysisContext:
    return AnalysisContext(
        tuple(models_or_names),
        layers,
        heads,
        AnalysisConfig(**settings),
        tokenizer=tokenizer,
        pairs=pairs,
        device=device,
        task=task,
    )


def finish(analysis: Analysis) -> dict[str, Any]:
    """An analysis's result shaped as its summary entry's ``result``: per-checkpoint results with
    the declared pairs compared, or the joint result."""
    result = analysis.result()
    if type(analysis).joint:
        return result
    return {"per_checkpoint": result, "per_pair": type(analysis).compare(result, list(analysis.context.pairs))}


def run_analysis(
    analysis_cls: type[Analysis],
    models: dict[str, PreTrainedModel],
    tokenizer: Any,
    examples: Sequence[Example],
    batch_size: int,
    pairs: tuple[tuple[str, str], ...] = PAIRS,
    **settings: Any,
) -> dict[str, Any]:
    """Stream ``examples`` through ``models`` into one analysis; returns `finish`'s result."""
    config = next(iter(models.values())).config
    context = analysis_context(
        models, config.num_hidden_layers, config.num_attention_heads, tokenizer, pairs, **settings
    )
    analysis = analysis_cls(context)
    for batch in stream(models, batched(tokenizer, examples, batch_size, 32, pair=True), tokenizer, analysis_cls.needs):
        analysis.update(batch)
    return finish(analysis)


class MirrorHandler(SimpleHTTPRequestHandler):
    """The files of the server's folder; each request's path is recorded in ``server.requests``,
    and a path in ``server.cut_short`` is answered once with its whole Content-Length but half
    its bytes, then the connection is closed."""

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        if self.path in self.server.cut_short:
            self.server.cut_short.remove(self.path)
            body = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # no request lines in the test output
        pass


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[ThreadingHTTPServer, Path, str]]:
    """A real HTTP server on 127.0.0.1 serving an empty folder (to lay out like the upstream URLs):
    the server, the folder and the server's base URL."""
    root = tmp_path / "mirror"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(MirrorHandler, directory=str(root)))
    server.requests, server.cut_short = [], set()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server, root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def mirror_shared_corpora(root: Path) -> None:
    """Every pinned corpus file of ../shared/data linked into ``root`` where its upstream URL puts it."""
    for corpus in CORPORA.values():
        for file in corpus.files:
            target = root / corpus.url / file.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(SHARED_DATA / corpus.shared / file.path)
