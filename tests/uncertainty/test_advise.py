"""``aisim advise``: a hand-checkable search, the crossover rule, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aisim.cli import main
from aisim.uncertainty import Sources
from aisim.uncertainty._advise import (
    Question,
    Variant,
    _crossover,
    advise,
    config_for,
    load_label,
)


def fixed_question(loads: list[float]) -> Question:
    """Requests of 100 in / 13 out every second (never overlapping: each takes 10 + 12 x 5 ms
    without SD), fixed timing prefill 10 ms, decode or SD round 5 ms."""
    engine = {
        "backend": "vllm",
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 256}},
                "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
            }
        },
    }
    traffic = {
        "source": {
            "type": "synthetic",
            "num_requests": 5,
            "prompt_tokens": 100,
            "output_tokens": 13,
        },
        "load": {"type": "constant", "rate_rps": 1.0},
    }
    return Question(
        engine,
        traffic,
        "rate",
        1.0,
        loads,
        [Variant("none", 0), Variant("mtp", 1, {"acceptance_rate": 1.0})],
        {"tpot_ms": {"p90": 50.0}},
        3,
        0,
        Sources(),
        None,
        Path.cwd(),
    )


def test_a_chain_that_accepts_everything_halves_tpot_at_every_load() -> None:
    # d = 1, every draft accepted: 12 tokens after the first in 6 rounds of 5 ms instead of 12
    # steps: TPOT 2.5 ms against 5 ms, a gain of exactly 1 - 2.5 / 5 = 0.5 at every load.
    answer = advise(fixed_question([0.5, 1.0, 2.0]))
    assert answer["recommendation"] == "mtp d=1"
    gains = answer["gain_vs_load"]["mtp d=1"]
    assert [(g["load"], g["low"], g["p50"], g["high"]) for g in gains] == [
        (0.5, 0.5, 0.5, 0.5),
        (1.0, 0.5, 0.5, 0.5),
        (2.0, 0.5, 0.5, 0.5),
    ]
    assert answer["sd_stops_helping_at"] is None
    sd = answer["ranking"][0]
    assert sd["latency"]["p50"] == 2.5 and sd["p_beats_sd_off"] == 1.0
    assert answer["ranking"][1]["latency"]["p50"] == 5.0
    assert answer["configurations_searched"] == 6


def test_goodput_ranks_first_and_decides_p_beats_sd_off() -> None:
    # SLO p90 TPOT <= 4 ms: SD off's requests (TPOT 5 ms) all miss it, goodput 0; mtp d=1's
    # (TPOT 2.5 ms) all meet it. At the nominal load the 5 requests arrive at 0, 1, .., 4 s and
    # each takes 10 + 6 x 5 = 40 ms, so the run lasts 4.040 s: goodput 5 / 4.04 req/s in every
    # replica, and mtp d=1 beats SD off in each on goodput alone.
    question = fixed_question([1.0])
    question.slos = {"tpot_ms": {"p90": 4.0}}
    answer = advise(question)
    sd, off = answer["ranking"]
    assert (sd["configuration"], off["configuration"]) == ("mtp d=1", "SD off")
    assert sd["goodput_rps"]["low"] == pytest.approx(5 / 4.04, rel=1e-12)
    assert sd["goodput_rps"]["high"] == pytest.approx(5 / 4.04, rel=1e-12)
    assert off["goodput_rps"]["p50"] == off["goodput_rps"]["high"] == 0.0
    assert sd["p_beats_sd_off"] == 1.0 and off["p_beats_sd_off"] is None
    assert answer["headline_latency"] == "p90_tpot_ms"


def test_each_traffic_kind_scales_with_the_load() -> None:
    # A load is a multiplier of the nominal traffic: a Poisson rate of 1 req/s at 0.5 is
    # 0.5 req/s; a trace at 2 x its rate replays its timestamps at time_scale 1/2; a closed loop
    # of 4 users at 0.5 is 2 users, at 0.1 round(0.4) = 0, kept at 1 user. The SD variant's
    # block carries its depth under its kind's key.
    question = fixed_question([0.5, 1.0, 2.0])
    sd = question.variants[1]
    config = config_for(question, sd, 0.5)
    assert config["traffic"]["load"] == {"type": "constant", "rate_rps": 0.5}
    assert config["engine"]["speculation"]["params"] == {"depth": 1}
    assert "speculation" not in config_for(question, question.variants[0], 0.5)["engine"]
    assert load_label(question, 2.0) == 2.0
    question.load_kind = "trace"
    question.traffic["load"] = {"type": "trace_timestamps", "time_scale": 1.0}
    assert config_for(question, sd, 2.0)["traffic"]["load"]["time_scale"] == 0.5
    assert load_label(question, 2.0) == 2.0  # nominal 1 req/s x 2
    question.load_kind = "concurrency"
    question.traffic["load"] = {"type": "concurrency", "users": 4}
    assert config_for(question, sd, 0.5)["traffic"]["load"]["users"] == 2
    assert config_for(question, sd, 0.1)["traffic"]["load"]["users"] == 1
    assert (load_label(question, 0.5), load_label(question, 3.0)) == (2.0, 12.0)
    # The question itself is left as it was.
    assert question.traffic["load"] == {"type": "concurrency", "users": 4}


def test_crossover_is_interpolated_where_the_median_gain_reaches_zero() -> None:
    # Between load 2 (gain +0.1) and 4 (gain -0.1): 2 + 2 x 0.1 / 0.2 = 3.
    series = [
        {"load": 1.0, "p50": 0.2},
        {"load": 2.0, "p50": 0.1},
        {"load": 4.0, "p50": -0.1},
    ]
    assert _crossover(series) == pytest.approx(3.0)
    assert _crossover(series[:2]) is None


def run_cli(tmp_path: Path, *flags: str) -> int:
    return main(
        [
            "advise",
            "--model",
            "Qwen/Qwen3-8B",
            "--hardware",
            "h100_sxm",
            "--rate",
            "2",
            "--requests",
            "6",
            "--out",
            str(tmp_path / "out"),
            *flags,
        ]
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ((), "search space: no SD configuration to compare with SD off"),
        (("--acceptance", "mtp=0.7", "--slo", "ttfb_ms:p90=5"), "unknown metric 'ttfb_ms'"),
        (
            ("--acceptance", "mtp=0.7", "--replicas", "1"),
            "--replicas: expected an integer in 2..10000",
        ),
        (("--acceptance", "mtp=0.7", "--screen", "1"), "--screen: expected an integer in 2..10000"),
        (("--acceptance", "mtp=0.7", "--replicas", "10001"), "in 2..10000 (replicas), got 10001"),
        (("--acceptance", "mtp=1.7"), "--acceptance 'mtp=1.7': expected a per-draft"),
        (("--acceptance", "eagle3=0.5"), "eagle3 left out: it needs --draft-config"),
        # The second used to replace the first silently (and the advice ran on it alone).
        (
            ("--acceptance", "mtp=0.7", "--acceptance", "mtp=0.6"),
            "aisim: error: --acceptance 'mtp=0.6': mtp is already given ('mtp=0.7'); give each "
            "method once\n",
        ),
        (
            ("--acceptance", "mtp=0.7", "--kv-blocks", "0"),
            "aisim: error: --kv-blocks",
        ),
        # A value checked by the replay config names the flag it came from (it used to name
        # the config field alone, e.g. 'traffic.source.output_tokens: ...').
        (
            ("--acceptance", "mtp=0.7", "--output-tokens", "100000000"),
            "aisim: error: --output-tokens (traffic.source.output_tokens): expected an integer "
            "in 1..16777216, got 100000000\n",
        ),
        (
            ("--acceptance", "mtp=0.7", "--model", "nosuch"),
            "aisim: error: --model (engine.model): unknown model 'nosuch'; built-in models: ",
        ),
        # Every load searched is checked before a replay: 1e9 req/s x 4 (the default loads'
        # largest) is above the replay's limit of 1e9 req/s.
        (
            ("--acceptance", "mtp=0.7", "--rate", "1e9"),
            "aisim: error: --loads 4: --rate (traffic.load.rate_rps): expected a finite number "
            "in 1e-06..1000000000.0, got 4000000000.0\n",
        ),
        (
            ("--acceptance", "mtp=0.7", "--kv-blocks", "1"),
            "aisim: error: --kv-blocks (engine.workers.aggregated.kv_cache.capacity): request ",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, capsys, flags, message) -> None:
    assert run_cli(tmp_path, *flags) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # Reported under the config path (engine.workers...timing.estimator: no estimator is
        # available for auto: ... roofline: tensor_parallel: 3 ...). Qwen3-8B has 32 heads.
        (
            ("--acceptance", "mtp=0.7", "--tp", "3"),
            "--tp (engine.workers.aggregated.parallelism.tensor): 3 does not divide the 32 "
            "attention heads of Qwen/Qwen3-8B (each GPU must hold whole heads); expected one of "
            "1, 2, 4, 8, 16, 32",
        ),
        # The loader's own errors named the path alone ('/tmp': is a folder, not a file).
        (
            ("--acceptance", "eagle3=0.5", "--draft-config", "."),
            "--draft-config '.': is a folder, not a file; expected the drafter's config.json "
            "(a file)",
        ),
        (
            ("--acceptance", "eagle3=0.5", "--draft-config", "missing.json"),
            "--draft-config 'missing.json': file not found; expected the drafter's config.json "
            "(a file)",
        ),
        (
            ("--acceptance", "eagle3=0.5", "--draft-config", "bad.json"),
            "--draft-config: 'bad.json': not valid JSON: Expecting ',' delimiter at line 2, "
            "column 1",
        ),
        (
            ("--acceptance", "eagle3=0.5", "--draft-config", "empty.json"),
            "--draft-config (engine.speculation.draft_config.hidden_size): required field is "
            "missing",
        ),
    ],
)
def test_a_bad_flag_is_named_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, flags, message
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.json").write_text("[1\n", encoding="utf-8")
    Path("empty.json").write_text("{}\n", encoding="utf-8")
    assert run_cli(tmp_path, *flags) == 2
    assert capsys.readouterr().err == f"aisim: error: {message}\n"


def test_cli_writes_every_answer(tmp_path: Path, capsys) -> None:
    code = run_cli(
        tmp_path, "--acceptance", "ngram=0.5", "--depths", "2", "--loads", "1", "--replicas", "2"
    )
    assert code == 0
    answer = json.loads((tmp_path / "out/advice.json").read_text())
    assert [item["configuration"] for item in answer["ranking"]] != []
    assert {"SD off", "ngram d=2"} == {item["configuration"] for item in answer["ranking"]}
    assert (tmp_path / "out/advice.md").read_text().startswith("# aisim advise")
    html = (tmp_path / "out/advice.html").read_text()
    assert html.startswith("<!doctype html>")
    # The HTML answer carries the gain-vs-load plot (with its bands) inline.
    assert html.count("data:image/png;base64,") == 1
    assert (tmp_path / "out/gain_vs_load.png").read_bytes()[:4] == b"\x89PNG"
    assert "Recommendation" in capsys.readouterr().out


def test_the_race_stops_a_clearly_dominated_configuration_after_the_screen() -> None:
    # mtp d=1 accepting every draft: TPOT 2.5 ms; mtp d=2 accepting none: one token per 5 ms
    # round, TPOT 5 ms = SD off's, and goodput the same (every request meets the SLO), so the
    # leader (mtp d=1) beats each of its replicas at the nominal load: it stops after the
    # screen (2 replicas) there and gets only its point run at the other loads.
    # Replays: 3 configurations at the nominal load x (point + 2) = 9; then SD off and the best
    # SD configuration (mtp d=1) 2 more at the nominal load and point + 4 at loads 0.5 and 2:
    # 2 x (2 + 2 x 5) = 24; mtp d=2 its points at 0.5 and 2: 2. 9 + 24 + 2 = 35 (full: 45).
    question = fixed_question([0.5, 1.0, 2.0])
    question.variants.append(Variant("mtp", 2, {"acceptance_rate": 0.0}))
    question.replicas = 4
    question.screen = 2
    answer = advise(question)
    assert answer["search"]["replays"] == 35
    assert answer["search"]["replays_of_a_full_search"] == 45
    assert answer["search"]["point_only"] == ["mtp d=2 at 0.5", "mtp d=2 at 2"]
    by_name = {item["configuration"]: item for item in answer["ranking"]}
    assert [item["configuration"] for item in answer["ranking"]] == ["mtp d=1", "SD off", "mtp d=2"]
    assert by_name["mtp d=2"]["replicas"] == 2
    assert by_name["mtp d=1"]["replicas"] == by_name["SD off"]["replicas"] == 4
    assert by_name["mtp d=2"]["latency"]["p50"] == 5.0
    # A tie is no win: mtp d=2 has SD off's goodput and headline latency in every replica, so
    # it beats SD off in none of its 2; mtp d=1 (TPOT 2.5 ms, same goodput) in all 4.
    assert by_name["mtp d=2"]["p_beats_sd_off"] == 0.0
    assert by_name["mtp d=1"]["p_beats_sd_off"] == 1.0
    dropped = answer["gain_vs_load"]["mtp d=2"]
    assert [g["replicas"] for g in dropped] == [0, 2, 0]
    assert [g["p50"] for g in dropped] == [None, 0.0, None]
    assert [g["point"] for g in dropped] == [0.0, 0.0, 0.0]
    assert [g["replicas"] for g in answer["gain_vs_load"]["mtp d=1"]] == [4, 4, 4]
    assert [g["p50"] for g in answer["gain_vs_load"]["mtp d=1"]] == [0.5, 0.5, 0.5]


def test_a_refined_interval_is_the_full_search_one_and_the_answer_is_deterministic(
    tmp_path: Path,
) -> None:
    # Poisson arrivals (the traffic seed varies per replica): the race (screen 2 of 4) and the
    # full search (screen 4) give the same figures for every configuration the race refined,
    # and the same seed gives the same bytes.
    flags = ("--acceptance", "ngram=0.5", "--depths", "1,3", "--loads", "1,2", "--replicas", "4")
    answers = []
    for name, screen in (("race", "2"), ("again", "2"), ("full", "4")):
        code = main(
            [
                "advise",
                "--model",
                "Qwen/Qwen3-8B",
                "--hardware",
                "h100_sxm",
                "--rate",
                "2",
                "--requests",
                "6",
                "--out",
                str(tmp_path / name),
                "--screen",
                screen,
                *flags,
            ]
        )
        assert code == 0
        answers.append((tmp_path / name / "advice.json").read_bytes())
    assert answers[0] == answers[1]
    race, full = json.loads(answers[0]), json.loads(answers[2])
    assert full["search"]["kind"] == "full" and race["search"]["kind"] == "race"
    assert full["search"]["replays"] == 3 * 2 * 5
    full_items = {item["configuration"]: item for item in full["ranking"]}
    refined = [item for item in race["ranking"] if item["replicas"] == 4]
    assert {"SD off", race["best_sd"]} <= {item["configuration"] for item in refined}
    for item in refined:
        assert item == full_items[item["configuration"]]
    assert race["gain_vs_load"][race["best_sd"]] == full["gain_vs_load"][race["best_sd"]]


def test_the_gain_plot_draws_each_configurations_band(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two SD configurations: the first with a band at loads 1, 2 and 4; the second a point
    # only at load 4 (no interval there), so its band spans loads 1 and 2. The median gain of
    # the first crosses zero at 3 req/s: a vertical line there.
    from matplotlib.axes import Axes

    from aisim.cli._advise import gain_plot

    bands: list[tuple[list[float], list[float], list[float]]] = []
    lines: list[float] = []
    fill, vline = Axes.fill_between, Axes.axvline

    def record_band(self: Axes, xs: Any, low: Any, high: Any, **kwargs: Any) -> Any:
        bands.append((list(xs), list(low), list(high)))
        return fill(self, xs, low, high, **kwargs)

    def record_line(self: Axes, x: float = 0, **kwargs: Any) -> Any:
        lines.append(x)
        return vline(self, x, **kwargs)

    monkeypatch.setattr(Axes, "fill_between", record_band)
    monkeypatch.setattr(Axes, "axvline", record_line)

    def gain(load: float, p50: float | None, low: float | None, high: float | None) -> Any:
        return {"load": load, "point": p50, "p50": p50, "low": low, "high": high, "replicas": 3}

    answer = {
        "gain_vs_load": {
            "a": [gain(1, 0.2, 0.1, 0.3), gain(2, 0.1, 0.0, 0.2), gain(4, -0.1, -0.2, 0.0)],
            "b": [gain(1, 0.4, 0.35, 0.45), gain(2, 0.3, 0.2, 0.4), gain(4, None, None, None)],
        },
        "sd_stops_helping_at": 3.0,
        "load_unit": "req/s",
        "headline_latency": "p90_tpot_ms",
    }
    plot = gain_plot(answer)
    assert plot is not None and plot[:4] == b"\x89PNG"
    assert bands == [
        ([1, 2, 4], [0.1, 0.0, -0.2], [0.3, 0.2, 0.0]),
        ([1, 2], [0.35, 0.2], [0.45, 0.4]),
    ]
    assert lines == [3.0]


def test_a_point_acceptance_is_described_as_such_not_as_no_speculation(
    tmp_path: Path, capsys
) -> None:
    """SD configurations with an i.i.d. rate (no counts) and SD off: the answer's acceptance
    line used to be SD off's "no speculation", though the search was all about SD."""
    flags = ("--acceptance", "ngram=0.5", "--depths", "1", "--loads", "1", "--replicas", "2")
    assert run_cli(tmp_path, *flags) == 0
    capsys.readouterr()
    answer = json.loads((tmp_path / "out" / "advice.json").read_text(encoding="utf-8"))
    acceptance = answer["sources"]["acceptance"]
    assert not acceptance["included"]
    assert acceptance["detail"][0].startswith("no counts: the acceptance is a point value")
