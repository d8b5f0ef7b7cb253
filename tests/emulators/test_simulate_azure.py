"""``lancespec simulate --store az``: the writers on Azurite behind the fault proxy (latency, 5xx answers, resets
and lost answers are HTTP's, so the fault profiles play on Azure), checked as on S3; the reference writer and
pylance must show no anomaly. The personalities that rewrite S3's requests or answers cannot be played on Azure
and are refused, saying why. Skipped, saying why, without node or Azurite."""

from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pytest

from lancespec.cli.main import main
from simulator.emulators import AZURITE_ACCOUNT, AzuriteServer
from simulator.proxy import FaultProxy
from simulator.simulate import RunConfig, simulate

pytestmark = [pytest.mark.azure]


@pytest.mark.parametrize("personality", ["no-conditional", "lagging-list", "unlocked"])
def test_personalities_azure_cannot_play_are_refused(personality: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["simulate", "--store", "az", "--personality", personality, "--ops", "1", "--writers", "1"])
    assert stopped.value.code == 2
    assert f"the {personality} personality cannot be played on Azure" in capsys.readouterr().err


@pytest.mark.interop
def test_the_proxy_sees_pylance_batch_deletions_on_azurite(azurite: AzuriteServer, az_container: str) -> None:
    """pylance's cleanup on Azure deletes through blob batches (``POST ?comp=batch``): the proxy records each
    key, as the checker needs to tell a deletion from a vanished version; the second source is the listing."""
    container = az_container.removeprefix("az://")
    with FaultProxy(azurite.endpoint, 1, account=AZURITE_ACCOUNT) as proxy:
        options = proxy.storage_options(0, azurite.storage_options())
        for i in range(3):
            lance.write_dataset(pa.table({"a": [i]}), f"{az_container}/ds", storage_options=options,
                                mode="overwrite" if i else "create")
        before = _keys(az_container, azurite)
        lance.dataset(f"{az_container}/ds", storage_options=options).cleanup_old_versions(
            older_than=datetime.timedelta(0), delete_unverified=True)
        deleted = {w.key for w in proxy.writes if w.kind == "delete"}
        assert {w.bucket for w in proxy.writes} == {container}
    gone = before - _keys(az_container, azurite)
    assert gone and deleted == gone
    assert any(key.startswith("ds/_versions/") for key in gone)


def _keys(container_uri: str, azurite: AzuriteServer) -> set[str]:
    from reference.store import open_store

    return {info.uri.removeprefix(f"{container_uri}/") for info in open_store(azurite.storage_options()).list(
        container_uri)}


@pytest.mark.slow
@pytest.mark.interop
@pytest.mark.parametrize("writer", ["reference", "pylance"])
def test_simulate_on_azurite_finds_no_anomaly(writer: str, azurite: AzuriteServer) -> None:
    """Faults injected (the default profile), commits made, and no anomaly: the reference writer and pylance
    keep every invariant on Azure as on S3. (The session's ``azurite`` only makes this skip without Azurite:
    the run starts its own.)"""
    report = simulate(RunConfig(writers=3, ops=40, seed=2, writer=writer, store="az", preflight_rounds=10))
    assert report.preflight is not None and report.preflight.vouched, report.preflight
    assert report.result.commits > 10 and sum(report.faults.values()) > 0
    assert not report.result.anomalies, report.result.anomalies[:3]
