package nodespec

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// base returns a valid 2 × 8 vm cluster with public addresses.
func base() Cluster {
	c := Cluster{Name: "base", MachineKind: KindVM, GPUsPerNode: 8, Nodes: DefaultNodes(2)}
	c.Nodes[0].PublicHost = "203.0.113.10"
	c.Nodes[1].PublicHost = "203.0.113.11"
	return c
}

func TestDefaultNodes(t *testing.T) {
	nodes := DefaultNodes(3)
	want := []Node{
		{Rank: 0, Name: "node-0", PrivateIP: "10.77.0.1", SSHPort: 22, SSHUser: "ubuntu"},
		{Rank: 1, Name: "node-1", PrivateIP: "10.77.0.2", SSHPort: 22, SSHUser: "ubuntu"},
		{Rank: 2, Name: "node-2", PrivateIP: "10.77.0.3", SSHPort: 22, SSHUser: "ubuntu"},
	}
	if !slices.Equal(nodes, want) {
		t.Errorf("DefaultNodes(3) = %+v, want %+v", nodes, want)
	}
	if got := DefaultNodes(64)[63]; got.Name != "node-63" || got.PrivateIP != "10.77.0.64" {
		t.Errorf("DefaultNodes(64)[63] = %+v", got)
	}
	if DefaultNodes(0) != nil || DefaultNodes(-1) != nil {
		t.Error("DefaultNodes(≤0) should be nil")
	}
	// A launch-time cluster (no public addresses yet) validates.
	c := Cluster{MachineKind: KindContainer, GPUsPerNode: 1, Nodes: DefaultNodes(MaxNodes)}
	if err := c.Validate(); err != nil {
		t.Errorf("64 default nodes: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(c *Cluster)
		wantField string // "" = valid
		wantMsg   string // substring of the field's message
	}{
		{"valid", func(c *Cluster) {}, "", ""},
		{"valid all options", func(c *Cluster) {
			c.Software, c.Interconnect, c.Interface, c.MasterPort = SoftwareSlurm, InterconnectRoCE, "enp0s12", 23456
			c.CPUsPerNode, c.MemoryGBPerNode = 64, 512
			c.Gateway = "jump@[2001:db8::1]:2222"
			c.UserEnv = map[string]string{"HF_TOKEN": "x", "_private": "it's\n$ok", "MALLOC_ARENA_MAX": "1"}
			c.Nodes[1].PublicHost = "gpu-1.example.com"
			c.Nodes[0].PrivateIP = "192.168.7.1"
		}, "", ""},
		{"valid gateway without user or port", func(c *Cluster) { c.Gateway = "gw.example.net" }, "", ""},
		{"one node", func(c *Cluster) { c.Nodes = DefaultNodes(1) }, "nodes", "2 to 64 nodes, not 1"},
		{"no nodes", func(c *Cluster) { c.Nodes = nil }, "nodes", "not 0"},
		{"65 nodes", func(c *Cluster) { c.Nodes = DefaultNodes(65) }, "nodes", "not 65"},
		{"3 gpus", func(c *Cluster) { c.GPUsPerNode = 3 }, "gpusPerNode", "1, 2, 4 or 8, not 3"},
		{"0 gpus", func(c *Cluster) { c.GPUsPerNode = 0 }, "gpusPerNode", "not 0"},
		{"16 gpus", func(c *Cluster) { c.GPUsPerNode = 16 }, "gpusPerNode", "not 16"},
		{"malformed software", func(c *Cluster) { c.Software = "K8s!" }, "software", `not "K8s!"`},
		{"kubernetes on containers", func(c *Cluster) { c.Software, c.MachineKind = SoftwareKubernetes, KindContainer }, "software", "vm and bare_metal"},
		{"no machine kind", func(c *Cluster) { c.MachineKind = "" }, "machineKind", "required"},
		{"unknown machine kind", func(c *Cluster) { c.MachineKind = "metal" }, "machineKind", `not "metal"`},
		{"unknown interconnect", func(c *Cluster) { c.Interconnect = "nvlink" }, "interconnect", `not "nvlink"`},
		{"negative cpus", func(c *Cluster) { c.CPUsPerNode = -1 }, "cpusPerNode", "negative"},
		{"negative memory", func(c *Cluster) { c.MemoryGBPerNode = -1 }, "memoryGbPerNode", "negative"},
		{"name with newline", func(c *Cluster) { c.Name = "a\nClusterName=evil" }, "name", "one line"},
		{"name too long", func(c *Cluster) { c.Name = strings.Repeat("x", 101) }, "name", "at most 100"},
		{"duplicate node names", func(c *Cluster) { c.Nodes[1].Name = "node-0" }, "nodes[1].name", `duplicate node name "node-0"`},
		{"empty node name", func(c *Cluster) { c.Nodes[0].Name = "" }, "nodes[0].name", "required"},
		{"uppercase node name", func(c *Cluster) { c.Nodes[1].Name = "Node-1" }, "nodes[1].name", "not a host name"},
		{"node name with shell syntax", func(c *Cluster) { c.Nodes[1].Name = "n1;reboot" }, "nodes[1].name", "not a host name"},
		{"node name with trailing dash", func(c *Cluster) { c.Nodes[1].Name = "node-" }, "nodes[1].name", "not a host name"},
		{"duplicate private ips", func(c *Cluster) { c.Nodes[1].PrivateIP = "10.77.0.1" }, "nodes[1].privateIp", "duplicate private address"},
		{"missing private ip", func(c *Cluster) { c.Nodes[0].PrivateIP = "" }, "nodes[0].privateIp", "required"},
		{"bad private ip", func(c *Cluster) { c.Nodes[0].PrivateIP = "10.77.0" }, "nodes[0].privateIp", "not an IPv4 address"},
		{"ipv6 private ip", func(c *Cluster) { c.Nodes[0].PrivateIP = "fd00::1" }, "nodes[0].privateIp", "not an IPv4 address"},
		{"duplicate ranks", func(c *Cluster) { c.Nodes[1].Rank = 0 }, "nodes[1].rank", "also nodes[0]"},
		{"rank out of range", func(c *Cluster) { c.Nodes[1].Rank = 2 }, "nodes[1].rank", "between 0 and 1"},
		{"bad public host", func(c *Cluster) { c.Nodes[1].PublicHost = "h;id" }, "nodes[1].publicHost", "not an IP address or DNS name"},
		{"bad ssh port", func(c *Cluster) { c.Nodes[0].SSHPort = 70000 }, "nodes[0].sshPort", "between 1 and 65535"},
		{"bad ssh user", func(c *Cluster) { c.Nodes[0].SSHUser = "Root" }, "nodes[0].sshUser", "not a user name"},
		{"reserved MASTER_ADDR", func(c *Cluster) { c.UserEnv = map[string]string{"MASTER_ADDR": "1.2.3.4"} }, "env.MASTER_ADDR", "cannot be overridden"},
		{"reserved NODE_RANK", func(c *Cluster) { c.UserEnv = map[string]string{"NODE_RANK": "0"} }, "env.NODE_RANK", "cannot be overridden"},
		{"reserved WORLD_SIZE", func(c *Cluster) { c.UserEnv = map[string]string{"WORLD_SIZE": "1"} }, "env.WORLD_SIZE", "cannot be overridden"},
		{"reserved NCCL_SOCKET_IFNAME", func(c *Cluster) { c.UserEnv = map[string]string{"NCCL_SOCKET_IFNAME": "eth0"} }, "env.NCCL_SOCKET_IFNAME", "cannot be overridden"},
		{"reserved PRIMARY_PORT", func(c *Cluster) { c.UserEnv = map[string]string{"PRIMARY_PORT": "1"} }, "env.PRIMARY_PORT", "cannot be overridden"},
		{"env name starts with digit", func(c *Cluster) { c.UserEnv = map[string]string{"1ABC": "x"} }, "env.1ABC", "not a variable name"},
		{"env name with dash", func(c *Cluster) { c.UserEnv = map[string]string{"A-B": "x"} }, "env.A-B", "not a variable name"},
		{"env name with shell syntax", func(c *Cluster) { c.UserEnv = map[string]string{"A=$(id)": "x"} }, "env.A=$(id)", "not a variable name"},
		{"empty env name", func(c *Cluster) { c.UserEnv = map[string]string{"": "x"} }, "env.", "not a variable name"},
		{"env value with NUL", func(c *Cluster) { c.UserEnv = map[string]string{"A": "x\x00y"} }, "env.A", "NUL"},
		{"env value not UTF-8", func(c *Cluster) { c.UserEnv = map[string]string{"A": "\xff"} }, "env.A", "UTF-8"},
		{"env value too long", func(c *Cluster) { c.UserEnv = map[string]string{"A": strings.Repeat("x", MaxEnvValueBytes+1)} }, "env.A", "at most"},
		{"interface with shell syntax", func(c *Cluster) { c.Interface = "ens1;id" }, "interface", "not a network interface"},
		{"interface too long", func(c *Cluster) { c.Interface = "abcdefghijklmnop" }, "interface", "not a network interface"},
		{"privileged master port", func(c *Cluster) { c.MasterPort = 80 }, "masterPort", "between 1024 and 65535"},
		{"master port too high", func(c *Cluster) { c.MasterPort = 70000 }, "masterPort", "between 1024 and 65535"},
		{"master port is ray's", func(c *Cluster) { c.Software, c.MasterPort = SoftwareRay, 6379 }, "masterPort", "Ray head"},
		{"master port is slurmd's", func(c *Cluster) { c.Software, c.MasterPort = SoftwareSlurm, 6818 }, "masterPort", "slurmd"},
		{"master port is kube-apiserver's", func(c *Cluster) { c.Software, c.MasterPort = SoftwareKubernetes, 6443 }, "masterPort", "Kubernetes API"},
		{"ray port fine without ray", func(c *Cluster) { c.MasterPort = 6379 }, "", ""},
		{"gateway with bad host", func(c *Cluster) { c.Gateway = "jump@bad host" }, "gateway", "not [user@]host[:port]"},
		{"gateway with bad port", func(c *Cluster) { c.Gateway = "jump@gw:99999" }, "gateway", "not between 1 and 65535"},
		{"gateway with bad user", func(c *Cluster) { c.Gateway = "Jump;id@gw" }, "gateway", "not a user name"},
		{"gateway with empty host", func(c *Cluster) { c.Gateway = "jump@:22" }, "gateway", "not [user@]host[:port]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var verr ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Validate() = %v, want a ValidationError", err)
			}
			msg, ok := verr.Fields()[tt.wantField]
			if !ok {
				t.Fatalf("Validate() = %v, want an error on %q", err, tt.wantField)
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("%s: %q, want it to contain %q", tt.wantField, msg, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), tt.wantField+": ") {
				t.Errorf("Error() = %q does not name the field", err.Error())
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Cluster{GPUsPerNode: 3, UserEnv: map[string]string{"NODE_RANK": "1", "bad-name": ""}, Nodes: DefaultNodes(1)}
	var verr ValidationError
	if !errors.As(c.Validate(), &verr) {
		t.Fatal("want a ValidationError")
	}
	fields := verr.Fields()
	for _, f := range []string{"machineKind", "gpusPerNode", "nodes", "env.NODE_RANK", "env.bad-name"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("missing error on %s in %v", f, verr)
		}
	}
}

// TestEnvIdenticalExceptRank checks N3: every node gets the same
// environment but for NODE_RANK.
func TestEnvIdenticalExceptRank(t *testing.T) {
	for _, s := range goldenShapes() {
		t.Run(s.name, func(t *testing.T) {
			env0 := s.c.Env(0)
			for rank := range s.c.NodeCount() {
				env := s.c.Env(rank)
				if len(env) != len(env0) {
					t.Fatalf("rank %d has %d variables, rank 0 has %d", rank, len(env), len(env0))
				}
				for i, e := range env {
					if e.Name != env0[i].Name {
						t.Fatalf("rank %d variable %d is %s, rank 0's is %s", rank, i, e.Name, env0[i].Name)
					}
					if e.Name == EnvNodeRank {
						if e.Value != fmt.Sprint(rank) {
							t.Errorf("rank %d: NODE_RANK=%q", rank, e.Value)
						}
					} else if e.Value != env0[i].Value {
						t.Errorf("rank %d: %s=%q, rank 0 has %q", rank, e.Name, e.Value, env0[i].Value)
					}
				}
			}
		})
	}
}

func TestEnvValues(t *testing.T) {
	c := base()
	c.GPUsPerNode = 4
	c.Nodes = DefaultNodes(3)
	c.Nodes[0].PrivateIP, c.Nodes[1].PrivateIP, c.Nodes[2].PrivateIP = "10.0.5.7", "10.0.5.8", "10.0.5.9"
	// Listed out of rank order: rank 0 is still the master.
	c.Nodes[0], c.Nodes[2] = c.Nodes[2], c.Nodes[0]
	c.UserEnv = map[string]string{"HF_TOKEN": "hf_x", "MASTER_ADDR": "ignored"}
	got := map[string]string{}
	var names []string
	for _, e := range c.Env(2) {
		got[e.Name] = e.Value
		names = append(names, e.Name)
	}
	want := map[string]string{
		"MASTER_ADDR": "10.0.5.7", "PRIMARY_ADDR": "10.0.5.7", "MASTER_PORT": "29500", "PRIMARY_PORT": "29500",
		"NODE_RANK": "2", "NNODES": "3", "WORLD_SIZE": "12", "GPUS_PER_NODE": "4", "NCCL_SOCKET_IFNAME": "ens1",
		"HF_TOKEN": "hf_x",
	}
	if len(got) != len(want) {
		t.Errorf("Env = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("Env not sorted by name: %v", names)
	}
	if got := c.Primary().Name; got != "node-0" {
		t.Errorf("Primary() = %s", got)
	}
}

// TestEnvBlockInRealShell sources EnvBlock in sh and reads every value back.
func TestEnvBlockInRealShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	c := base()
	c.UserEnv = map[string]string{
		"QUOTES":    `it's "quoted"`,
		"DOLLAR":    "$HOME ${PATH} $(id) `id`",
		"NEWLINES":  "line1\nline2\n\nline4\n",
		"BACKSLASH": `a\b\\c\'`,
		"BANG":      "!! !$ history",
		"GLOB":      "* ? [a-z] ~ ~/x",
		"DASH":      "-rf --help",
		"SPACES":    "  leading and trailing  ",
		"UNICODE":   "héllo 世界 🙂",
		"EMPTY":     "",
		"SEMI":      "a; echo pwned && false || true | cat > /dev/null",
		"TABS":      "a\tb\rc",
		"ONLYQUOTE": "'",
		"TWOQUOTES": "''",
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	script := c.EnvBlock(1)
	env := c.Env(1)
	for _, e := range env {
		script += fmt.Sprintf("printf '%%s\\000' \"$%s\"\n", e.Name)
	}
	out, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatalf("sh: %v\n%s", err, script)
	}
	vals := strings.Split(string(out), "\x00")
	if len(vals) != len(env)+1 {
		t.Fatalf("got %d values, want %d: %q", len(vals)-1, len(env), out)
	}
	for i, e := range env {
		if vals[i] != e.Value {
			t.Errorf("%s: shell read %q, want %q", e.Name, vals[i], e.Value)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":              "''",
		"10.77.0.1":     "10.77.0.1",
		"hf_AbC-1.2/3":  "hf_AbC-1.2/3",
		"a b":           "'a b'",
		"it's":          `'it'\''s'`,
		"$HOME":         "'$HOME'",
		"~":             "'~'",
		"a=b":           "'a=b'",
		"line\nbreak":   "'line\nbreak'",
		"user@host:22":  "user@host:22",
		"50%,+1":        "50%,+1",
		"`id`":          "'`id`'",
		"back\\slash":   `'back\slash'`,
		"\"double\"":    `'"double"'`,
		"semi;colon":    "'semi;colon'",
		"glob*":         "'glob*'",
		"über":          "'über'",
		"trailing\\":    `'trailing\'`,
		"'":             `''\'''`,
		"x'y'z":         `'x'\''y'\''z'`,
		"#comment":      "'#comment'",
		"tab\tand\rcr":  "'tab\tand\rcr'",
		"brace{a,b}":    "'brace{a,b}'",
		"paren(x)":      "'paren(x)'",
		"pipe|amp&<>":   "'pipe|amp&<>'",
		"exclaim!":      "'exclaim!'",
		"caret^":        "'caret^'",
		"question?mark": "'question?mark'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestHostfile(t *testing.T) {
	c := base()
	c.GPUsPerNode = 4
	c.Nodes = DefaultNodes(3)
	slices.Reverse(c.Nodes) // order of the slice does not matter, ranks do
	if got, want := c.Hostfile(), "node-0 slots=4\nnode-1 slots=4\nnode-2 slots=4\n"; got != want {
		t.Errorf("Hostfile() = %q, want %q", got, want)
	}
	for kind, want := range map[string]struct {
		shared bool
		path   string
	}{
		KindVM:        {true, "/shared/hostfile"},
		KindBareMetal: {true, "/shared/hostfile"},
		KindContainer: {false, "~/hostfile"},
	} {
		c.MachineKind = kind
		if c.HasSharedFolder() != want.shared || c.HostfilePath() != want.path {
			t.Errorf("%s: HasSharedFolder %v, HostfilePath %q; want %v, %q", kind, c.HasSharedFolder(), c.HostfilePath(), want.shared, want.path)
		}
	}
}

func TestCommands(t *testing.T) {
	vm := base() // 2 × 8, ethernet, ubuntu
	cs := vm.Commands()
	mustContain(t, "torchrun", cs.Torchrun.Text, "--nnodes=2", "--nproc_per_node=8", "--node_rank=$NODE_RANK", "--master_addr=10.77.0.1", "--master_port=29500")
	if cs.Torchrun.RunOn != RunOnEveryNode {
		t.Errorf("torchrun runs on %q", cs.Torchrun.RunOn)
	}
	mustContain(t, "mpirun vm", cs.Mpirun.Text, "-np 16 ", "--hostfile /shared/hostfile", "-x MASTER_ADDR", "-x NCCL_SOCKET_IFNAME", "--mca btl_tcp_if_include ens1")
	mustNotContain(t, "mpirun vm", cs.Mpirun.Text, "-H ", "--allow-run-as-root")
	mustContain(t, "deepspeed vm", cs.DeepSpeed.Text, "--hostfile /shared/hostfile", "--master_addr 10.77.0.1", "--master_port 29500", "--num_nodes 2", "--num_gpus 8")
	mustContain(t, "nccl ethernet", cs.NCCLAllReduce.Text, "-np 16 ", "-H node-0:8,node-1:8 ", "-x NCCL_SOCKET_IFNAME=ens1", NCCLTestBinary+" -b 8 -e 128M -f 2 -g 1")
	for _, cmd := range []Command{cs.Mpirun, cs.DeepSpeed, cs.NCCLAllReduce} {
		if cmd.RunOn != "node-0" {
			t.Errorf("%s runs on %q, want node-0", cmd.Name, cmd.RunOn)
		}
	}
	if len(cs.Software) != 0 || len(cs.All()) != 4 {
		t.Errorf("software none: %d software commands, %d in all", len(cs.Software), len(cs.All()))
	}

	ct := base()
	ct.MachineKind, ct.GPUsPerNode, ct.Interconnect, ct.Software = KindContainer, 2, InterconnectInfiniBand, SoftwareRay
	ct.Nodes = DefaultNodes(3)
	for i := range ct.Nodes {
		ct.Nodes[i].SSHUser = "root"
	}
	cs = ct.Commands()
	mustContain(t, "mpirun container", cs.Mpirun.Text, "mpirun --allow-run-as-root -np 6 -H node-0:2,node-1:2,node-2:2 ")
	mustNotContain(t, "mpirun container", cs.Mpirun.Text, "--hostfile", "/shared")
	mustContain(t, "deepspeed container", cs.DeepSpeed.Text, "--hostfile ~/hostfile", "--num_nodes 3", "--num_gpus 2")
	mustContain(t, "nccl infiniband", cs.NCCLAllReduce.Text, "--allow-run-as-root", "-np 6 ", "-e 8G", "-g 1")
	if len(cs.Software) != 2 || cs.Software[0].Text != "ray status" {
		t.Errorf("ray commands = %+v", cs.Software)
	}

	sl := base()
	sl.Software = SoftwareSlurm
	cs = sl.Commands()
	if len(cs.Software) != 2 {
		t.Fatalf("slurm commands = %+v", cs.Software)
	}
	mustContain(t, "srun", cs.Software[0].Text, "--nodes=2", "--gpus-per-node=8")
	mustContain(t, "sbatch", cs.Software[1].Text, "#SBATCH --nodes=2", "#SBATCH --gpus-per-node=8", "--nproc_per_node=8", `--rdzv_endpoint="$head:29500"`)
}

// TestScriptsParse runs the shell syntax checker over the scripts.
func TestScriptsParse(t *testing.T) {
	scripts := map[string]string{"ReadinessScript": ReadinessScript}
	for _, s := range goldenShapes() {
		scripts[s.name+" env"] = s.c.EnvBlock(1)
		for _, cmd := range s.c.Commands().All() {
			scripts[s.name+" "+cmd.Name] = cmd.Text
		}
		for _, ssh := range s.c.SSH() {
			scripts[s.name+" "+ssh.Name+" ssh"] = ssh.Command
		}
	}
	for _, shell := range []string{"sh", "bash"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		for name, script := range scripts {
			if out, err := exec.Command(path, "-n", "-c", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", shell, name, err, out)
			}
		}
	}
}

func TestSSH(t *testing.T) {
	t.Run("public addresses", func(t *testing.T) {
		c := base()
		c.Nodes[1].SSHPort, c.Nodes[1].SSHUser = 40022, "root"
		got := c.SSH()
		want := []SSHCommand{
			{Rank: 0, Name: "node-0", PrivateIP: "10.77.0.1", Command: "ssh -p 22 ubuntu@203.0.113.10"},
			{Rank: 1, Name: "node-1", PrivateIP: "10.77.0.2", Command: "ssh -p 40022 root@203.0.113.11"},
		}
		if !slices.Equal(got, want) {
			t.Errorf("SSH() = %+v, want %+v", got, want)
		}
		if c.PrimarySSH() != want[0] {
			t.Errorf("PrimarySSH() = %+v", c.PrimarySSH())
		}
	})
	t.Run("gateway", func(t *testing.T) {
		c := base()
		c.Gateway = "jump@gw.example.net:2222"
		c.Nodes[0].PublicHost = "" // a gateway site has none; ignored anyway
		got := c.SSH()
		want := []SSHCommand{
			{Rank: 0, Name: "node-0", PrivateIP: "10.77.0.1", Command: "ssh -J jump@gw.example.net:2222 -p 22 ubuntu@10.77.0.1", ViaGateway: true},
			{Rank: 1, Name: "node-1", PrivateIP: "10.77.0.2", Command: "ssh -J jump@gw.example.net:2222 -p 22 ubuntu@10.77.0.2", ViaGateway: true},
		}
		if !slices.Equal(got, want) {
			t.Errorf("SSH() = %+v, want %+v", got, want)
		}
		mustContain(t, "ssh config", c.SSHConfig(), "Host base-node-0\n    HostName 10.77.0.1\n    Port 22\n    User ubuntu\n    ProxyJump jump@gw.example.net:2222\n")
	})
	t.Run("gateway defaults and IPv6", func(t *testing.T) {
		c := base()
		c.Gateway = "gw.example.net"
		mustContain(t, "default port", c.PrimarySSH().Command, "ssh -J gw.example.net:22 -p 22 ubuntu@10.77.0.1")
		c.Gateway = "jump@[2001:db8::1]:2222"
		mustContain(t, "ipv6 gateway", c.PrimarySSH().Command, "ssh -J jump@[2001:db8::1]:2222 ")
	})
	t.Run("no address yet", func(t *testing.T) {
		c := base()
		c.Nodes[1].PublicHost = ""
		got := c.SSH()
		if got[1].Command != "" || got[0].Command == "" {
			t.Errorf("SSH() = %+v", got)
		}
		if strings.Contains(c.SSHConfig(), "node-1") {
			t.Errorf("SSHConfig lists a node without an address:\n%s", c.SSHConfig())
		}
	})
	t.Run("rank order", func(t *testing.T) {
		c := base()
		c.Nodes[0], c.Nodes[1] = c.Nodes[1], c.Nodes[0]
		if p := c.PrimarySSH(); p.Rank != 0 || p.Name != "node-0" {
			t.Errorf("PrimarySSH() = %+v", p)
		}
	})
	t.Run("empty cluster", func(t *testing.T) {
		if got := (Cluster{}).PrimarySSH(); got != (SSHCommand{}) {
			t.Errorf("PrimarySSH() = %+v", got)
		}
	})
}

func TestRoles(t *testing.T) {
	for sw, want := range map[string][2]string{
		"":                 {RolePrimary, RoleWorker},
		SoftwareNone:       {RolePrimary, RoleWorker},
		SoftwareSlurm:      {RoleController, RoleCompute},
		SoftwareKubernetes: {RoleControlPlane, RoleWorker},
		SoftwareRay:        {RoleHead, RoleWorker},
	} {
		c := base()
		c.Software = sw
		if got := [2]string{c.Role(0), c.Role(1)}; got != want {
			t.Errorf("%q: roles %v, want %v", sw, got, want)
		}
	}
}

func TestSlurmConf(t *testing.T) {
	c := base()
	c.Software, c.Name, c.CPUsPerNode, c.MemoryGBPerNode = SoftwareSlurm, "My Cluster!", 32, 256
	conf := c.SlurmConf()
	mustContain(t, "slurm.conf", conf,
		"\nClusterName=my-cluster\n",
		"\nSlurmctldHost=node-0(10.77.0.1)\n",
		"\nGresTypes=gpu\n",
		"\nSelectType=select/cons_tres\n",
		"\nSelectTypeParameters=CR_Core_Memory\n",
		"\nDefMemPerCPU=7372\n", // 235929 MiB / 32 CPUs: a job asking for no memory gets its share
		"\nInclude /etc/slurm/plugins.conf\n",
		"\nNodeName=node-0 NodeAddr=10.77.0.1 CPUs=32 RealMemory=235929 Gres=gpu:8 State=UNKNOWN\n",
		"\nNodeName=node-1 NodeAddr=10.77.0.2 CPUs=32 RealMemory=235929 Gres=gpu:8 State=UNKNOWN\n",
		"\nPartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
	if got := c.GresConf(); !strings.HasSuffix(got, "\nName=gpu File=/dev/nvidia[0-7]\n") {
		t.Errorf("GresConf() = %q", got)
	}

	// Unknown size, one GPU, containers, no name.
	c.Name, c.CPUsPerNode, c.MemoryGBPerNode, c.GPUsPerNode, c.MachineKind = "", 0, 0, 1, KindContainer
	conf = c.SlurmConf()
	mustContain(t, "slurm.conf minimal", conf,
		"\nClusterName=clusterdeck\n",
		"\nSelectTypeParameters=CR_Core\n",
		"\nNodeName=node-1 NodeAddr=10.77.0.2 Gres=gpu:1 State=UNKNOWN\n")
	mustNotContain(t, "slurm.conf minimal", conf, "RealMemory", "CPUs=", "DefMem", "ProctrackType")
	if got := c.GresConf(); !strings.HasSuffix(got, "\nName=gpu File=/dev/nvidia0\n") {
		t.Errorf("GresConf() = %q", got)
	}
	// Without GPUs no node claims a GPU and gres.conf names no device
	// (slurmd stops when a File= device does not exist).
	c.GPUsPerNode = 0
	mustNotContain(t, "slurm.conf no GPUs", c.SlurmConf(), "Gres=gpu")
	mustNotContain(t, "gres.conf no GPUs", c.GresConf(), "File=")
	// The plugins follow the machine's cgroups.
	for mode, want := range map[string][2]string{
		CgroupV1:   {"ProctrackType=proctrack/cgroup\n", "CgroupPlugin=cgroup/v1\n"},
		CgroupV2:   {"ProctrackType=proctrack/cgroup\n", "CgroupPlugin=cgroup/v2\n"},
		CgroupNone: {"ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n", "CgroupPlugin=cgroup/v1\n"},
	} {
		plugins, cgroup := SlurmPlugins(mode)
		mustContain(t, "plugins "+mode, plugins, want[0])
		mustContain(t, "cgroup.conf "+mode, cgroup, want[1])
	}
	// Every line is a comment, blank, Include <file>, or Key=Value pairs.
	for line := range strings.Lines(c.SlurmConf()) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || line == "Include "+SlurmPluginsPath {
			continue
		}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); !ok || k == "" || v == "" {
				t.Errorf("slurm.conf line %q: %q is not Key=Value", line, kv)
			}
		}
	}
}

func TestRayStart(t *testing.T) {
	c := base()
	c.Software = SoftwareRay
	if got, want := c.RayStart(0), "ray start --head --port=6379 --node-ip-address=10.77.0.1 --num-gpus=8"; got != want {
		t.Errorf("RayStart(0) = %q, want %q", got, want)
	}
	if got, want := c.RayStart(1), "ray start --address=10.77.0.1:6379 --node-ip-address=10.77.0.2 --num-gpus=8"; got != want {
		t.Errorf("RayStart(1) = %q, want %q", got, want)
	}
}

func TestNotes(t *testing.T) {
	mustContain(t, "MallocHint", MallocHint, "MALLOC_ARENA_MAX=1", "tensor-parallel")
	if strings.Count(MallocHint, ". ") != 0 || !strings.HasSuffix(MallocHint, ".") {
		t.Errorf("MallocHint should be one sentence: %q", MallocHint)
	}
	mustContain(t, "ReadinessNote", ReadinessNote, "infrastructure", "readiness check", "curl", "nvidia-smi")
	mustContain(t, "ReadinessScript", ReadinessScript, "GPUS_PER_NODE", "nvidia-smi -L", "curl -fsS")
}

func TestHostSafe(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"Llama 70B/FT":           "llama-70b-ft",
		"--a--b--":               "a-b",
		"ünïcode":                "n-code",
		"x;rm -rf /":             "x-rm-rf",
		strings.Repeat("ab", 30): strings.Repeat("ab", 20),
	} {
		if got := hostSafe(in); got != want {
			t.Errorf("hostSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: %q does not contain %q", what, s, sub)
		}
	}
}

func mustNotContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s: %q contains %q", what, s, sub)
		}
	}
}
