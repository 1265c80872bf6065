"""The spool: every path, record and file operation the daemons and clients share.

Nothing in this package imports from ``prsd.leader``, ``prsd.agent`` or ``prsd.cli``.
Every name in the spool is spelled in ``layout.py`` (``SpoolLayout``, ``JobLayout``)
and ``pipelinelayout.py`` (``PipelineLayout``); no module outside this package joins a
spool segment by hand (tests/unit/test_spool_paths.py), lists a spool folder, decodes
a spool file or reads or writes one raw (tests/unit/test_spool_access.py): each file
below is read and written through the module named for it, ``prsd/spool/listing.py``
lists folders for everyone, ``prsd/spool/jsonobject.py`` decodes JSON that is no spool
record (a frame, a command's output line, a settings file).

Where each file is written and read (the layout's name for it; its record, the module
here that owns the file; who writes it and who reads it). This index is checked by
tests/unit/test_spool_index.py: every name of the three layouts is in it and every
module it names exists.

Spool-wide (``SpoolLayout``):

- ``inbox``, ``queued``: submitted job folders, the owner's until taken in;
  ``prsd/submit.py`` and the pipeline desk (``prsd/pipeline/desk.py``) write them, the
  leader's intake (``prsd/leader/intake/intake.py``) moves them to ``jobs/``.
- ``jobs``, ``job``: one folder per job (``JobLayout``, below); ``refused``: inbox
  folders the leader refused, moved aside whole (``prsd/spool/inboxrecords.py``).
- ``active``, ``active_marker``: an empty marker per running job, written and removed by
  the leader (``prsd/leader/leader.py``, ``prsd/spool/jobfolder.py``), listed by
  ``prsd/spool/opening.py``.
- ``nodes``, ``node_heartbeat``: one heartbeat per agent (``prsd/spool/heartbeat.py``,
  record ``prsd/spool/heartbeatrecord.py``); the agent writes, the leader and ``prsctl nodes``
  read.
- ``leader``: the lease and epoch files (``prsd/spool/lease.py``, ``prsd/spool/claim.py``);
  ``nodes_view``: ``leader/nodes.json`` (``prsd/spool/nodesview.py``), written by the
  leader, read by ``prsd/read/nodes.py``; ``inbox_seen``: ``leader/inbox_seen.json``
  (``prsd/spool/inboxrecords.py``), the leader's inbox sweep.
- ``requests``: users' requests (cancel, gc, remove) (``prsd/spool/requests.py``),
  written by ``prsctl``, read by the leader's request desk.
- ``pipelines``, ``pipeline``: one folder per pipeline (``PipelineLayout``, below).

One job (``JobLayout``, ``jobs/<id>/``):

- ``job_yaml``, ``code``: the owner's job file and code snapshot as submitted
  (``job.yaml`` written into the staging folder by ``prsd/spool/jobyaml.py``), read on
  the owner's side (``prsd/jobspec/load.py``); the snapshot's digest is
  ``prsd/spool/codedigest.py``.
- ``origin``: ``origin.json`` (``prsd/spool/originrecord.py``, ``write_origin``),
  written by ``prsd/submit.py`` and ``prsd/pipesubmit.py``, read at intake and by a
  retry.
- ``owner_record``: ``owner.json`` (``prsd/spool/jobowner.py``), written at intake, read by
  the one owner policy (``owner()``) and ``prsd/spool/askers.py``.
- ``spec``: ``spec.json``, the loaded job spec (``prsd/jobspec``), written at intake,
  read (``prsd/spool/specfile.py``) by every leader that drives the job, by an agent
  taking it on and by ``prsctl retry``.
- ``state``, ``status``: ``state/status.json`` and ``status.private.json``
  (``prsd/spool/statusrecord.py``, ``prsd/spool/statusschema.py``,
  ``prsd/spool/privaterecords.py``), written by the leader
  (``prsd/leader/run/status.py``), read by clients through ``prsd/spool/statusfiles.py``
  and ``prsd/read/jobs.py``.
- ``final``: ``state/final.json`` (``prsd/spool/endrecords.py``, ``prsd/spool/finalrecord.py``),
  written last by ``JobFolder.end`` (``prsd/spool/jobfolder.py``), read through
  ``prsd/spool/statusfiles.py`` (the clients' documents),
  ``prsd/spool/privaterecords.py`` (the daemons' trusted read) and
  ``read_final_state`` of ``prsd/spool/finalrecord.py`` (the decoded public record).
- ``cancel``: ``state/cancel``, a mark the job's driver acts on (written at intake for a
  queued cancel, by the pipeline desk for a canceled pipeline's steps).
- ``started``: ``state/started.json`` (``prsd/spool/startedrecord.py``), written once at
  intake and read by a resumed driver (``prsd/leader/run/jobclock.py``).
- ``issue_log``: ``state/issued.e<epoch>.log``, the task names a leader created
  (``prsd/spool/issuelog.py``), read at a take-over (``prsd/leader/takeover/issued.py``).
- ``retry_plan``, ``retry_kept``, ``retry_order``: a retry's files
  (``prsd/spool/retryrecords.py``, ``read_kept_text`` for the keep file's text), written
  by ``prsctl retry``
  (``prsd/retryplan/retryfiles.py``) and the leader (``prsd/leader/rerun/retryjob.py``).
- ``node_reports``, ``node_report``: ``nodes/<node>.json``, one node's workers for this
  job (``prsd/spool/nodereport.py``, with ``prsd/spool/initrecords.py`` and
  ``prsd/spool/envrecord.py``), written by the agent, read by the leader
  (``prsd/leader/run/nodereports.py``).
- ``tasks``, ``pending``, ``claimed``, ``done``, ``returned``, ``void`` and
  ``pending_task``, ``claimed_dir``, ``claimed_task``, ``done_task``, ``returned_task``:
  the task files (records in ``prsd/spool/taskrecords.py``); claim, commit and give back are
  ``prsd/spool/claim.py``; writing, listing, requeueing and reading them back are
  ``prsd/spool/jobfolder.py`` (``prsd/spool/memfolder.py`` in memory); seats of a node,
  ``prsd/spool/seats.py``.
- ``results``, ``result``: one result file per committed task (its payload, then the
  metadata record of ``prsd/spool/taskrecords.py``), written by the agent
  (``prsd/agent/task.py``), read by descriptor only (``prsd/spool/resultfiles.py``)
  through ``JobFolder.read_result``.
- ``partitions/groups.json`` and ``partitions/groups/``: a table grouped by
  ``partition_keys`` (``prsd/spool/groupsrecord.py``), written by the owner's planner
  (``prsd/inputsplit/tabular/groups.py``), read back by a restarted leader's planner.
- ``outputs``: the owner's output folder, written only with the owner's ids
  (``prsd/asowner``).
- ``logs``, ``log_tree``: the Azure-style log tree, every path named in
  ``prsd/wire/logtree.py``.
- ``work``, ``worker_dir``: each worker's working folder on a node
  (``prsd/agent/context.py``).

One pipeline (``PipelineLayout``, ``pipelines/<id>/``, ``prsd/spool/pipelinefolder.py``):
``record`` (``pipeline.json``, ``prsd/spool/pipelinerecord.py``, written by
``prsd/pipesubmit.py``), ``state`` (``state.json``, ``prsd/spool/pipelinestate.py``) and
``final`` (``final.json``), written by the leader's pipeline desk, read by
``prsd/read/pipelines.py``; ``steps``, ``step``: step job folders waiting their turn;
``cancel``: the submitter's cancel mark; ``log_tree``: the pipeline's
``job_result.txt``.
"""
