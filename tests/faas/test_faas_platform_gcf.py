"""The Google Cloud Functions (2nd gen) driver rehearsed against the local Google Cloud stand-in:
the real google-cloud-functions (REST), google-cloud-storage and google-auth clients over HTTPS
on loopback, service-account JWTs, the function run by the real Functions Framework. Requests
the API refuses come back in Google's words through the same clients."""

from __future__ import annotations

import pytest
import requests

from testbed_agent.faas_drivers import FunctionSpec, open_driver, teardown

from .standins import gcp_standin, stats, target

pytestmark = pytest.mark.integration


def test_deploy_calls_cold_warm_logs_and_teardown(tmp_path, monkeypatch):
    with gcp_standin(tmp_path / "gcp", monkeypatch) as ep:
        tgt = target(
            "gcf-gen2",
            tmp_path,
            source_bucket=ep["bucket"],
            project=ep["project"],
            log_wait_s=5,
            run_id="Run-1",
        )
        driver = open_driver(tgt)
        dep = driver.deploy(FunctionSpec("calcs-0", "calcs", memory_mb=512, timeout_s=30))
        assert dep["uri"].startswith("https://tb-") and dep["uri"].endswith("-ew.a.run.app")
        fn = driver.functions.get_function(name=dep["name"])
        assert fn.labels["testbed-run"] == "run-1" and fn.service_config.available_memory == "512Mi"
        assert fn.build_config.entry_point == "testbed_entry" and fn.build_config.runtime == "python312"
        calls = [driver.invoke("calcs-0", {"level": 1}) for _ in range(3)]
        assert all(c.ok and c.result["calcs"] == 1000 for c in calls), [c.error for c in calls]
        assert [c.inspector["new_instance"] for c in calls] == [True, False, False]
        assert len({c.inspector["instance_id"] for c in calls}) == 1 and calls[0].inspector["init_s"] > 0
        assert driver.describe()["real"] is False and driver.describe()["standin"] == "gcp"
        driver.cold("calcs-0")
        after = driver.invoke("calcs-0", {"level": 1})
        assert (
            after.inspector["new_instance"]
            and after.inspector["instance_id"] != calls[0].inspector["instance_id"]
        )
        calls.append(after)
        driver.settle("calcs-0", calls, wait_s=5)
        assert all(c.platform.get("latency_s", 0) > 0 for c in calls)
        assert calls[0].platform["revision"] != after.platform["revision"]  # a new revision: cold
        assert calls[0].billing["gb_seconds"] == pytest.approx(0.5 * 0.1)  # 512 MiB x the 100 ms minimum
        # the same function deployed again with another memory size: a new revision's configuration
        driver.deploy(FunctionSpec("calcs-0", "calcs", memory_mb=1024, timeout_s=30))
        assert driver.functions.get_function(name=dep["name"]).service_config.available_memory == "1024Mi"
        resized = driver.invoke("calcs-0", {"level": 1})
        assert resized.ok and resized.inspector["new_instance"]

        # the URL wants an ID token for itself, as Cloud Run does
        assert requests.post(dep["uri"], json={}, timeout=30).status_code == 403
        result = teardown(driver, "Run-1")
        assert sorted(r["kind"] for r in result["deleted"]) == ["function", "source-object"]
        left = stats(ep)
        assert left["functions_left"] == [] and left["objects_left"] == 0
        assert left["requests"]["functions.create"] == 1 and left["requests"]["function invoke"] >= 5
        assert left["tokens"]["id_tokens"] >= 1 and left["errors"] == {"function invoke 403": 1}


def test_requests_the_api_refuses(tmp_path, monkeypatch):
    """Bodies are parsed into the client library's own Function message, then the service's rules."""
    from google.api_core import exceptions
    from google.cloud import functions_v2

    with gcp_standin(tmp_path / "gcp", monkeypatch) as ep:
        client = functions_v2.FunctionServiceClient(transport="rest")
        parent = f"projects/{ep['project']}/locations/europe-west1"
        session = client._transport._session  # the client's own authorized session
        body = {"buildConfig": {"runtime": "python312", "entryPoint": "x"}, "noSuchField": 1}
        resp = session.post(
            f"https://cloudfunctions.googleapis.com/v2/{parent}/functions?functionId=f1", json=body
        )
        assert resp.status_code == 400 and "noSuchField" in resp.json()["error"]["message"]
        fn = {
            "build_config": {
                "runtime": "python27",
                "entry_point": "x",
                "source": {"storage_source": {"bucket": ep["bucket"], "object_": "o"}},
            },
        }
        with pytest.raises(exceptions.BadRequest, match="Runtime 'python27' is not supported"):
            client.create_function(parent=parent, function=fn, function_id="f1")
        fn["build_config"]["runtime"] = "python312"
        fn["service_config"] = {"available_memory": "64Mi"}
        with pytest.raises(exceptions.BadRequest, match="outside 128Mi"):
            client.create_function(parent=parent, function=fn, function_id="f1")
        with pytest.raises(exceptions.BadRequest, match="Invalid function id"):
            client.create_function(parent=parent, function={**fn, "service_config": {}}, function_id="F_1")
        # a source whose main.py lacks the entry point fails in the build, as Cloud Build reports it
        tgt = target("gcf-gen2", tmp_path, source_bucket=ep["bucket"], project=ep["project"])
        driver = open_driver(tgt)
        blob = driver.storage.bucket(ep["bucket"]).blob("bad.zip")
        from testbed_services.faas import package

        blob.upload_from_string(package.build_zip({"main.py": b"def other(request):\n    return 'x'\n"}))
        op = client.create_function(
            parent=parent,
            function={
                "build_config": {
                    "runtime": "python312",
                    "entry_point": "testbed_entry",
                    "source": {"storage_source": {"bucket": ep["bucket"], "object_": "bad.zip"}},
                }
            },
            function_id="bad",
        )
        with pytest.raises(exceptions.GoogleAPICallError, match="'testbed_entry' is not defined"):
            op.result(timeout=60)
        assert stats(ep)["builds_failed"] == 1
        got = stats(ep)
        assert got["requests"]["functions.create"] == 5  # 3 refused at once, 1 failed in its build, 1 raw
        assert got["errors"]["functions.create 400"] == 4
