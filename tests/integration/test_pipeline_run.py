"""``prsd run PIPELINE.yml``: command and parallel steps on real daemons, real processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.pipekit import PY, run_pipeline, spool_entries, write_files

FIXTURES = Path(__file__).resolve().parent.parent / "pipelines"


def test_many_models_pipeline_one_model_per_store_and_brand(tmp_path: Path) -> None:
    """Azure's OJ sales pipeline, as published but for --set of the interpreters."""
    shutil.copytree(FIXTURES / "oj_sales", tmp_path / "oj")
    r = run_pipeline(
        tmp_path / "oj" / "pipeline.yml",
        tmp_path / "spool",
        "--set",
        f"jobs.partition_job.environment.python={PY}",
        "--set",
        f"jobs.parallel_train.task.environment.python={PY}",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    models = sorted((r.step_job("parallel_train") / "outputs" / "model_folder").rglob("model.json"))
    groups = {(p.parent.parent.name, p.parent.name) for p in models}
    stores = {"1000", "1001", "1002"}
    # The keys come back from the folder names (Azure's MLTable): minute.maid -> minute_maid.
    assert groups == {(s, b) for s in stores for b in ("dominicks", "minute_maid", "tropicana")}
    for path in models:
        model = json.loads(path.read_text())
        assert model["rows"] == 17  # 20 weeks less the 3 lags
        assert model["key"] == {"Store": path.parent.parent.name, "Brand": path.parent.name}
    assert r.final()["state"] == "Completed"
    assert r.result().startswith("Completed\n")
    std_log = (r.step_job("partition_job") / "logs" / "user" / "std_log.txt").read_text()
    assert "[prsd] attempt 1 of step partition_job" in std_log
    assert std_log.count("wrote ") == 9
    part = (r.step_job("partition_job") / "outputs" / "tabular_output_data").resolve()
    assert f"--tabular_output_data {part}" in std_log
    notes = [x for x in r.stderr.splitlines() if x.startswith("prsd: note: ")]
    assert notes.count("prsd: note: not used: $schema") == 1  # in every step, said once
    assert any("jobs.parallel_train.compute" in x for x in notes), notes
    spec = json.loads((r.step_job("parallel_train") / "spec.json").read_text())
    for key in ("display_name", "settings", "jobs.parallel_train.compute"):
        assert key in spec["ignored"]
    command_spec = json.loads((r.step_job("partition_job") / "spec.json").read_text())
    assert command_spec["python"] == PY and command_spec["mini_batch_size"] == 1
    assert "jobs.partition_job.version" in command_spec["ignored"]  # the component's


def _pipeline(tmp: Path, steps: str, go_on: bool = False) -> Path:
    head = "type: pipeline\nname: chain\nsettings:\n"
    head += f"  continue_on_step_failure: {str(go_on).lower()}\njobs:\n"
    (tmp / "p").mkdir(parents=True)
    (tmp / "p" / "pipeline.yml").write_text(head + steps)
    return tmp / "p" / "pipeline.yml"


def _steps(*items: str) -> str:
    return "".join("  " + line + "\n" for item in items for line in item.strip().splitlines())


FAIL = """
fail:
  type: command
  command: echo about to fail; echo the first error >&2; exit 3
  retry_settings: {max_retries: 0}
"""
SLOW = """
slow:
  type: command
  command: sleep 2; echo slow done > ${{outputs.out}}/done.txt
  outputs: {out: {type: uri_folder}}
"""
AFTER_SLOW = """
after_slow:
  type: command
  command: cat ${{inputs.got}}/done.txt
  inputs: {got: {path: "${{parent.jobs.slow.outputs.out}}"}}
"""
AFTER_FAIL = """
after_fail:
  type: command
  command: echo never
  inputs: {x: {path: "${{parent.jobs.fail.outputs.o}}"}}
"""
FAIL_WITH_OUTPUT = FAIL + "  outputs: {o: {type: uri_folder}}\n"


def test_failed_step_stops_the_pipeline_by_default(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, _steps(FAIL_WITH_OUTPUT, SLOW, AFTER_SLOW, AFTER_FAIL))
    r = run_pipeline(path, tmp_path / "spool")
    assert r.returncode == 42, r.stdout + r.stderr
    result = r.result()
    assert result.startswith("Failed\nstep fail ended Failed: ")
    assert "the command exited with code 3" in result
    assert "step after_slow (command) Skipped: not run: step fail ended Failed" in result
    assert "step after_fail (command) Skipped" in result
    assert "step slow (command) Completed" in result  # it was running already
    assert not r.step_job("after_slow").exists()
    log = (r.step_job("fail") / "logs" / "user" / "std_log.txt").read_text()
    assert "about to fail" in log and "the first error" in log


def test_continue_on_step_failure_runs_what_does_not_depend_on_it(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, _steps(FAIL_WITH_OUTPUT, SLOW, AFTER_SLOW, AFTER_FAIL), True)
    r = run_pipeline(path, tmp_path / "spool")
    assert r.returncode == 42, r.stdout + r.stderr
    result = r.result()
    assert "step after_slow (command) Completed" in result
    assert "step after_fail (command) Skipped: not run: it depends on step fail" in result
    log = (r.step_job("after_slow") / "logs" / "user" / "std_log.txt").read_text()
    assert "slow done" in log


def test_bad_pipelines_are_refused_at_submit_leaving_nothing(tmp_path: Path) -> None:
    cases = {
        "cycle": (_steps(
            "a:\n  type: command\n  command: 'true'\n  inputs: {x: {path: '${{parent.jobs.b.outputs.o}}'}}\n  outputs: {o: {}}",
            "b:\n  type: command\n  command: 'true'\n  inputs: {x: {path: '${{parent.jobs.a.outputs.o}}'}}\n  outputs: {o: {}}",
        ), "jobs.a: the steps depend on each other in a cycle: a -> b -> a"),
        "sweep": (_steps("s:\n  type: sweep"), "jobs.s.type: a sweep step is not supported"),
        "component": (_steps("c:\n  type: command\n  component: ./missing.yml"),
                      "jobs.c.component: the component file"),
    }  # fmt: skip
    for name, (steps, expected) in cases.items():
        path = _pipeline(tmp_path / name, steps)
        r = run_pipeline(path, tmp_path / "spool")
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert str(path) in r.stderr and expected in r.stderr, (name, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
        left = spool_entries(tmp_path / "spool")
        assert left["inbox"] == [] and left["pipelines"] == [], left
        assert [j for j in left["jobs"] if not j.startswith(".")] == []


def test_a_job_file_by_name_with_set(tmp_path: Path) -> None:
    """A single parallel job given as a file of any name, ``--set`` applied before checks."""
    write_files(
        tmp_path / "j",
        {
            "score.yml": """
                type: parallel
                input_data: ./data
                mini_batch_size: "50"
                task:
                  code: ./code
                  entry_script: score.py
                  append_row_to: ./outputs/out.txt
                """,
            "code/score.py": "def run(mb):\n    return [p[-5:] for p in mb]\n",
            **{f"data/f{i}.txt": str(i) for i in range(6)},
            "unrelated/big.bin": "x" * 1000,
        },
    )
    r = run_pipeline(tmp_path / "j" / "score.yml", tmp_path / "spool", "--set", "mini_batch_size=2")
    assert r.returncode == 0, r.stdout + r.stderr
    job_id = r.stdout.splitlines()[0].split()[1]
    job = tmp_path / "spool" / "jobs" / job_id
    assert len((job / "outputs" / "out.txt").read_text().splitlines()) == 6
    assert json.loads((job / "spec.json").read_text())["mini_batch_size"] == 2
    assert (job / "code" / "score.py").is_file()
    assert not list(job.rglob("big.bin")) and not list(job.rglob("f0.txt"))  # not referenced
    bad = run_pipeline(
        tmp_path / "j" / "score.yml", tmp_path / "spool", "--set", "mini_batch_sise=2"
    )
    assert bad.returncode == 2
    assert "mini_batch_sise: unknown key (did you mean 'mini_batch_size'?)" in bad.stderr


def test_a_job_file_without_code_copies_its_entry_script_alone(tmp_path: Path) -> None:
    """The file may sit in a home directory: nothing it does not name is copied."""
    write_files(
        tmp_path / "home",
        {
            "job.yml": """
                type: parallel
                input_data: ./data
                task:
                  entry_script: score.py
                  append_row_to: ./outputs/out.txt
                """,
            "score.py": "def run(mb):\n    return [p[-5:] for p in mb]\n",
            "data/f0.txt": "0",
            "notes/diary.txt": "private",
            "other.py": "x = 1\n",
        },
    )
    r = run_pipeline(tmp_path / "home" / "job.yml", tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    job = tmp_path / "spool" / "jobs" / r.stdout.splitlines()[0].split()[1]
    assert sorted(p.name for p in (job / "code").iterdir() if p.name != "__pycache__") == [
        "score.py"
    ]
    assert (job / "outputs" / "out.txt").read_text() == "0.txt\n"


def test_a_command_over_its_time_limit_fails_its_step(tmp_path: Path) -> None:
    step = """
stuck:
  type: command
  command: echo started; sleep 60
  limits: {timeout: 2}
  retry_settings: {max_retries: 0}
"""
    r = run_pipeline(_pipeline(tmp_path, _steps(step)), tmp_path / "spool", timeout_s=60)
    assert r.returncode == 42, r.stdout + r.stderr
    assert "step stuck ended Failed" in r.result()
    assert "timeout" in (r.step_job("stuck") / "logs" / "job_result.txt").read_text().lower()
    log = (r.step_job("stuck") / "logs" / "user" / "std_log.txt").read_text()
    assert "started" in log


def test_a_parquet_table_made_by_a_command_step_feeds_a_parallel_step(tmp_path: Path) -> None:
    """input_format: parquet and partition_keys over a table a command step wrote."""
    steps = """
make:
  type: command
  command: >-
    python -c "import pandas as pd;
    pd.DataFrame({'k': list('aabbc'), 'v': range(5)}).to_parquet('${{outputs.t}}/t.parquet')"
  outputs: {t: {type: uri_folder}}
count:
  type: parallel
  inputs: {t: {type: uri_folder, path: "${{parent.jobs.make.outputs.t}}"}}
  input_data: ${{inputs.t}}
  input_format: parquet
  partition_keys: [k]
  task:
    code: ./code
    entry_script: count.py
    append_row_to: ./outputs/counts.txt
"""
    path = _pipeline(tmp_path, _steps(steps))
    write_files(
        path.parent,
        {"code/count.py": "def run(df):\n    return [f'{df.k.iloc[0]} {len(df)}']\n"},
    )
    r = run_pipeline(path, tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    counts = (r.step_job("count") / "outputs" / "counts.txt").read_text().splitlines()
    assert counts == ["a 2", "b 2", "c 1"]


def test_a_parallel_steps_output_folder_exists_before_its_script_runs(tmp_path: Path) -> None:
    steps = """
list:
  type: parallel
  input_data: ./code
  outputs: {names: {type: uri_folder}, report: {type: uri_file}}
  task:
    code: ./code
    entry_script: names.py
    program_arguments: --out ${{outputs.names}}
"""
    path = _pipeline(tmp_path, _steps(steps))
    script = """
        import os, sys
        def run(mb):
            folder = sys.argv[sys.argv.index("--out") + 1]
            for p in mb:
                open(os.path.join(folder, os.path.basename(p) + ".seen"), "w").close()
            return mb
        """
    write_files(path.parent, {"code/names.py": script})
    r = run_pipeline(path, tmp_path / "spool")
    assert r.returncode == 0, r.stdout + r.stderr
    outputs = r.step_job("list") / "outputs"
    assert sorted(p.name for p in (outputs / "names").iterdir()) == ["names.py.seen"]
    assert not (outputs / "report").exists()  # a file output is the script's to write
