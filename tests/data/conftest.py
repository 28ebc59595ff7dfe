"""tests/data/ holds recorded data and the scripts that recorded it, no tests. The import-only
stand-ins of allennlp10/stubs/ (a `spacy` and a `boto3` for AllenNLP 1.0's imports) must never be
imported by `--doctest-modules`: they would shadow the real spaCy."""

collect_ignore = ["allennlp10/stubs"]
