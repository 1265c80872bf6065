"""Which file system holds the spool, and whether the claim protocol can trust it.

Invariant: a spool on a blob-store FUSE mount (s3fs, rclone, blobfuse2, gcsfuse,
goofys...) is refused by type. Their rename is a copy followed by a delete, and
deleting an object that is already gone succeeds, so two nodes can both "win" one
claim; measured with the FUSE rig: rclone on S3 double-claimed 1450 of 2000 tasks,
s3fs 299 of 300 ``O_EXCL`` creates (docs/deploy.md, FILESYSTEMS.md section 6). A
single machine cannot see the problem (the kernel serialises renames inside one
mount), which is why the type alone decides.

The mount is found in ``/proc/self/mountinfo`` (longest mount point that contains the
spool, symlinks resolved). Parsing and classifying are pure functions.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import IntEnum

MOUNTINFO = "/proc/self/mountinfo"


class Level(IntEnum):
    """How much a finding matters; the worst one decides."""

    OK = 0
    WARN = 1
    FAIL = 2


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``."""

    mount_point: str
    fstype: str
    source: str
    options: tuple[str, ...]  # per-mount and per-superblock options together

    def option(self, name: str) -> str | None:
        """The value of ``name=value`` ("" for a bare flag), None when absent."""
        for opt in self.options:
            key, _, value = opt.partition("=")
            if key == name:
                return value
        return None


@dataclass(frozen=True)
class Verdict:
    """What the mount type means for a spool."""

    level: Level
    reason: str
    notes: tuple[str, ...] = ()


REFUSED = {
    "fuse.s3fs": "s3fs (S3 bucket)",
    "fuse.rclone": "rclone",
    "fuse.blobfuse2": "blobfuse2 (Azure Blob container)",
    "blobfuse2": "blobfuse2 (Azure Blob container)",
    "fuse.blobfuse": "blobfuse (Azure Blob container)",
    "fuse.gcsfuse": "gcsfuse (Google Cloud Storage bucket)",
    "fuse.goofys": "goofys (S3 bucket)",
    "fuse.mountpoint-s3": "mountpoint-s3 (S3 bucket)",
    "fuse.geesefs": "geesefs (S3 bucket)",
    "fuse.s3backer": "s3backer",
    "fuse.juicefs-s3": "JuiceFS gateway",
}
SHARED_OK = {"nfs", "nfs4", "cifs", "smb3", "lustre", "beegfs", "gpfs", "ceph", "fuse.ceph"}
LOCAL = {"ext4", "ext3", "xfs", "btrfs", "zfs", "f2fs", "tmpfs", "overlay"}
_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as ``\\040`` etc."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    """Every mount in a ``/proc/<pid>/mountinfo`` text, in file order (malformed lines skipped)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3:
            continue
        options = fields[5].split(",") + fields[sep + 3].split(",")
        mounts.append(
            Mount(
                mount_point=_unescape(fields[4]),
                fstype=fields[sep + 1],
                source=_unescape(fields[sep + 2]),
                options=tuple(o for o in options if o),
            )
        )
    return mounts


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding absolute, resolved ``path``: the longest containing mount point.

    A later line wins a tie (a mount stacked over an earlier one at the same point).
    """
    best: Mount | None = None
    for m in mounts:
        point = m.mount_point.rstrip("/") or "/"
        inside = point == "/" or path == point or path.startswith(point + "/")
        if inside and (best is None or len(point) >= len(best.mount_point.rstrip("/") or "/")):
            best = m
    return best


def classify(mount: Mount) -> Verdict:
    """Whether a spool may live on ``mount``: refused blob mounts, warnings, notes."""
    fstype = mount.fstype
    if fstype in REFUSED:
        return Verdict(
            Level.FAIL,
            f"{mount.mount_point} is an object-store mount: {REFUSED[fstype]} ({fstype}): its rename is "
            "copy-and-delete and O_EXCL is not exclusive, so two nodes can claim one task; "
            "put the spool on NFS, Azure Files (NFS or SMB) or a cluster file system",
        )
    if fstype in ("nfs", "nfs4"):
        return _nfs(mount)
    if fstype in ("cifs", "smb3"):
        return _smb(mount)
    if fstype in SHARED_OK:
        return Verdict(Level.OK, f"{fstype}: shared file system with atomic server-side rename")
    if fstype in LOCAL:
        return Verdict(Level.OK, f"{fstype}: local file system (one machine only)")
    if fstype == "fuse.sshfs":
        return Verdict(
            Level.WARN,
            "sshfs: listings are cached 20 s and mtimes have 1 s resolution; "
            "run `prsd doctor --peer-mount` from a second machine",
        )
    if fstype.startswith("fuse"):
        return Verdict(
            Level.WARN,
            f"{fstype}: an unknown FUSE file system; run `prsd doctor` with --peer-mount "
            "from a second machine before trusting it",
        )
    return Verdict(Level.WARN, f"{fstype}: a file system prsd has not been checked on")


def _nfs(mount: Mount) -> Verdict:
    warnings = []
    notes = []
    if mount.option("soft") is not None or mount.option("softerr") is not None:
        warnings.append("'soft' can fail a rename the server still performs: mount with 'hard'")
    if (mount.option("proto") or "").startswith("udp"):
        warnings.append("NFS over UDP retransmits renames: use proto=tcp")
    if mount.option("nocto") is not None:
        warnings.append("'nocto' turns off close-to-open consistency: results may be read stale")
    if (mount.option("vers") or "").startswith("3"):
        notes.append("NFSv3 relies on the server's reply cache; NFSv4.1 (sessions) is safer")
    if (mount.option("lookupcache") or "all") == "all":
        notes.append("lookupcache=positive makes other nodes' new files visible sooner")
    actimeo = mount.option("actimeo") or mount.option("acdirmax")
    if actimeo and actimeo.isdigit() and int(actimeo) > 3:
        notes.append(f"attribute cache of {actimeo} s delays new tasks by that much; 1-3 s is best")
    if warnings:
        return Verdict(Level.WARN, f"{mount.fstype}: " + "; ".join(warnings), tuple(notes))
    return Verdict(Level.OK, f"{mount.fstype}: atomic server-side rename", tuple(notes))


def _smb(mount: Mount) -> Verdict:
    notes = []
    actimeo = mount.option("actimeo")
    if actimeo and actimeo.isdigit() and int(actimeo) > 3:
        notes.append(f"actimeo={actimeo}: new tasks and heartbeats may be seen that late; use 1-3")
    return Verdict(Level.OK, f"{mount.fstype}: atomic server-side rename", tuple(notes))


def spool_mount(path: str, mountinfo: str = MOUNTINFO) -> Mount | None:
    """The mount holding ``path`` (symlinks resolved), read from ``mountinfo``.

    Returns None when the file cannot be read (not Linux).
    """
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return None
    return mount_of(os.path.realpath(path), parse_mountinfo(text))


LOCAL_FSTYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "tmpfs", "overlay"})


def is_local_spool(path: os.PathLike[str] | str) -> bool:
    """True when the spool is on a local disk file system (no other client's caches)."""
    mount = spool_mount(os.fspath(path))
    return mount is not None and mount.fstype in LOCAL_FSTYPES
