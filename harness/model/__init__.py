"""The model: loading checkpoints and their identities (`loading`), the one forward API that
runs a model, captures its attention and intervenes on its heads (`forward`), and fine-tuning
with its checkpoint cache (`finetune`, with the fast CPU dropout of `dropout`). Everything
that touches weights lives here; nothing here knows which analyses read the attention."""
