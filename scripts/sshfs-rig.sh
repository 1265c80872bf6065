#!/usr/bin/env bash
# Several "machines" sharing one spool on one machine: K sshfs mounts of one folder,
# each a client with its own caches (FUSE attribute/entry caches 1 s, sshfs directory
# cache 20 s), like the VMs of a cluster mounting NFS. Used by tests/fsrig (the spool
# protocol on separate mounts). Needs root and /dev/fuse. Idempotent.
#
#   K=8 RIG=/tmp/fsrig MNT=/mnt/fsrig bash scripts/sshfs-rig.sh
set -euo pipefail
K=${K:-8}
RIG=${RIG:-/tmp/fsrig}
MNT=${MNT:-/mnt/fsrig}
EXPORT=$RIG/export

[ "$(id -u)" = 0 ] || { echo "sshfs-rig: run as root" >&2; exit 1; }
[ -c /dev/fuse ] || { echo "sshfs-rig: /dev/fuse missing" >&2; exit 1; }
if ! command -v sshfs >/dev/null || ! [ -x /usr/sbin/sshd ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends openssh-server openssh-client sshfs fuse3 >/dev/null
fi
mkdir -p "$RIG/sshd" "$EXPORT" "$MNT" /run/sshd
[ -f "$RIG/sshd/hostkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$RIG/sshd/hostkey"
[ -f "$RIG/sshd/clientkey" ] || ssh-keygen -q -t ed25519 -N '' -f "$RIG/sshd/clientkey"
cp "$RIG/sshd/clientkey.pub" "$RIG/sshd/authorized_keys"
chmod 600 "$RIG/sshd/authorized_keys"
cat > "$RIG/sshd/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port 2222
HostKey $RIG/sshd/hostkey
PidFile $RIG/sshd/sshd.pid
AuthorizedKeysFile $RIG/sshd/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
MaxStartups 64:30:128
MaxSessions 64
CONF
if ! { [ -f "$RIG/sshd/sshd.pid" ] && kill -0 "$(cat "$RIG/sshd/sshd.pid")" 2>/dev/null; }; then
  /usr/sbin/sshd -f "$RIG/sshd/sshd_config" -E "$RIG/sshd/sshd.log"
fi
OPTS="IdentityFile=$RIG/sshd/clientkey,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes"
for i in $(seq 0 $((K-1))); do
  # a mount whose sshfs died ("Transport endpoint is not connected") is dropped first
  if ! stat "$MNT/sshfs$i" >/dev/null 2>&1; then
    fusermount3 -uz "$MNT/sshfs$i" 2>/dev/null || umount -l "$MNT/sshfs$i" 2>/dev/null || true
  fi
  mkdir -p "$MNT/sshfs$i"
  mountpoint -q "$MNT/sshfs$i" && continue
  sshfs -p 2222 -o "$OPTS" "root@127.0.0.1:$EXPORT" "$MNT/sshfs$i"
done
echo "sshfs-rig: $K mounts of $EXPORT under $MNT"
