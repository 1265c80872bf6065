"""Tasks for the workers of one job on this node: claimed from the spool, or local.

Local tasks come first: the unfinished rest of a task whose worker died, and claims
this node already holds (found at start-up in ``claimed/<node>/``: an earlier
incarnation's work, or a claim whose rename reported an error but happened). Then
the feed claims from ``pending/``, trying the names of one listing in turn (a stale
listing only costs lost races) and listing again when they are used up. On a network
mount a listing may be stale (the mount's cache): a name this node tried is skipped
for :data:`TRIED_FOR_S`, and a listing used up without a claim is followed by the
names of the leader's hint (``tasks/pending.names``, prsd.spool.pendinghint), read
from the server, each tried once (a claimed name never comes back to ``pending/``).
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from prsd.agent.nodelog import append_line
from prsd.agent.task import RunningTask
from prsd.errors import PrsdError, SpoolError
from prsd.spool.atomic import move_verified
from prsd.spool.claim import (
    Claim,
    claim_order,
    list_pending,
    own_claims,
    prepare_node,
    try_claim,
)
from prsd.spool.fstype import is_local_spool
from prsd.spool.lease import current_epoch
from prsd.spool.pendinghint import read_hint
from prsd.tunables import hand_ahead_when_listed
from prsd.wire.fields import RecordError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from prsd.agent.context import JobContext
    from prsd.spool.watch import Doorbell

    Offload = Callable[[Callable[[], RunningTask | None]], Awaitable[RunningTask | None]]

LISTING_SIZE = 64
AHEAD_WHEN_LISTED = 2
"""A task is claimed ahead of the workers (:meth:`TaskFeed.claim_ahead`) only while the
feed's last listing still holds this many untried names: near the job's end, when few
tasks are pending, a task held here behind a busy worker would wait while another
node's worker idles."""
POLL_S = 0.5
TRIED_MEMORY = 4096
TRIED_FOR_S = 60.0
"""On a network mount a name this node tried to claim is not tried again for this long
(a listing cached by the mount would otherwise cost one failed rename per stale name
per poll; NFS caches a folder's attributes up to 60 s by default). A name that failed
for another reason than being taken (an I/O error) is tried again after it."""


class TaskFeed:
    """Hands tasks to the job's workers on this node."""

    def __init__(
        self,
        ctx: JobContext,
        bell: Doorbell,
        *,
        poll_s: float = POLL_S,
        use_hint: bool | None = None,
    ) -> None:
        self.ctx = ctx
        # A local disk's listings are fresh: the hint would only cost lost races there.
        local = is_local_spool(ctx.layout.root)
        self.use_hint = not local if use_hint is None else use_hint
        # Claims ahead on a local disk only: measured there (bench/README.md, round 4m);
        # on a network mount a listing is stale and every lost race a round trip.
        self.claims_ahead = local
        self.bell = bell
        self.poll_s = poll_s
        self.local: deque[RunningTask] = deque()
        self.ahead: deque[RunningTask] = deque()  # claimed before a worker asked (at most one)
        self._candidates: deque[Path] = deque()
        self._tried: OrderedDict[str, float] = OrderedDict()  # name -> when, oldest first
        self._lock = anyio.Lock()
        # Where a claim ahead runs: a thread of its own, or the job's file writer
        # (prsd.agent.writer), one hop with the ending task's writes.
        self.offload: Offload = anyio.to_thread.run_sync
        # Makes a claimed task's result file for the job's owner in the claim's thread
        # (a worker's session sets it when the job runs as its owner); a failure here is
        # left for the session, which makes the file again before the task runs.
        self.prepare: Callable[[RunningTask], None] | None = None
        self.closed = False
        self.claimed = 0
        self.listed = 0  # names in the last listing of pending/
        # A task held ahead goes to a busy worker, behind its running one
        # (prsd.agent.ahead.claim_ahead), only while the last listing named
        # this many: near the job's end a task queued behind one worker would wait
        # while another worker (of this node or another) idles.
        self.hand_ahead_when = hand_ahead_when_listed()

    def close(self) -> None:
        """No more claims (job over, drain, or this node gave up on the job)."""
        self.closed = True
        self.bell.ring()

    def put_front(self, task: RunningTask) -> None:
        self.local.appendleft(task)
        self.bell.ring()

    async def get(self) -> RunningTask | None:
        """The next task for a free worker, or None once the feed is closed and empty."""
        while True:
            if self.local:
                return self.local.popleft()
            if self.closed:
                return None  # a task claimed ahead is handed back (JobRun)
            if self.ahead:
                return self.ahead.popleft()
            async with self._lock:
                if self.local or self.ahead or self.closed:
                    continue
                task = await anyio.to_thread.run_sync(self._claim_next)
            if task is not None:
                return task
            await self.bell.wait(self.poll_s)

    async def claim_ahead(self) -> None:
        """Claim the next task while the workers are busy, so the first to finish starts
        it at once (a claim in the worker's gap costs a thread hop, a rename and a read:
        5-15 ms on a busy machine). At most one task is held ahead, and only while the
        last listing still names :data:`AHEAD_WHEN_LISTED` tasks; none after the feed
        closed, and none on a network mount. No listing is made for it: the names left
        from the last one are tried."""
        if not self.claims_ahead or self.ahead or self.local or self.closed:
            return
        if len(self._candidates) < AHEAD_WHEN_LISTED:
            return
        try:
            self._lock.acquire_nowait()  # no turn of the loop: the claim joins the writes' hop
        except anyio.WouldBlock:
            return
        try:
            task = await self.offload(self._try_candidates)
        finally:
            self._lock.release()
        if task is not None:
            self.ahead.append(task)

    def hands_ahead(self) -> bool:
        """May the task held ahead go to a busy worker (``hand_ahead_when``)?"""
        return bool(self.ahead) and not self.closed and self.listed >= self.hand_ahead_when

    def adopt_own_claims(self) -> int:
        """Queue the claims this node already holds for the job (start-up reconciliation)."""
        layout, node = self.ctx.layout, self.ctx.node_id
        prepare_node(layout, node)
        count = 0
        for task in own_claims(layout, node):
            path = layout.claimed_task(node, task)
            try:
                claim = Claim(task, path, path.read_bytes())
            except FileNotFoundError:
                continue
            running = self._decode(claim)
            if running is not None:
                self.local.append(running)
                count += 1
        return count

    def _claim_next(self) -> RunningTask | None:
        listed = not self._candidates
        if listed:
            self._list()
        task = self._try_candidates()
        if task is None and not listed:
            # The names left from an earlier listing were all taken meanwhile: the
            # tasks written since (the ring that woke this call) are in a new listing.
            self._list()
            task = self._try_candidates()
        if task is None and self.use_hint:
            # The listing is used up without a claim. On a network mount it may be
            # stale (sshfs lists from a 20 s cache, NFS until the folder's attributes
            # expire): the leader's hint names what it wrote since.
            self._candidates.extend(self._hinted())
            task = self._try_candidates()
        return task

    def _list(self) -> None:
        """Queue the names ``pending/`` lists now, in this node's claim order (``claim_order``)."""
        listing = list_pending(self.ctx.layout, LISTING_SIZE)
        self.listed = len(listing)
        if self.use_hint:  # a mount's cached listing: skip the names already tried
            self._forget_old()
            listing = [p for p in listing if p.name not in self._tried]
        self._candidates.extend(claim_order(self.ctx.node_id, listing))

    def _hinted(self) -> list[Path]:
        """The hint's names this node has not tried, as ``pending/`` paths."""
        layout = self.ctx.layout
        epoch = current_epoch(layout.spool)
        self._forget_old()
        fresh = [
            layout.pending_task(t) for t in read_hint(layout, epoch) if t.name not in self._tried
        ]
        return claim_order(self.ctx.node_id, fresh)

    def _remember(self, name: str) -> None:
        """A name this node tried to claim (listed or hinted)."""
        self._tried[name] = time.monotonic()
        self._tried.move_to_end(name)
        while len(self._tried) > TRIED_MEMORY:
            self._tried.popitem(last=False)

    def _forget_old(self) -> None:
        horizon = time.monotonic() - TRIED_FOR_S
        while self._tried and next(iter(self._tried.values())) < horizon:
            self._tried.popitem(last=False)

    def _try_candidates(self) -> RunningTask | None:
        layout, node = self.ctx.layout, self.ctx.node_id
        while self._candidates:
            path = self._candidates.popleft()
            self._remember(path.name)
            claim = try_claim(layout, node, path)
            if claim is None:
                continue
            self.claimed += 1
            running = self._decode(claim)
            if running is not None:
                if self.prepare is not None:
                    with contextlib.suppress(PrsdError, OSError):
                        self.prepare(running)
                return running
        return None

    def _decode(self, claim: Claim) -> RunningTask | None:
        layout, node = self.ctx.layout, self.ctx.node_id
        try:
            return RunningTask.from_claim(layout, node, claim)
        except (SpoolError, RecordError) as exc:
            void = layout.void / f"{claim.task.name}.{node}"
            move_verified(claim.path, void)
            append_line(
                layout.log_tree.agent_error(node),
                f"task file {claim.task.name} is unreadable ({exc}); moved to {void}",
                layout.root,
            )
            return None
