"""`q2` itself: the version and the interrupt message."""

from __future__ import annotations

import pytest

from q2_metric.cli import main


def test_version(capsys):
    import q2_metric

    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"q2-metric {q2_metric.__version__}"


def test_interrupt_message_starts_its_own_line_on_a_terminal(monkeypatch, capsys):
    from q2_metric import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.demo, "cmd_demo", interrupted)  # build_parser reads cmd_demo from cli.demo
    monkeypatch.setattr(cli, "on_terminal", lambda: True)
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == "\nq2: interrupted (SIGINT).\n"
