package software

import (
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
)

// Kubernetes: kubeadm's control plane on node-0 (untainted: its GPUs take
// pods too), every other node joined with the command node-0 prints; ready
// when every node is Ready with its GPUs allocatable (S2). Not on
// containers, which cannot run a kubelet (S1).
var Kubernetes = Software{
	Name:  "kubernetes",
	Label: "Kubernetes",
	Help:  "Control plane on node-0, GPU scheduling, a kubeconfig to download.",
	Kinds: []string{nodespec.KindVM, nodespec.KindBareMetal},

	Window:       20 * time.Minute,
	Install:      kubeInstall,
	CheckCommand: "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o json",
	Judge: func(output string, c nodespec.Cluster) (readiness.Report, error) {
		return readiness.Check("kubernetes", output, nodeNames(c), c.GPUsPerNode)
	},
	HeadReports: true,
}

// Blocks node-0's Kubernetes install prints for the server.
const (
	KubeconfigBlock  = "KUBECONFIG"
	JoinCommandBlock = "JOIN COMMAND"
)

const kubeVersion = "v1.30"

// tokenAlphabet is the alphabet of kubeadm bootstrap tokens.
const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// KubeBootstrapToken is the cluster's kubeadm bootstrap token
// ("[a-z0-9]{6}.[a-z0-9]{16}"): node-0's kubeadm init is given it, so
// workers can join with it.
func KubeBootstrapToken(keys Keys) string {
	raw := keys("clusterdeck/kubeadm-bootstrap-token", 22)
	var b strings.Builder
	for i, x := range raw {
		if i == 6 {
			b.WriteByte('.')
		}
		b.WriteByte(tokenAlphabet[int(x)%len(tokenAlphabet)])
	}
	return b.String()
}

// kubeInstall installs the control plane on node-0 (kubeadm init with the
// cluster's bootstrap token, untainted so its GPUs take pods, a CNI and
// NVIDIA's device plugin) and prints the workers' join command and the
// kubeconfig between markers; workers run the join command.
func kubeInstall(in Input) Install {
	self := in.Self()
	token := KubeBootstrapToken(in.Keys)
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
	if in.Rank != 0 {
		w("[ -f /etc/kubernetes/kubelet.conf ] || %s --node-name %s", in.Join, self.Name)
		return Install{Files: map[string]string{}, Script: b.String()}
	}
	sans := self.PrivateIP
	if self.PublicHost != "" {
		sans += "," + self.PublicHost
	}
	w("[ -f /etc/kubernetes/admin.conf ] || kubeadm init --token %s --token-ttl 0 --node-name %s \\", token, self.Name)
	w("  --apiserver-advertise-address %s --apiserver-cert-extra-sans %s --pod-network-cidr 10.244.0.0/16", self.PrivateIP, sans)
	w("export KUBECONFIG=/etc/kubernetes/admin.conf")
	w("kubectl taint nodes %s node-role.kubernetes.io/control-plane:NoSchedule- 2>/dev/null || true", self.Name)
	w("kubectl apply -f https://github.com/flannel-io/flannel/releases/latest/download/kube-flannel.yml")
	w("kubectl apply -f https://raw.githubusercontent.com/NVIDIA/k8s-device-plugin/v0.15.0/deployments/static/nvidia-device-plugin.yml")
	w("hash=$(openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl rsa -pubin -outform der 2>/dev/null | sha256sum | cut -d' ' -f1)")
	w("echo '%s'", BlockBegin(JoinCommandBlock))
	w("echo \"kubeadm join %s:6443 --token %s --discovery-token-ca-cert-hash sha256:$hash\"", self.PrivateIP, token)
	w("echo '%s'", BlockEnd(JoinCommandBlock))
	w("echo '%s'", BlockBegin(KubeconfigBlock))
	w("cat /etc/kubernetes/admin.conf")
	w("echo '%s'", BlockEnd(KubeconfigBlock))
	return Install{Files: map[string]string{}, Script: b.String()}
}
