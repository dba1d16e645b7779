package software

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
)

// needRealSlurm skips (loudly) outside CI when this machine cannot run
// Debian's Slurm as root; under CI=true it fails instead, so the proof
// below always runs there (.ci/run installs slurm-wlm and munge).
func needRealSlurm(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, bin := range []string{"unshare", "ip", "munged", "slurmctld", "slurmd", "srun", "sinfo"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("real Slurm test needs %s (installed by .ci/run)", strings.Join(missing, ", "))
	}
	t.Skipf("SKIPPED: real Slurm test needs %s; CI runs it", strings.Join(missing, ", "))
}

// The generated slurm.conf, gres.conf, plugins.conf/cgroup.conf and install
// script, the check command and its judge, against Debian's real Slurm
// (S2): one node in private mount, UTS, PID and network namespaces (so
// /etc/slurm, /etc/munge, /run, /var/spool, the host name and the
// controller's address are the test's own, and every daemon dies with the
// namespace) installs with the real script, starts munged, slurmctld and
// slurmd, and the check's `srun -N1` must run on it for the cluster to be
// judged ready.
//
// It runs twice: with the cgroup mode the script reads from this machine,
// and with cgroups forced off (proctrack/linuxproc, task/none), the mode
// of containers.
func TestSlurmAgainstRealSlurm(t *testing.T) {
	needRealSlurm(t)
	t.Run("detected", func(t *testing.T) { realSlurm(t, "") })
	t.Run("no-cgroups", func(t *testing.T) { realSlurm(t, nodespec.CgroupNone) })
}

func realSlurm(t *testing.T, cgroups string) {
	spec := nodespec.Cluster{
		Name: "real", Software: nodespec.SoftwareSlurm, MachineKind: nodespec.KindVM,
		GPUsPerNode: 0, CPUsPerNode: runtime.NumCPU(), MemoryGBPerNode: 1,
		Nodes: nodespec.DefaultNodes(1),
	}
	keys := func(label string, n int) []byte { return []byte(strings.Repeat("k", n)) }
	inst := Slurm.Install(Input{Spec: spec, Rank: 0, Keys: keys})
	dir := t.TempDir()
	var stage strings.Builder
	for path, content := range inst.Files {
		name := base64.RawURLEncoding.EncodeToString([]byte(path))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		stage.WriteString("install -D -m 600 " + filepath.Join(dir, name) + " " + path + "\n")
	}
	if !strings.Contains(inst.Files["/etc/slurm/slurm.conf"], "\nDefMemPerCPU=") {
		t.Fatalf("slurm.conf without DefMemPerCPU:\n%s", inst.Files["/etc/slurm/slurm.conf"])
	}
	node := spec.Nodes[0]
	outer := strings.Join([]string{
		"set -e",
		// Private directories: what the install writes stays in here.
		"for d in /etc/slurm /etc/munge /etc/clusterdeck /etc/default /run /var/spool /var/log/slurm /var/log/munge /var/lib/munge; do mkdir -p $d; mount -t tmpfs tmpfs $d; done",
		"install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge",
		"hostname " + node.Name,
		"ip link set lo up",
		"ip addr add " + node.PrivateIP + "/32 dev lo",
		stage.String() + "chmod 644 /etc/slurm/slurm.conf /etc/slurm/gres.conf",
		"export " + SlurmCgroupsEnv + "=" + cgroups,
		// Without cgroups, the machine has none mounted either (a container).
		"if [ -n \"$" + SlurmCgroupsEnv + "\" ]; then mount -t tmpfs tmpfs /sys/fs/cgroup; fi",
		"echo '=== install'",
		"(" + inst.Script + ") 2>&1",
		"echo '=== wait'",
		"for i in $(seq 1 60); do sinfo -N -h -o '%T' 2>/dev/null | grep -qx idle && break; sleep 1; done",
		"echo '=== check'",
		"export NNODES=1 GPUS_PER_NODE=0",
		"(" + Slurm.CheckCommand + "\n) > " + filepath.Join(dir, "check.out") + " 2>&1 || true",
		"cat " + filepath.Join(dir, "check.out"),
		"echo '=== logs'; tail -n 20 /var/log/slurm/slurmd.log /var/log/slurm/slurmctld.log 2>&1 || true",
	}, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--uts", "--pid", "--net", "--fork", "--kill-child", "--mount-proc", "bash", "-c", outer)
	out, err := cmd.CombinedOutput()
	t.Logf("namespace output:\n%s", out)
	if err != nil {
		t.Fatalf("install in the namespace: %v", err)
	}
	check, err := os.ReadFile(filepath.Join(dir, "check.out"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Slurm.Judge(string(check), spec)
	if err != nil || !rep.Ready {
		t.Fatalf("real Slurm is not ready by the product's check: %+v, %v\n%s", rep, err, check)
	}
	if !strings.Contains(string(check), "node-0 node-0 gpus=0") {
		t.Errorf("srun did not run on node-0:\n%s", check)
	}
	if cgroups != "" && !strings.Contains(string(out), "slurm: cgroups "+cgroups+" (ProctrackType=proctrack/linuxproc)") {
		t.Errorf("install did not use cgroups %s:\n%s", cgroups, out)
	}
}

// With GPUs configured and no driver devices, the install waits (bounded)
// and then fails saying why, without starting slurmd, which would die on
// the missing gres.conf device.
func TestSlurmInstallWaitsForGPUDevices(t *testing.T) {
	needRealSlurm(t)
	if _, err := os.Stat("/dev/nvidia0"); err == nil {
		t.Skip("this machine has /dev/nvidia0")
	}
	spec := nodespec.Cluster{Name: "gpu", Software: nodespec.SoftwareSlurm, MachineKind: nodespec.KindVM,
		GPUsPerNode: 2, Nodes: nodespec.DefaultNodes(1)}
	script := SlurmScript(spec, 0)
	outer := strings.Join([]string{
		"set -e",
		"for d in /etc/slurm /etc/munge /etc/clusterdeck /etc/default /run /var/spool /var/log/slurm /var/log/munge /var/lib/munge; do mkdir -p $d; mount -t tmpfs tmpfs $d; done",
		"echo AAAA > " + mungeKeyPath,
		"export " + GPUWaitEnv + "=0",
		"(" + script + ") 2>&1 && echo INSTALLED || echo \"EXIT $?\"",
		"ls /run/slurmd.pid 2>&1 || true",
	}, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "unshare", "--mount", "--uts", "--pid", "--net", "--fork", "--kill-child", "--mount-proc", "bash", "-c", outer).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"slurm: the GPU devices /dev/nvidia[0-1] did not appear within 0 s (is the NVIDIA driver loaded?); not starting slurmd",
		"EXIT 1", "cannot access '/run/slurmd.pid'"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
}
