package sim

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
)

// Software the simulated machines can install and check (S1).
const (
	Slurm      = "slurm"
	Kubernetes = "kubernetes"
	Ray        = "ray"
)

var softwares = []string{Slurm, Kubernetes, Ray}

// executor is one machine's providers.Executor. It ignores the scripts it
// is given and plays the output the real tools would print.
type executor struct {
	c     *Cloud
	group string
	id    string // machine id
	n     *node  // the machine as of the open operation
}

// errNoMachine is enter's error for a machine the cloud no longer has.
var errNoMachine = errors.New("no longer exists")

// enter opens an operation on the cloud and finds this machine in it.
// Every enter is followed by c.close.
func (e *executor) enter(ctx context.Context) error {
	if err := e.c.open(ctx); err != nil {
		return err
	}
	e.n = nil
	if g, ok := e.c.groups[e.group]; ok {
		if i := slices.IndexFunc(g.nodes, func(n *node) bool { return n.id == e.id }); i >= 0 {
			e.n = g.nodes[i]
		}
	}
	if e.n == nil {
		e.c.close(nil)
		return fmt.Errorf("sim: machine %s of group %s: %w", e.id, e.group, errNoMachine)
	}
	return nil
}

var _ providers.Executor = (*executor)(nil)

// Reach succeeds when addr (an IP, or IP:port) is the private address of a
// running machine of the same group, and this machine is running and not
// scripted peer_unreachable.
func (e *executor) Reach(ctx context.Context, addr string) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	c := e.c
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return err
	}
	if e.n.peerUnreachable {
		return fmt.Errorf("connect to %s: no route to host", addr)
	}
	for _, peer := range e.n.g.nodes {
		if peer.privateIP() == host && peer.running(now) {
			return nil
		}
	}
	return fmt.Errorf("connect to %s: connection timed out", addr)
}

// Run plays one step: "install:<software>" installs it on this machine,
// "check:<software>" prints the software's own status listing, "gpus"
// prints nvidia-smi's GPU query, "nccl:nccl-tests" the NCCL check's
// all-reduce. A failed
// step returns its output and an "exit status N" error.
func (e *executor) Run(ctx context.Context, step, script string) (_ string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	switch step {
	case GPUStep:
		return e.gpus(ctx)
	case GPUSampleStep:
		return e.gpuSample(ctx)
	case XIDStep:
		return e.xid(ctx)
	case NCCLStep:
		return e.nccl(ctx)
	case VerifyMachineStep, VerifyRingStep, VerifyPairStep:
		return e.verify(ctx, step, script)
	case PortsStep:
		return e.ports(ctx, script)
	case KeysStep:
		return e.keys(ctx, script)
	case MountsStep:
		return e.mounts(ctx, script)
	}
	kind, software, _ := strings.Cut(step, ":")
	if (kind != "install" && kind != "check") || !knownSoftware(software) {
		return "", fmt.Errorf("sim: unknown step %q (want gpus, gpu-sample, xid, nccl:nccl-tests, ports, ssh-keys, mounts, install:<software> or check:<software>, software slurm, kubernetes or ray)", step)
	}
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	now := c.now()
	if err := e.up(now); err != nil {
		return "", err
	}
	if kind == "install" {
		return e.install(software, now)
	}
	return e.check(software, now)
}

// gpus plays nvidia-smi's GPU query on this machine.
func (e *executor) gpus(ctx context.Context) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	if err := e.up(c.now()); err != nil {
		return "", err
	}
	return e.nvidiaSMI(), nil
}

// nccl plays the NCCL check's all-reduce, started on this machine.
func (e *executor) nccl(ctx context.Context) (_ string, err error) {
	c := e.c
	if err := e.enter(ctx); err != nil {
		return "", err
	}
	defer c.close(&err)
	if err := e.up(c.now()); err != nil {
		return "", err
	}
	return e.allReducePerf(), nil
}

// up fails when this machine is not running (its agent would not be either).
func (e *executor) up(now time.Time) error {
	if st, _ := e.n.state(now); st != providers.NodeRunning {
		return fmt.Errorf("sim: %s of group %s is %s, not running", e.n.name(), e.n.g.name, st)
	}
	return nil
}

func knownSoftware(s string) bool { return slices.Contains(softwares, s) }

// exitStatus is how a failed command reports, like *exec.ExitError.
func exitStatus(code int) error { return fmt.Errorf("exit status %d", code) }

// install installs software on this machine, or fails it when an
// install_fails fault hits. Callers hold c.mu.
func (e *executor) install(software string, now time.Time) (string, error) {
	n := e.n
	if e.c.takeInstallFault(n, software) {
		out, code := installFailure(software)
		return out, exitStatus(code)
	}
	if _, ok := n.installed[software]; !ok {
		n.installed[software] = now
	}
	out := installLog(software, n)
	if software == Kubernetes && n.index == 0 {
		out += e.adminConf()
	}
	return out, nil
}

// installLog is the tail of a successful install's output.
func installLog(software string, n *node) string {
	head := n.index == 0
	headIP := n.g.nodes[0].privateIP()
	var b strings.Builder
	switch software {
	case Slurm:
		pkgs := "munge slurm-client slurmd"
		if head {
			pkgs += " slurmctld"
		}
		fmt.Fprintf(&b, "Reading package lists...\nBuilding dependency tree...\nReading state information...\n")
		fmt.Fprintf(&b, "The following NEW packages will be installed:\n  %s\n", pkgs)
		for _, p := range strings.Fields(pkgs) {
			fmt.Fprintf(&b, "Setting up %s (%s) ...\n", p, slurmPkgVersion(p))
		}
		unit := "slurmd"
		if head {
			unit = "slurmctld"
		}
		fmt.Fprintf(&b, "Created symlink /etc/systemd/system/multi-user.target.wants/%s.service → /lib/systemd/system/%s.service.\n", unit, unit)
	case Kubernetes:
		if head {
			fmt.Fprintf(&b, "[init] Using Kubernetes version: %s\n[preflight] Running pre-flight checks\n", kubeVersion)
			fmt.Fprintf(&b, "[certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default node-0] and IPs [10.96.0.1 %s]\n", headIP)
			fmt.Fprintf(&b, "[control-plane] Creating static Pod manifest for \"kube-apiserver\"\n")
			fmt.Fprintf(&b, "[addons] Applied essential addon: CoreDNS\n[addons] Applied essential addon: kube-proxy\n\n")
			fmt.Fprintf(&b, "Your Kubernetes control-plane has initialized successfully!\n")
			fmt.Fprintf(&b, "daemonset.apps/nvidia-device-plugin-daemonset created\n")
		} else {
			fmt.Fprintf(&b, "[preflight] Running pre-flight checks\n[preflight] Reading configuration from the cluster...\n")
			fmt.Fprintf(&b, "[kubelet-start] Starting the kubelet\n[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap...\n\n")
			fmt.Fprintf(&b, "This node has joined the cluster:\n* Certificate signing request was sent to apiserver and a response was received.\n")
		}
	case Ray:
		fmt.Fprintf(&b, "Successfully installed ray-%s\n", rayVersion)
		if head {
			fmt.Fprintf(&b, "Local node IP: %s\n\n--------------------\nRay runtime started.\n--------------------\n\n", headIP)
			fmt.Fprintf(&b, "Next steps\n  To add another node to this Ray cluster, run\n    ray start --address='%s:6379'\n", headIP)
		} else {
			fmt.Fprintf(&b, "Local node IP: %s\n\n--------------------\nRay runtime started.\n--------------------\n", n.privateIP())
		}
	}
	return b.String()
}

// installFailure is the output and exit code of a failed install.
func installFailure(software string) (string, int) {
	switch software {
	case Slurm:
		return "Reading package lists...\nBuilding dependency tree...\n" +
			"E: Failed to fetch http://archive.ubuntu.com/ubuntu/pool/universe/s/slurm-wlm/slurmd_21.08.5-2ubuntu1_amd64.deb  503  Service Unavailable [IP: 185.125.190.36 80]\n" +
			"E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n", 100
	case Kubernetes:
		return "[preflight] Running pre-flight checks\n" +
			"error execution phase preflight: [preflight] Some fatal errors occurred:\n" +
			"\t[ERROR FileContent--proc-sys-net-bridge-bridge-nf-call-iptables]: /proc/sys/net/bridge/bridge-nf-call-iptables does not exist\n" +
			"[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`\n" +
			"To see the stack trace of this error execute with --v=5 or higher\n", 1
	default:
		return "Collecting ray[default]==" + rayVersion + "\n" +
			"ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n", 1
	}
}

func slurmPkgVersion(pkg string) string {
	if pkg == "munge" {
		return "0.5.14-6"
	}
	return "21.08.5-2ubuntu1"
}

// adminConf is what node-0's Kubernetes install prints last: its
// /etc/kubernetes/admin.conf between the markers the server reads it by,
// with the certificate authority and the admin's key pair of this
// simulated control plane (derived from the seed and the group).
func (e *executor) adminConf() string {
	pem := func(kind, label string) string {
		h1, h2 := e.c.hash("admin.conf", e.n.g.name, e.n.g.gen, label), e.c.hash("admin.conf+", e.n.g.name, e.n.g.gen, label)
		body := base64.StdEncoding.EncodeToString(append(h1[:], h2[:]...))
		return base64.StdEncoding.EncodeToString([]byte("-----BEGIN " + kind + "-----\n" + body + "\n-----END " + kind + "-----\n"))
	}
	var b strings.Builder
	b.WriteString("-----BEGIN CLUSTERDECK KUBECONFIG-----\n")
	fmt.Fprintf(&b, "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: https://%s:6443\n  name: kubernetes\n",
		pem("CERTIFICATE", "ca"), e.n.privateIP())
	b.WriteString("contexts:\n- context:\n    cluster: kubernetes\n    user: kubernetes-admin\n  name: kubernetes-admin@kubernetes\n")
	b.WriteString("current-context: kubernetes-admin@kubernetes\nkind: Config\npreferences: {}\nusers:\n- name: kubernetes-admin\n  user:\n")
	fmt.Fprintf(&b, "    client-certificate-data: %s\n    client-key-data: %s\n", pem("CERTIFICATE", "admin"), pem("RSA PRIVATE KEY", "admin-key"))
	b.WriteString("-----END CLUSTERDECK KUBECONFIG-----\n")
	return b.String()
}
