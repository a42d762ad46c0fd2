"""Layout of the bench tables (Cole Table 1) on fabricated results."""
import math

from spmlkit.experiments.tables import (fmt_cell, mark_best, render_main_table, render_selected, render_sweep,
                                        runs_csv, select_cells, strip_run_block)


def runs_for(dataset, method, vals_tests, lr=1e-3, bs=8, train=None):
    return [{"dataset": dataset, "method": method, "train_fraction": 1.0, "hide_prob": None, "lr": lr,
             "batch_size": bs, "seed": i, "val_score": v, "test_map": t, "train_map": train}
            for i, (v, t) in enumerate(vals_tests)]


REGIMES = {"bce": "full", "iun": "single_positive_all_negatives", "iu": "single_positive_one_negative",
           "an": "single_positive", "an-ls": "single_positive", "role": "single_positive", "wan": "single_positive"}


def fabricated():
    runs = []
    runs += runs_for("voc", "bce", [(1, 90.0), (1, 92.0)])  # 91 ± 1 (best overall, but not single-positive)
    runs += runs_for("voc", "an", [(1, 80.0), (1, 80.0)])
    runs += runs_for("voc", "role", [(1, 86.0), (1, 87.0)])  # 86.5 -> bold
    runs += runs_for("voc", "an-ls", [(1, 85.3), (1, 85.3)])  # 85.3 -> underline
    runs += runs_for("voc", "wan", [(1, 85.26), (1, 85.34)])  # shows 85.3 too -> underline as well
    runs += runs_for("voc", "iun", [(1, 88.0), (1, 88.0)])
    runs += runs_for("voc", "iu", [(1, 70.0), (1, 70.0)])
    runs += runs_for("coco", "an", [(1, 60.0), (1, 61.0)])
    runs += runs_for("coco", "role", [(1, 59.0), (1, 59.0)])
    return runs


def test_grouping_order_bold_underline_and_missing_cells():
    sel = select_cells(fabricated())
    # methods given in an order that mixes regimes: the table regroups them in Table 1's order
    methods = ["an", "an-ls", "bce", "role", "iu", "wan", "iun"]
    text = render_main_table(sel, ["voc", "coco"], methods, REGIMES, decimals=1)
    lines = text.strip().splitlines()
    assert lines[0] == "| Loss | Labels per image | voc | coco |"
    assert lines[1] == "|---|---|---:|---:|"
    rows = [ln.split("|")[1].strip() for ln in lines[2:]]
    assert rows == ["bce", "iun", "iu", "an", "an-ls", "role", "wan"]
    # regime label only on the first row of each group
    assert lines[2].startswith("| bce | All P. & All N. | 91.0 ± 1.0 |")
    assert "| iun | 1 P. & All N. |" in text and "| iu | 1 P. & 1 N. |" in text
    assert "| an | 1 P. & 0 N. |" in text and "| an-ls |  |" in text
    row = {ln.split("|")[1].strip(): ln for ln in lines[2:]}
    assert "**86.5 ± 0.5**" in row["role"]
    assert "<u>85.3 ± 0.0</u>" in row["an-ls"] and "<u>85.3 ± 0.0</u>" in row["wan"]  # equal when shown
    assert "**" not in row["bce"] and "**" not in row["iun"]  # only single-positive rows compete
    assert row["an"].rstrip().endswith("| **60.5 ± 0.5** |")  # coco: an best, role second
    assert "<u>59.0 ± 0.0</u>" in row["role"]
    assert row["an-ls"].rstrip().endswith("| – |")  # no coco results for an-ls


def test_every_row_competes_without_single_positive_rows():
    runs = runs_for("voc", "bce", [(1, 90.0)]) + runs_for("voc", "focal", [(1, 91.0)]) + \
        runs_for("voc", "zlpr", [(1, 89.0)])
    sel = select_cells(runs)
    regimes = {"bce": "full", "focal": "full", "zlpr": "full"}
    text = render_main_table(sel, ["voc"], ["focal", "zlpr", "bce"], regimes)
    # one seed per cell: the mean alone, no "± 0.0" pretending to be a spread
    assert "| focal | All P. & All N. | **91.0** |" in text
    assert "| bce |  | <u>90.0</u> |" in text
    assert "| zlpr |  | 89.0 |" in text


def test_recovery_values_and_selected_configuration():
    runs = runs_for("voc", "an", [(80, 1.0), (80, 1.0)], lr=1e-2, bs=16, train=70.0) + \
        runs_for("voc", "an", [(50, 2.0), (50, 2.0)], lr=1e-3, bs=8, train=99.0)
    sel = select_cells(runs)
    text = render_main_table(sel, ["voc"], ["an"], {"an": "single_positive"}, value="train", contest=False)
    assert "| an | 1 P. & 0 N. | 70.0 ± 0.0 |" in text  # the validation-selected config, not the best train mAP
    conf = render_selected(sel, ["voc"], ["an"], {"an": "single_positive"})
    assert "| an | lr 1e-02, batch 16, 2 seeds |" in conf


def test_a_recipes_selected_configuration_names_each_member_by_its_label():
    """``auto``'s cell lists every member's chosen lrs and mean weight, a member with an MLP
    head apart from the same method's linear one (they are two members)."""
    runs = runs_for("voc", "auto", [(1, 80.0), (1, 81.0)])
    for r, (w_lin, w_mlp) in zip(runs, [(0.75, 0.25), (0.25, 0.75)]):
        r["notes"] = {"members": [
            {"method": "em-apl", "label": "em-apl", "lr": 0.01, "weight": w_lin},
            {"method": "em-apl", "label": "em-apl-mlp", "lr": 0.001, "weight": w_mlp}]}
    conf = render_selected(select_cells(runs), ["voc"], ["auto"], {"auto": "single_positive"})
    assert ("| auto | own lr per member on observed labels (em-apl 1e-02/1e-02 weight 0.50; em-apl-mlp 1e-03/1e-03 "
            "weight 0.50), batch 8, 2 seeds |") in conf


def test_formatting_helpers():
    assert fmt_cell(85.2549, 0.25, 1) == "85.3 ± 0.2"  # Python rounds half to even on the stored float
    assert fmt_cell(85.25, 1.234, 2) == "85.25 ± 1.23"
    assert fmt_cell(math.nan, 1.0) == "–" and fmt_cell(None, None) == "–"
    assert fmt_cell(70.0, math.nan) == "70.0"
    assert mark_best({"a": 1.04, "b": 1.0, "c": 0.5, "d": math.nan}, 1) == {"a": "bold", "b": "bold", "c": "underline"}


def test_sweep_table_and_csv():
    runs = []
    for p, (a, b) in {0.1: (80.0, 70.0), 0.5: (60.0, 65.0)}.items():
        for m, t in (("an", a), ("iu", b)):
            runs += [{"dataset": "voc", "method": m, "train_fraction": 1.0, "hide_prob": p, "lr": 1e-3,
                      "batch_size": 8, "seed": 0, "val_score": 1.0, "test_map": t, "train_map": None,
                      "params": {"x": 1}}]
    sel = select_cells(runs)
    text = render_sweep(sel, "voc", ["an", "iu"], [0.1, 0.5], axis="hide")
    assert "| an | **80.0** | 60.0 |" in text and "| iu | 70.0 | **65.0** |" in text  # single seed: no ±
    csv_text = runs_csv(runs)
    header, first = csv_text.splitlines()[:2]
    assert header.startswith("dataset,method,params,regime,hide_prob,train_fraction")
    assert first.startswith('voc,an,"{""x"": 1}",,0.1,1,')


def test_strip_run_block():
    text = "# T\n\n<!-- run -->\n- date: x\n- wall time: y\n<!-- /run -->\n- command: c\n\n| a |\n"
    assert strip_run_block(text) == "# T\n\n- command: c\n\n| a |\n"
