package jobs

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
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
	mungeKeyPath = "/etc/clusterdeck/munge.key.b64"
	rayVersion   = "2.9.3"
	kubeVersion  = "v1.30"
)

// checkCommands are the software's own checks (S2), run on node-0.
var checkCommands = map[string]string{
	"slurm":      `sinfo -N -h -o "%N %T"`,
	"kubernetes": "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o json",
	"ray":        "ray status",
}

// installTask is node rank's install: the contract files, the software's
// files, and a script for the node's role. join is Kubernetes workers'
// join command (from node-0).
func installTask(spec nodespec.Cluster, c models.Cluster, rank int, join string) models.NewSoftwareTask {
	files := contractFiles(spec, rank)
	var script strings.Builder
	script.WriteString(contractScript(spec, rank))
	switch c.Software {
	case nodespec.SoftwareSlurm:
		files["/etc/slurm/slurm.conf"] = spec.SlurmConf()
		files["/etc/slurm/gres.conf"] = spec.GresConf()
		files[mungeKeyPath] = base64.StdEncoding.EncodeToString(models.MungeKey(c))
		script.WriteString(slurmScript(rank == 0))
	case nodespec.SoftwareKubernetes:
		script.WriteString(kubeScript(spec, c, rank, join))
	case nodespec.SoftwareRay:
		script.WriteString(rayScript(spec, rank))
	}
	return models.NewSoftwareTask{Kind: models.TaskInstall, Rank: rank, Seq: 1, Role: spec.Role(rank),
		Payload: models.TaskPayload{Files: files, Env: envMap(spec, rank), Script: script.String()}}
}

// checkTask is the software's own check on node-0, the seq-th of its attempt.
func checkTask(spec nodespec.Cluster, c models.Cluster, seq int) models.NewSoftwareTask {
	return models.NewSoftwareTask{Kind: models.TaskCheck, Rank: 0, Seq: seq, Role: spec.Role(0),
		Payload: models.TaskPayload{Env: envMap(spec, 0), Script: checkCommands[c.Software] + "\n"}}
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
	w("hostnamectl set-hostname %s 2>/dev/null || hostname %s", self.Name, self.Name)
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

// slurmScript installs slurmctld on the controller and slurmd everywhere
// (node-0 runs jobs too), with the shared munge key.
func slurmScript(controller bool) string {
	pkgs, units := "munge slurm-client slurmd", "munge slurmd"
	if controller {
		pkgs, units = pkgs+" slurmctld", "munge slurmctld slurmd"
	}
	return "export DEBIAN_FRONTEND=noninteractive\n" +
		"apt-get update -q\n" +
		"apt-get install -y -q " + pkgs + "\n" +
		"install -d -m 700 -o munge -g munge /etc/munge\n" +
		"base64 -d " + mungeKeyPath + " > /etc/munge/munge.key\n" +
		"rm -f " + mungeKeyPath + "\n" +
		"chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key\n" +
		"install -d -o slurm -g slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm\n" +
		"systemctl enable " + units + "\n" +
		"systemctl restart " + units + "\n"
}

// kubeScript installs the control plane on node-0 (kubeadm init with the
// cluster's bootstrap token, untainted so its GPUs take pods, a CNI and
// NVIDIA's device plugin) and prints the workers' join command and the
// kubeconfig between markers; workers run the join command.
func kubeScript(spec nodespec.Cluster, c models.Cluster, rank int, join string) string {
	self := nodeOf(spec, rank)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("export DEBIAN_FRONTEND=noninteractive")
	w("modprobe br_netfilter && sysctl -q -w net.bridge.bridge-nf-call-iptables=1 net.ipv4.ip_forward=1")
	w("swapoff -a")
	w("install -d -m 755 /etc/apt/keyrings")
	w("curl -fsSL https://pkgs.k8s.io/core:/stable:/%s/deb/Release.key | gpg --batch --yes --dearmor -o /etc/apt/keyrings/kubernetes.gpg", kubeVersion)
	w("echo 'deb [signed-by=/etc/apt/keyrings/kubernetes.gpg] https://pkgs.k8s.io/core:/stable:/%s/deb/ /' > /etc/apt/sources.list.d/kubernetes.list", kubeVersion)
	w("apt-get update -q && apt-get install -y -q containerd kubelet kubeadm kubectl")
	w("nvidia-ctk runtime configure --runtime=containerd --set-as-default && systemctl restart containerd")
	if rank != 0 {
		w("[ -f /etc/kubernetes/kubelet.conf ] || %s --node-name %s", join, self.Name)
		return b.String()
	}
	sans := self.PrivateIP
	if self.PublicHost != "" {
		sans += "," + self.PublicHost
	}
	w("[ -f /etc/kubernetes/admin.conf ] || kubeadm init --token %s --token-ttl 0 --node-name %s \\", models.KubeBootstrapToken(c), self.Name)
	w("  --apiserver-advertise-address %s --apiserver-cert-extra-sans %s --pod-network-cidr 10.244.0.0/16", self.PrivateIP, sans)
	w("export KUBECONFIG=/etc/kubernetes/admin.conf")
	w("kubectl taint nodes %s node-role.kubernetes.io/control-plane:NoSchedule- 2>/dev/null || true", self.Name)
	w("kubectl apply -f https://github.com/flannel-io/flannel/releases/latest/download/kube-flannel.yml")
	w("kubectl apply -f https://raw.githubusercontent.com/NVIDIA/k8s-device-plugin/v0.15.0/deployments/static/nvidia-device-plugin.yml")
	w("hash=$(openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl rsa -pubin -outform der 2>/dev/null | sha256sum | cut -d' ' -f1)")
	w("echo '%s'", models.BlockBegin("JOIN COMMAND"))
	w("echo \"kubeadm join %s:6443 --token %s --discovery-token-ca-cert-hash sha256:$hash\"", self.PrivateIP, models.KubeBootstrapToken(c))
	w("echo '%s'", models.BlockEnd("JOIN COMMAND"))
	w("echo '%s'", models.BlockBegin("KUBECONFIG"))
	w("cat /etc/kubernetes/admin.conf")
	w("echo '%s'", models.BlockEnd("KUBECONFIG"))
	return b.String()
}

// rayScript starts the Ray head on node-0 and joins every other node to it
// with --address (nodespec.RayStart).
func rayScript(spec nodespec.Cluster, rank int) string {
	return "python3 -m pip install -q -U 'ray[default]==" + rayVersion + "'\n" +
		"ray stop --force >/dev/null 2>&1 || true\n" +
		spec.RayStart(rank) + "\n"
}
