package software

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
)

// Slurm: slurmctld on node-0, slurmd on every node (node-0 runs jobs too),
// one partition "gpu"; ready when sinfo lists every node idle AND a test
// job ran a task on every node, seeing its GPUs (S2).
var Slurm = Software{
	Name:  "slurm",
	Label: "Slurm",
	Help:  "Controller on node-0, compute on every node: sbatch, srun, squeue.",
	Kinds: []string{nodespec.KindVM, nodespec.KindBareMetal, nodespec.KindContainer},

	Window:       15 * time.Minute,
	Install:      slurmInstall,
	CheckCommand: SlurmCheckCommand,
	Judge: func(output string, c nodespec.Cluster) (readiness.Report, error) {
		return readiness.SlurmReady(output, nodeNames(c), c.GPUsPerNode)
	},
}

// SlurmCheckCommand is the Slurm check, run on node-0 with the cluster's
// environment (NNODES, GPUS_PER_NODE): every node's state and GPUs from
// sinfo, then, once every node is idle, one task on every node
// (`srun -N$NNODES --ntasks-per-node=1`, with `--gres=gpu:$GPUS_PER_NODE`
// and `nvidia-smi -L` when there are GPUs), each printing
// "<slurm node> <host name> gpus=<n>". readiness.SlurmReady reads it.
const SlurmCheckCommand = `sinfo -N -h -o "%N %T %G"
echo "` + readiness.SlurmJobBegin + `"
if sinfo -N -h -o "%T" | grep -qvx idle; then
  echo "test job not started: not every node is idle"
elif [ "${GPUS_PER_NODE:-0}" -gt 0 ]; then
  timeout 120 srun -N"$NNODES" --ntasks-per-node=1 --gres=gpu:"$GPUS_PER_NODE" sh -c 'echo "$SLURMD_NODENAME $(hostname) gpus=$(nvidia-smi -L | grep -c "^GPU ")"' 2>&1
else
  timeout 120 srun -N"$NNODES" --ntasks-per-node=1 sh -c 'echo "$SLURMD_NODENAME $(hostname) gpus=0"' 2>&1
fi
echo "` + readiness.SlurmJobEnd + `"`

// SlurmCgroupsEnv, when set in the install's environment to v2, v1 or
// none, overrides the cgroup mode the script reads from the machine (for
// an operator whose machines report cgroups they cannot really use).
const SlurmCgroupsEnv = "CLUSTERDECK_SLURM_CGROUPS"

// mungeKeyPath is where the munge key waits, base64, until the script
// installs it.
const mungeKeyPath = "/etc/clusterdeck/munge.key.b64"

// GPUDeviceWait is how long the install waits for the GPU driver's device
// files before it gives up: slurmd stops at once when a gres.conf device
// is missing.
const GPUDeviceWait = 300 * time.Second

// GPUWaitEnv, set in the install's environment, overrides GPUDeviceWait
// (seconds).
const GPUWaitEnv = "CLUSTERDECK_GPU_WAIT_SECONDS"

// MungeKey is the cluster's Slurm munge key (1024 bytes, the size
// mungekey(8) creates): the same on every node, so they trust each other.
func MungeKey(keys Keys) []byte { return keys("clusterdeck/munge-key", 1024) }

func slurmInstall(in Input) Install {
	files := map[string]string{
		"/etc/slurm/slurm.conf": in.Spec.SlurmConf(),
		"/etc/slurm/gres.conf":  in.Spec.GresConf(),
		mungeKeyPath:            base64.StdEncoding.EncodeToString(MungeKey(in.Keys)),
	}
	return Install{Files: files, Script: SlurmScript(in.Spec, in.Rank)}
}

// SlurmScript installs Slurm on node rank: slurmctld on the controller and
// slurmd everywhere (node-0 runs jobs too), with the shared munge key. It
// is safe to run twice, and runs with or without systemd:
//
//   - the cgroup mode is read from the machine (cgroup v2 with systemd, v1
//     with writable freezer/cpuset/memory/devices hierarchies, else none)
//     and plugins.conf and cgroup.conf are written for it
//     (nodespec.SlurmPlugins);
//   - with GPUs, it waits (GPUDeviceWait at most) for /dev/nvidia* before
//     starting slurmd and says so, and fails, when they never appear;
//   - slurmd is started as `slurmd -N <node>`, so the host name need not be
//     the node's name; where systemd runs PID 1 the Debian units are used
//     (with SLURMD_OPTIONS in /etc/default/slurmd), elsewhere the daemons
//     are started directly, each replacing the one its pid file names.
func SlurmScript(spec nodespec.Cluster, rank int) string {
	controller := rank == 0
	self := Input{Spec: spec, Rank: rank}.Self()
	pkgs, units := "munge slurm-client slurmd", "munge slurmd"
	if controller {
		pkgs, units = pkgs+" slurmctld", "munge slurmctld slurmd"
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("export DEBIAN_FRONTEND=noninteractive")
	w("if ! command -v slurmd >/dev/null || ! command -v munged >/dev/null%s; then", map[bool]string{true: " || ! command -v slurmctld >/dev/null", false: ""}[controller])
	w("  apt-get update -q")
	w("  apt-get install -y -q %s", pkgs)
	w("fi")
	w("install -d -m 700 -o munge -g munge /etc/munge")
	w("base64 -d %s > /etc/munge/munge.key", mungeKeyPath)
	w("rm -f %s", mungeKeyPath)
	w("chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key")
	w("install -d -o slurm -g slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm")
	// The cgroup mode, from what the machine reports.
	w("# Process tracking: decided from this machine's cgroups.")
	w("cgroups=%s", nodespec.CgroupNone)
	w(`if [ -n "${%s:-}" ]; then`, SlurmCgroupsEnv)
	w(`  cgroups=$%s`, SlurmCgroupsEnv)
	w("elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -d /run/systemd/system ]; then")
	w("  cgroups=%s", nodespec.CgroupV2)
	w("elif [ -d /sys/fs/cgroup/freezer ] && [ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/devices ] &&")
	w("  mkdir /sys/fs/cgroup/freezer/clusterdeck-probe 2>/dev/null && rmdir /sys/fs/cgroup/freezer/clusterdeck-probe; then")
	w("  cgroups=%s", nodespec.CgroupV1)
	w("fi")
	w("case $cgroups in")
	for _, mode := range []string{nodespec.CgroupV2, nodespec.CgroupV1, nodespec.CgroupNone} {
		plugins, cgroup := nodespec.SlurmPlugins(mode)
		w("%s)", mode)
		w("  cat > %s <<'CLUSTERDECK_EOF'\n%sCLUSTERDECK_EOF", nodespec.SlurmPluginsPath, plugins)
		w("  cat > /etc/slurm/cgroup.conf <<'CLUSTERDECK_EOF'\n%sCLUSTERDECK_EOF", cgroup)
		w("  ;;")
	}
	w("esac")
	w(`echo "slurm: cgroups $cgroups ($(grep ^ProctrackType %s))"`, nodespec.SlurmPluginsPath)
	if spec.GPUsPerNode > 0 {
		w("# slurmd stops when a gres.conf device is missing: wait for the driver.")
		w("waited=0; limit=${%s:-%d}", GPUWaitEnv, int(GPUDeviceWait.Seconds()))
		w(`until [ -e /dev/nvidia%d ]; do`, spec.GPUsPerNode-1)
		w("  if [ $waited -ge $limit ]; then")
		w(`    echo "slurm: the GPU devices %s did not appear within $limit s (is the NVIDIA driver loaded?); not starting slurmd" >&2`, spec.GPUDevices())
		w("    exit 1")
		w("  fi")
		w("  [ $waited -gt 0 ] || echo \"slurm: waiting for the GPU devices %s\"", spec.GPUDevices())
		w("  sleep 5; waited=$((waited + 5))")
		w("done")
	}
	w(`echo 'SLURMD_OPTIONS="-N %s"' > /etc/default/slurmd`, self.Name)
	w("if [ -d /run/systemd/system ]; then")
	w("  systemctl enable %s", units)
	w("  systemctl restart %s", units)
	w("else")
	w("  # No systemd (containers): start the daemons directly.")
	w("  restart() { pidfile=$1; shift; if [ -s \"$pidfile\" ]; then kill \"$(cat \"$pidfile\")\" 2>/dev/null || true; sleep 1; fi; \"$@\"; }")
	w("  install -d -o munge -g munge -m 755 /run/munge")
	w("  restart /run/munge/munged.pid runuser -u munge -- /usr/sbin/munged")
	if controller {
		w("  restart /run/slurmctld.pid /usr/sbin/slurmctld")
	}
	w("  restart /run/slurmd.pid /usr/sbin/slurmd -N %s", self.Name)
	w("fi")
	return b.String()
}
