package jobs

import (
	"fmt"
	"maps"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/software"
)

// What every node gets (N2–N4) and what each software's install and check
// run (S1, S2), generated from the cluster's shape by nodespec. The files
// and env are the same on every node but for NODE_RANK (N3); scripts differ
// by role and carry the node's own name.

// Paths of the node contract.
const (
	envPath      = "/etc/clusterdeck/env"      // nodespec EnvBlock, sourced by every shell
	hostsPath    = "/etc/clusterdeck/hosts"    // merged into /etc/hosts
	hostfilePath = "/etc/clusterdeck/hostfile" // the hostfile, also at /shared/hostfile on vm and bare_metal
)

// installTask is node rank's install: the contract files and script, then
// what the cluster's software installs (models/software). join is what
// node-0 handed to the others (Kubernetes' join command).
func installTask(spec nodespec.Cluster, c models.Cluster, rank int, join string) models.NewSoftwareTask {
	files := contractFiles(spec, rank)
	script := contractScript(spec, rank)
	if sw := software.Lookup(c.Software); sw != nil {
		in := sw.Install(software.Input{Spec: spec, Rank: rank, Keys: models.SoftwareKeys(c), Join: join})
		maps.Copy(files, in.Files)
		script += in.Script
	}
	return models.NewSoftwareTask{Kind: models.TaskInstall, Rank: rank, Seq: 1, Role: spec.Role(rank),
		Payload: models.TaskPayload{Files: files, Env: envMap(spec, rank), Script: script}}
}

// checkTask is the software's own check on node-0, the seq-th of its attempt.
func checkTask(spec nodespec.Cluster, sw *software.Software, seq int) models.NewSoftwareTask {
	return models.NewSoftwareTask{Kind: models.TaskCheck, Rank: 0, Seq: seq, Role: spec.Role(0),
		Payload: models.TaskPayload{Env: envMap(spec, 0), Script: sw.CheckCommand + "\n"}}
}

func envMap(spec nodespec.Cluster, rank int) map[string]string {
	m := map[string]string{}
	for _, e := range spec.Env(rank) {
		m[e.Name] = e.Value
	}
	return m
}

// contractFiles are N2 and N4's files: the env block, the host names and
// the hostfile (also in /shared on vm and bare_metal, V4).
func contractFiles(spec nodespec.Cluster, rank int) map[string]string {
	var hosts strings.Builder
	hosts.WriteString("# BEGIN clusterdeck\n")
	for _, n := range spec.Nodes {
		fmt.Fprintf(&hosts, "%s %s\n", n.PrivateIP, n.Name)
	}
	hosts.WriteString("# END clusterdeck\n")
	files := map[string]string{
		envPath:      spec.EnvBlock(rank),
		hostsPath:    hosts.String(),
		hostfilePath: spec.Hostfile(),
	}
	if spec.HasSharedFolder() {
		files[nodespec.SharedHostfile] = spec.Hostfile()
	}
	return files
}

// contractScript installs the contract files: the env in every shell, the
// host names in /etc/hosts (replacing an earlier block), the node's own
// host name, and on containers the hostfile in the SSH user's home.
func contractScript(spec nodespec.Cluster, rank int) string {
	self := nodeOf(spec, rank)
	user := self.SSHUser
	if user == "" {
		user = nodespec.DefaultSSHUser
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("set -eu")
	w("chmod 644 %s %s %s", envPath, hostsPath, hostfilePath)
	w("ln -sf %s /etc/profile.d/clusterdeck.sh", envPath)
	w("grep -qxF '. %s' /etc/bash.bashrc || sed -i '1i . %s' /etc/bash.bashrc", envPath, envPath)
	w("sed -i '/^# BEGIN clusterdeck$/,/^# END clusterdeck$/d' /etc/hosts")
	w("cat %s >> /etc/hosts", hostsPath)
	// Containers usually may not rename themselves; that must not stop the
	// install (software names nodes without the host name, e.g. slurmd -N).
	w("hostnamectl set-hostname %s 2>/dev/null || hostname %s 2>/dev/null ||", self.Name, self.Name)
	w(`  echo "note: could not set the host name to %s (it stays $(hostname))"`, self.Name)
	if !spec.HasSharedFolder() {
		w("home=$(getent passwd %s | cut -d: -f6)", user)
		w(`[ -z "$home" ] || install -m 644 -o %s %s "$home/hostfile"`, user, hostfilePath)
	}
	return b.String()
}

func nodeOf(spec nodespec.Cluster, rank int) nodespec.Node {
	for _, n := range spec.Nodes {
		if n.Rank == rank {
			return n
		}
	}
	return nodespec.Node{Rank: rank, Name: nodespec.NodeName(rank)}
}
