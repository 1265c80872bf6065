"""Mount-type detection: parsing /proc/self/mountinfo and judging what holds a spool."""

from __future__ import annotations

import os

import pytest

from prsd.spool.fstype import Level, Mount, classify, mount_of, parse_mountinfo, spool_mount

SAMPLE = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
41 27 0:39 / /mnt/blob rw,nosuid,nodev,relatime - fuse.blobfuse2 blobfuse2 rw,user_id=0
42 27 0:40 / /mnt/my\\040share rw,relatime shared:7 master:1 - nfs4 srv:/export rw,vers=4.1,hard,proto=tcp
43 27 0:41 / /mnt/nfs3 rw,relatime - nfs srv:/x rw,vers=3,soft,proto=udp
44 27 0:42 / /mnt/smb rw - cifs //acct.file.core.windows.net/share rw,actimeo=30
45 27 0:43 / /mnt/blob/inner rw - ext4 /dev/sdb rw
garbage line without separator
"""


def _mounts() -> list[Mount]:
    return parse_mountinfo(SAMPLE)


def test_parse_fields_escapes_and_optional_fields() -> None:
    """Mount points are unescaped (\\040 = space) and optional fields before '-' are skipped."""
    mounts = _mounts()
    assert [m.fstype for m in mounts] == [
        "proc",
        "ext4",
        "fuse.blobfuse2",
        "nfs4",
        "nfs",
        "cifs",
        "ext4",
    ]
    share = mounts[3]
    assert share.mount_point == "/mnt/my share"
    assert share.source == "srv:/export"
    assert (
        share.option("vers") == "4.1"
        and share.option("hard") == ""
        and share.option("soft") is None
    )


@pytest.mark.parametrize(
    ("path", "fstype"),
    [
        ("/", "ext4"),
        ("/srv/spool", "ext4"),
        ("/mnt/blob", "fuse.blobfuse2"),
        ("/mnt/blob/spool/jobs", "fuse.blobfuse2"),
        ("/mnt/blobby", "ext4"),  # a prefix of a name is not a parent folder
        ("/mnt/blob/inner/spool", "ext4"),
        ("/mnt/my share/spool", "nfs4"),
    ],
)
def test_mount_of_longest_containing_mount_point(path: str, fstype: str) -> None:
    """The spool belongs to the deepest mount point that contains it."""
    m = mount_of(path, _mounts())
    assert m is not None and m.fstype == fstype


@pytest.mark.parametrize(
    "fstype",
    [
        "fuse.s3fs",
        "fuse.rclone",
        "fuse.blobfuse2",
        "blobfuse2",
        "fuse.gcsfuse",
        "fuse.goofys",
        "fuse.geesefs",
    ],
)
def test_blob_mounts_are_refused_with_the_reason(fstype: str) -> None:
    """Every object-store FUSE type fails and the message says why (copy-and-delete rename)."""
    verdict = classify(Mount("/mnt/x", fstype, "bucket", ()))
    assert verdict.level is Level.FAIL
    assert "copy-and-delete" in verdict.reason and fstype in verdict.reason


def test_nfs_options_are_judged() -> None:
    """hard/tcp NFSv4.1 is fine; soft over UDP warns; long attribute caches get a note."""
    good, bad, smb = _mounts()[3], _mounts()[4], _mounts()[5]
    assert classify(good).level is Level.OK
    verdict = classify(bad)
    assert verdict.level is Level.WARN
    assert "hard" in verdict.reason and "tcp" in verdict.reason
    assert any("NFSv3" in n for n in verdict.notes)
    smb_verdict = classify(smb)
    assert smb_verdict.level is Level.OK and any("actimeo=30" in n for n in smb_verdict.notes)


@pytest.mark.parametrize(
    ("fstype", "level"),
    [
        ("ext4", Level.OK),
        ("lustre", Level.OK),
        ("fuse.sshfs", Level.WARN),
        ("fuse.weird", Level.WARN),
        ("9p", Level.WARN),
    ],
)
def test_other_types(fstype: str, level: Level) -> None:
    """Local and cluster file systems pass; unknown FUSE and others warn."""
    assert classify(Mount("/m", fstype, "src", ())).level is level


def test_spool_mount_reads_this_process_mountinfo(tmp_path: os.PathLike[str]) -> None:
    """The real /proc/self/mountinfo names the file system of a real folder."""
    m = spool_mount(str(tmp_path))
    assert m is not None
    assert os.path.realpath(str(tmp_path)).startswith(m.mount_point.rstrip("/") + "/")
    assert spool_mount(str(tmp_path), mountinfo=str(tmp_path) + "/missing") is None
