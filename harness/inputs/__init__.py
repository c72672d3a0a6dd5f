"""What the model reads: the sources of text (`sources`: the task's examples, the dev splits,
a corpus, a treebank, coreference documents), each streamed as `batches.EncodedBatch`es;
tokenisation of examples (`encoding`) and the alignment of word pieces to words (`words`),
by the tokenizer's own word boundaries. A source has a cheap identity, so a stored result
knows exactly which input it was measured on."""
