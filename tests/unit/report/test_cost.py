"""What the datastore costs on AWS (issue 59 item 3): a known request mix priced by hand, the spec's own figure,
a user's price file over the shipped table, and the report's section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.cli.main import main
from harness.core.errors import HarnessError
from harness.report.cost import cost

PRICES = cost.load()


def _findings(duration_s=100.0, forecast_rate=1.0):
    return {"fleet": {"warmup_s": 0.0}, "duration_s": duration_s,
            "forecast": {"rate": {"point": forecast_rate}, "horizon_s": 1000.0}}


def test_the_shipped_table_is_dated_and_sourced():
    for path in cost.PRICE_KEYS:
        v = PRICES
        for k in path:
            v = v[k]
        assert v["price"] > 0 and v["source"].startswith("https://aws.amazon.com/") and v["as_of"]
    assert PRICES["region"] == "us-east-1"
    assert cost.price(PRICES, ("dynamodb", "on_demand", "write_request_units_per_million")) == 0.625
    assert cost.price(PRICES, ("dynamodb", "on_demand", "read_request_units_per_million")) == 0.125


def test_the_specs_figure_17500_wcu_per_s_is_39_dollars_an_hour_on_demand():
    # 17,500 WCU/s x 3,600 s = 63.0 million write units an hour, at $0.625 per million
    assert 17_500 * 3600 == 63_000_000
    assert cost.hourly_on_demand(0, 17_500, PRICES) == pytest.approx(39.375)


def test_a_known_dynamodb_mix_priced_by_hand():
    # 200 successful iterations over 100 s, each 5 read and 2.5 write request units: 10 RRU/s, 5 WRU/s
    rows = pd.DataFrame({"ok": np.ones(200, dtype=bool), "read_units": 5.0, "write_units": 2.5})
    t = np.linspace(0.25, 99.75, 200)
    c = cost.run_cost(rows, t, {"backend": "dynamodb"}, _findings(), PRICES)
    od = c["modes"]["on-demand"]
    # 36,000 RRU and 18,000 WRU an hour: 0.036 x $0.125 + 0.018 x $0.625 = $0.0045 + $0.01125
    assert od["per_hour"] == pytest.approx(0.01575)
    assert od["per_iteration"] == pytest.approx(5 * 0.125e-6 + 2.5 * 0.625e-6)  # $2.1875e-6
    assert od["per_hour_at_horizon"] == pytest.approx(2.1875e-6 * 1.0 * 3600)  # the forecast's 1 it/s
    # provisioned at the mean: 10 RCU x $0.00013 + 5 WCU x $0.00065 an hour; at a 70 % target 15 RCU and 8 WCU
    assert c["modes"]["provisioned (100 % used)"]["per_hour"] == pytest.approx(0.0013 + 0.00325)
    assert c["modes"]["provisioned (70 % target)"]["per_hour"] == pytest.approx(15 * 0.00013 + 8 * 0.00065)
    assert c["units"] == {"read_request_units": 1000.0, "write_request_units": 500.0, "rru_per_s": 10.0,
                          "wru_per_s": 5.0}
    assert cost.sentence(c).startswith("On AWS (us-east-1): $0.0158 an hour on-demand at this fleet")


def test_a_known_s3_mix_priced_by_hand():
    rows = pd.DataFrame({"ok": np.ones(100, dtype=bool), "requests": 10.0, "write_requests": 1.0})
    c = cost.run_cost(rows, np.linspace(0.5, 99.5, 100), {"backend": "s3"}, _findings(), PRICES)
    # 1 PUT/s and 9 GET/s: 3.6 thousand PUTs x $0.005 + 32.4 thousand GETs x $0.0004 an hour
    assert c["requests"] == {"put_copy_post_list": 100.0, "get_and_other": 900.0}
    assert c["modes"]["requests"]["per_hour"] == pytest.approx(3.6 * 0.005 + 32.4 * 0.0004)


def test_a_users_price_file_overrides_the_shipped_table(tmp_path):
    f = tmp_path / "prices.toml"
    f.write_text('region = "eu-west-1"\n[dynamodb.on_demand]\nwrite_request_units_per_million = 0.7625\n')
    table = cost.load(f)
    assert table["region"] == "eu-west-1" and table["overridden_by"] == str(f)
    assert cost.hourly_on_demand(0, 17_500, table) == pytest.approx(63 * 0.7625)
    assert cost.price(table, ("dynamodb", "on_demand", "read_request_units_per_million")) == 0.125  # kept
    bad = tmp_path / "bad.toml"
    bad.write_text('[dynamodb.on_demand]\nwrite_request_units_per_million = "cheap"\n')
    with pytest.raises(HarnessError, match="write_request_units_per_million must be a price"):
        cost.load(bad)
    with pytest.raises(HarnessError, match="no such file"):
        cost.load(tmp_path / "missing.toml")


def test_the_report_prices_the_run_and_takes_prices(tmp_path, capsys):
    import json

    from tests.support.synthetic import make_run

    run = make_run(tmp_path / "run", workers=2, duration_s=60.0, rate=lambda t: np.full_like(t, 1.0),
                   counts={"read_units": lambda t: np.full_like(t, 4.0), "write_units": lambda t: np.full_like(t, 2.0)})
    f = tmp_path / "p.toml"
    f.write_text("[dynamodb.on_demand]\nwrite_request_units_per_million = 1.0\n")
    assert main(["report", str(run), "--prices", str(f)]) == 0
    c = json.loads((run / "report" / "summary.json").read_text())["runs"][0]["findings"]["cost"]
    assert c["overridden_by"] == str(f)
    u = c["units"]
    assert c["modes"]["on-demand"]["per_hour"] == pytest.approx(3600 / 1e6 * (u["rru_per_s"] * 0.125
                                                                               + u["wru_per_s"] * 1.0))
    assert "What would it cost on AWS?" in (run / "report" / "index.html").read_text()
    capsys.readouterr()
    assert main(["report", str(run), "--prices", str(tmp_path / "nope.toml")]) == 2
    assert "--prices" in capsys.readouterr().err
