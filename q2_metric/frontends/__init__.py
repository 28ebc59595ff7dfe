"""Front-ends over the one engine: the command line, file scoring, meta-evaluation, Hub publishing."""
