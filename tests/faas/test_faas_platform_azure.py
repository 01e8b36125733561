"""The Azure Functions driver rehearsed against the local ARM stand-in (Entra ID token, ARM with
Microsoft.Web/Storage validated against the SDK models, Kudu zip deploy, the function front,
Azure Monitor metrics): azure-identity, azure-mgmt-web/storage/resource/monitor over HTTPS on
loopback, the app's function_app.py run with the real azure-functions library."""

from __future__ import annotations

import pytest
import requests

from testbed_agent.faas_drivers import FunctionSpec, open_driver, teardown

from .standins import azure_standin, stats, target

pytestmark = pytest.mark.integration


def test_deploy_calls_cold_warm_metrics_and_teardown(tmp_path, monkeypatch):
    with azure_standin(tmp_path / "arm", monkeypatch) as ep:
        driver = open_driver(target("azure-functions", tmp_path, metrics_wait_s=5, run_id="az-1"))
        dep = driver.deploy(FunctionSpec("calcs-0", "calcs", timeout_s=60))
        assert dep["url"] == f"https://{dep['name']}.azurewebsites.net/api/testbed"
        site = driver.web.web_apps.get(driver.group, dep["name"])
        assert site.kind == "functionapp,linux" and site.tags["testbed-run"] == "az-1"
        calls = [driver.invoke("calcs-0", {"level": 1}) for _ in range(3)]
        assert all(c.ok and c.result["calcs"] == 1000 for c in calls), [c.error for c in calls]
        assert [c.inspector["new_instance"] for c in calls] == [True, False, False]
        assert driver.describe()["real"] is False and driver.describe()["standin"] == "azure"
        driver.cold("calcs-0")
        after = driver.invoke("calcs-0", {"level": 1})
        assert (
            after.inspector["new_instance"]
            and after.inspector["instance_id"] != calls[0].inspector["instance_id"]
        )
        metrics = driver.settle("calcs-0", [*calls, after], wait_s=5)
        assert metrics["execution_count"] == 4
        # Azure's execution units: memory rounded up to 128 MB, at least 100 ms each
        assert metrics["execution_units_mb_ms"] >= 4 * 128 * 100
        # the function key is required, as the Functions host requires it
        assert requests.post(dep["url"], json={}, timeout=30).status_code == 401
        result = teardown(driver, "az-1")
        assert result["deleted"] == [{"kind": "resource-group", "id": driver.group}]
        left = stats(ep)
        assert left["resources_left"] == [] and left["functions"]["zip_deploys"] == 1
        assert left["functions"]["cold_starts"] == 2 and left["functions"]["restarts"] == 1
        assert driver.journal.live() == []


def test_requests_azure_refuses(tmp_path, monkeypatch):
    """ARM validates bodies against azure-mgmt-web's models and App Service's rules."""
    from azure.core.exceptions import HttpResponseError

    with azure_standin(tmp_path / "arm", monkeypatch):
        driver = open_driver(target("azure-functions", tmp_path, run_id="az-2"))
        driver._ensure_base()
        site = {
            "location": "westeurope",
            "kind": "functionapp,linux",
            "server_farm_id": driver._base["plan_id"],
            "reserved": True,
            "site_config": {"linux_fx_version": "Python|2.7"},
        }
        with pytest.raises(HttpResponseError, match="LinuxFxVersion has an invalid value"):
            driver.web.web_apps.begin_create_or_update(driver.group, "tb-bad-1", site).result()
        with pytest.raises(HttpResponseError, match="Linux function apps"):
            driver.web.web_apps.begin_create_or_update(
                driver.group, "tb-bad-2", {**site, "kind": "app"}
            ).result()
        with pytest.raises(HttpResponseError, match="Consumption plans only"):
            driver.web.app_service_plans.begin_create_or_update(
                driver.group,
                "p2",
                {"location": "westeurope", "sku": {"name": "P1v3", "tier": "PremiumV3"}, "reserved": True},
            ).result()
        # a property the API version does not know is refused ("Could not find member")
        session = requests.Session()
        token = driver.credential.get_token("https://management.azure.com/.default").token
        url = (
            f"https://management.azure.com/subscriptions/{driver.subscription}/resourceGroups/{driver.group}"
            "/providers/Microsoft.Web/serverfarms/p3?api-version=2023-12-01"
        )
        resp = session.put(
            url,
            json={"location": "westeurope", "properties": {"noSuch": 1}},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert resp.status_code == 400 and "Could not find member 'noSuch'" in resp.json()["error"]["message"]
        teardown(driver, "az-2")
