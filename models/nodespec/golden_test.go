package nodespec

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.txt")

// goldenShapes are the cluster shapes whose every generated artifact is
// pinned in testdata/golden/<name>.txt.
func goldenShapes() []struct {
	name string
	c    Cluster
} {
	// 2 × 8 H100 VMs with public addresses, no software.
	vm := Cluster{
		Name: "llama-70b-ft", Software: SoftwareNone, MachineKind: KindVM,
		GPUsPerNode: 8, CPUsPerNode: 208, MemoryGBPerNode: 1800,
		UserEnv: map[string]string{"HF_TOKEN": "hf_abc123", "MALLOC_ARENA_MAX": "1"},
		Nodes:   DefaultNodes(2),
	}
	vm.Nodes[0].PublicHost = "203.0.113.10"
	vm.Nodes[1].PublicHost = "203.0.113.11"

	// 4 × 4 bare metal at a site without public addresses: Kubernetes,
	// reached through a gateway; a user value that needs quoting.
	bm := Cluster{
		Name: "K8s Lab", Software: SoftwareKubernetes, MachineKind: KindBareMetal,
		GPUsPerNode: 4, CPUsPerNode: 64, MemoryGBPerNode: 512,
		Gateway: "jump@gw.example.net:2222",
		UserEnv: map[string]string{"WANDB_PROJECT": "it's $HOME `x`", "EMPTY": ""},
		Nodes:   DefaultNodes(4),
	}

	// 3 × 1 containers (no shared folder) with Ray, root login, one public
	// host with a port per container, a provider-named interface and port.
	ct := Cluster{
		Name: "ray-sweep", Software: SoftwareRay, MachineKind: KindContainer,
		GPUsPerNode: 1, CPUsPerNode: 16, MemoryGBPerNode: 64,
		Interface: "eth0", MasterPort: 23456,
		Nodes: DefaultNodes(3),
	}
	for i := range ct.Nodes {
		ct.Nodes[i].PublicHost = "198.51.100.7"
		ct.Nodes[i].SSHPort = 40022 + i
		ct.Nodes[i].SSHUser = "root"
	}

	// 16 × 8 Slurm VMs on InfiniBand.
	sl := Cluster{
		Name: "pretrain", Software: SoftwareSlurm, MachineKind: KindVM, Interconnect: InterconnectInfiniBand,
		GPUsPerNode: 8, CPUsPerNode: 128, MemoryGBPerNode: 1024,
		Interface: "ib0",
		Nodes:     DefaultNodes(16),
	}
	for i := range sl.Nodes {
		sl.Nodes[i].PublicHost = fmt.Sprintf("203.0.113.%d", 100+i)
	}

	return []struct {
		name string
		c    Cluster
	}{
		{"2x8-h100-vm-public", vm},
		{"4x4-bare-metal-gateway-kubernetes", bm},
		{"3x1-container-ray", ct},
		{"16x8-vm-slurm-infiniband", sl},
	}
}

// renderAll writes every artifact of c, in sections, as the page would show
// them.
func renderAll(c Cluster) string {
	var b strings.Builder
	sec := func(title string) { fmt.Fprintf(&b, "\n=== %s ===\n", title) }
	fmt.Fprintf(&b, "cluster %q: %d × %d GPUs, %s, %s, software %s, shared folder %v\n",
		c.Name, c.NodeCount(), c.GPUsPerNode, c.MachineKind, c.interconnect(), c.software(), c.HasSharedFolder())

	sec("hostfile (" + c.HostfilePath() + ")")
	b.WriteString(c.Hostfile())

	sec("env rank 0")
	b.WriteString(c.EnvBlock(0))
	sec("env rank 1")
	b.WriteString(c.EnvBlock(1))

	for _, cmd := range c.Commands().All() {
		sec(cmd.Name + " (run on " + cmd.RunOn + ")")
		b.WriteString(cmd.Text)
		if !strings.HasSuffix(cmd.Text, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("# " + cmd.Note + "\n")
	}

	sec("ssh")
	for _, s := range c.SSH() {
		fmt.Fprintf(&b, "%-8s %-12s %s\n", s.Name, s.PrivateIP, s.Command)
	}
	fmt.Fprintf(&b, "primary: %s\n", c.PrimarySSH().Command)

	sec("ssh config")
	b.WriteString(c.SSHConfig())

	sec("roles")
	for _, n := range c.byRank() {
		fmt.Fprintf(&b, "%s %s\n", n.Name, c.Role(n.Rank))
	}

	switch c.software() {
	case SoftwareSlurm:
		sec("slurm.conf")
		b.WriteString(c.SlurmConf())
		sec("gres.conf")
		b.WriteString(c.GresConf())
		for _, mode := range []string{CgroupV2, CgroupV1, CgroupNone} {
			plugins, cgroup := SlurmPlugins(mode)
			sec("plugins.conf (cgroups " + mode + ")")
			b.WriteString(plugins)
			sec("cgroup.conf (cgroups " + mode + ")")
			b.WriteString(cgroup)
		}
	case SoftwareRay:
		sec("ray start")
		for _, n := range c.byRank() {
			fmt.Fprintf(&b, "%s: %s\n", n.Name, c.RayStart(n.Rank))
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, s := range goldenShapes() {
		t.Run(s.name, func(t *testing.T) {
			if err := s.c.Validate(); err != nil {
				t.Fatalf("golden shape does not validate: %v", err)
			}
			got := renderAll(s.c)
			path := filepath.Join("testdata", "golden", s.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the generated output (run with -update and review the diff):\n%s",
					path, firstDiff(string(want), got))
			}
		})
	}
}

// firstDiff describes the first differing line of want and got.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, w, g)
		}
	}
	return "(no line differs)"
}
