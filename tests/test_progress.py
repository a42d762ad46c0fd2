"""Progress reporting (spmlkit.progress): plain lines with the elapsed time and an estimate
of the time left when stderr is not a terminal, nothing with SPML_NO_PROGRESS=1 (a run's
progress inside long epochs is a loop callback: tests/training/test_callbacks.py)."""
import time

from spmlkit import progress as P


def test_format_seconds():
    assert [P.format_seconds(s) for s in (-3, 0, 59.4, 60, 185, 3599, 3600, 7620)] == [
        "0 s", "0 s", "59 s", "1 min 00 s", "3 min 05 s", "59 min 59 s", "1 h 00 min", "2 h 07 min"]


def test_line_progress_prints_at_most_every_few_seconds_and_always_the_last(monkeypatch, capsys):
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    bar = P.LineProgress(10, "bench", "step", every=5.0)

    def at(t, n):
        now[0] = t
        bar.advance_to(n)
        return capsys.readouterr().err

    assert at(101, 1) == "bench: step 1/10 (1 s elapsed, about 9 s left)\n"  # the first update at once
    assert at(102, 2) == ""  # less than 5 s after the last line
    # the rate is measured from the first update: (107 - 101) s / 2 steps, 7 steps left
    assert at(107, 3) == "bench: step 3/10 (7 s elapsed, about 21 s left)\n"
    assert at(108, 2) == "" and bar.n == 3  # never moves back
    bar.set_postfix(loss=0.5)
    assert at(109, 10) == "bench: step 10/10 loss=0.5 (9 s elapsed)\n"  # the last, whatever the time


def test_progress_is_silent_with_spml_no_progress_and_lines_off_a_terminal(monkeypatch):
    monkeypatch.setenv("SPML_NO_PROGRESS", "1")
    bar = P.progress(5, "train")
    assert not isinstance(bar, P.LineProgress) and bar.disable
    monkeypatch.delenv("SPML_NO_PROGRESS")
    bar = P.progress(5, "train")  # pytest's stderr is not a terminal
    assert isinstance(bar, P.LineProgress) and (bar.total, bar.desc, bar.unit) == (5, "train", "epoch")
    assert not isinstance(P.progress(5, "train", disable=True), P.LineProgress)


def test_advance_to_moves_a_tqdm_bar_forward_only():
    import io

    from tqdm.auto import tqdm

    bar = tqdm(total=10, file=io.StringIO())
    P.advance_to(bar, 4)
    P.advance_to(bar, 2)
    assert bar.n == 4
