"""The released stack's behaviour on today's libraries: transformers 3.2's slow SentencePiece
tokenization (`reference_tokenization`), its beam search (`beam_search`), T5's cross-attention
position bias (`t5_cross_bias`, `t5_cache`) and AllenNLP's NLI input (`allennlp_input`)."""
