"""The report's provenance names the executor and the Slurm job ids the manifest recorded."""

from __future__ import annotations

from evalnoise.report.run_section import manifest_rows


def test_executor_and_slurm_job_ids_are_shown():
    manifest = {
        "execution": {
            "executors": ["slurm"],
            "trial_jobs": [
                {"shard": "a", "executor": "slurm", "slurm_job_id": "12"},
                {"shard": "b", "executor": "slurm", "slurm_job_id": "9"},
            ],
        }
    }
    rows = dict(manifest_rows(manifest))
    assert rows["executor"] == "slurm"
    assert rows["trial jobs"] == "2; Slurm job ids 9, 12"


def test_local_runs_show_no_job_ids():
    rows = dict(manifest_rows({"execution": {"executors": ["local"], "trial_jobs": [{}]}}))
    assert rows["executor"] == "local" and rows["trial jobs"] == "1"
    assert "executor" not in dict(manifest_rows({}))
