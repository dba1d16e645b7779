package agent

import (
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// Paths of V4 on the machines.
const (
	sharedDir    = "/shared"
	volumeDevice = "/dev/disk/by-label/clusterdeck-volume" // the provider attaches the volume with this label
	volumeMount  = "/mnt/clusterdeck-volume"
	syncScript   = "/usr/local/sbin/clusterdeck-volume-sync"
)

// MountsScript is V4 on node rank, run as root before the workload starts
// (idempotent, so a second boot runs it again safely):
//
//   - vm and bare_metal: node-0 exports /shared to the other nodes' private
//     addresses over NFS and writes the hostfile into it; every other node
//     mounts it from node-0 (retrying while node-0 is still exporting);
//     node-0 mounts the volume, copies it into /shared/volume, and copies
//     /shared/volume back every minute and when the machine shuts down;
//   - container: no shared folder; node-0 mounts the volume at its path.
func MountsScript(rank int, m agentapi.Mounts) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("set -eu")
	head := rank == 0
	if m.Shared && head {
		w("command -v exportfs >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nfs-kernel-server rsync)")
		w("mkdir -p %s", sharedDir)
		w("touch /etc/exports") // exportfs without the package's file: sed -i needs one
		w("sed -i '\\#^%s #d' /etc/exports", sharedDir)
		var clients []string
		for _, c := range m.Clients {
			clients = append(clients, c+"(rw,sync,no_subtree_check,no_root_squash)")
		}
		if len(clients) > 0 {
			w("echo %s >> /etc/exports", shellQuote(sharedDir+" "+strings.Join(clients, " ")))
		}
		w("systemctl enable --now nfs-server >/dev/null 2>&1 || service nfs-kernel-server start")
		w("exportfs -rav")
		w("cat > %s <<'CLUSTERDECK_EOF'\n%sCLUSTERDECK_EOF", sharedDir+"/hostfile", m.Hostfile)
		w("chmod 644 %s/hostfile", sharedDir)
	}
	if m.Shared && !head {
		w("command -v mount.nfs >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nfs-common)")
		w("mkdir -p %s", sharedDir)
		w("sed -i '\\# %s nfs #d' /etc/fstab", sharedDir)
		w("echo %s >> /etc/fstab", shellQuote(m.Head+":"+sharedDir+" "+sharedDir+" nfs defaults,_netdev 0 0"))
		w("for i in $(seq 1 60); do mountpoint -q %s && break; mount %s && break; sleep 5; done", sharedDir, sharedDir)
		w("mountpoint -q %s", sharedDir)
		w("grep %s /proc/mounts", shellQuote(" "+sharedDir+" "))
	}
	if v := m.Volume; v != nil && head {
		mnt := volumeMount
		if !m.Shared {
			mnt = v.Path // a container shows the volume itself, on the head only
		}
		w("# volume %s (%s, %d GB)", v.Name, v.ID, v.SizeGB)
		w("mkdir -p %s", shellQuote(mnt))
		w("mountpoint -q %s || mount %s %s", shellQuote(mnt), volumeDevice, shellQuote(mnt))
		if m.Shared {
			w("mkdir -p %s", shellQuote(v.Path))
			w("rsync -a %s/ %s/", mnt, shellQuote(v.Path))
			w("cat > %s <<'CLUSTERDECK_EOF'\n#!/bin/sh\nexec flock -n /run/clusterdeck-volume.lock rsync -a --delete %s/ %s/\nCLUSTERDECK_EOF", syncScript, v.Path, mnt)
			w("chmod 755 %s", syncScript)
			w("echo '* * * * * root %s' > /etc/cron.d/clusterdeck-volume", syncScript)
			w("cat > /etc/systemd/system/clusterdeck-volume-sync.service <<'CLUSTERDECK_EOF'\n[Unit]\nDescription=Copy /shared/volume back to the volume at shutdown\nAfter=nfs-server.service\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\nExecStop=%s\n[Install]\nWantedBy=multi-user.target\nCLUSTERDECK_EOF", syncScript)
			w("systemctl daemon-reload >/dev/null 2>&1 && systemctl enable --now clusterdeck-volume-sync >/dev/null 2>&1 || true")
		}
		w("df -h %s | tail -n 1", shellQuote(mnt))
	}
	return b.String()
}
