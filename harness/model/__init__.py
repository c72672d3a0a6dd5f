"""The model: where one comes from, told before torch loads (`source`), loading checkpoints and
their identities (`loading`), the one forward API that runs a model, captures its attention and
intervenes on its heads (`forward`), and fine-tuning
with its checkpoint cache (`finetune`, with the fast CPU dropout of `dropout`). Everything
that touches weights lives here; nothing here knows which analyses read the attention.

Importing it imports the encoder families of installed extensions (the modules named under the
entry-point group ``harness.model``: `harness.registry.extensions`), which register their
classes with transformers' Auto classes, so that every command loads them as it loads BERT."""

from harness.registry import extensions

extensions(__name__)
