"""Helpers shared by the tests (tests/ is on sys.path: `from support.files import write_csv`).

data: the repository's paths and the bundled sample; files: writers and checks of test inputs and
outputs; cli: command-line flags and checks; hashed: deterministic stand-in components;
browser: a headless Chromium driver; parlai_data: a small Wizard of Wikipedia folder."""
