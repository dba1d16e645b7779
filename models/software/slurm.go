package software

import (
	"encoding/base64"
	"time"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
)

// Slurm: slurmctld on node-0, slurmd on every node (node-0 runs jobs too),
// one partition "gpu"; ready when sinfo lists every node idle (S2).
var Slurm = Software{
	Name:  "slurm",
	Label: "Slurm",
	Help:  "Controller on node-0, compute on every node: sbatch, srun, squeue.",
	Kinds: []string{nodespec.KindVM, nodespec.KindBareMetal, nodespec.KindContainer},

	Window:       15 * time.Minute,
	Install:      slurmInstall,
	CheckCommand: `sinfo -N -h -o "%N %T"`,
	Judge: func(output string, c nodespec.Cluster) (readiness.Report, error) {
		return readiness.Check("slurm", output, nodeNames(c), 0)
	},
}

// mungeKeyPath is where the munge key waits, base64, until the script
// installs it.
const mungeKeyPath = "/etc/clusterdeck/munge.key.b64"

// MungeKey is the cluster's Slurm munge key (1024 bytes, the size
// mungekey(8) creates): the same on every node, so they trust each other.
func MungeKey(keys Keys) []byte { return keys("clusterdeck/munge-key", 1024) }

func slurmInstall(in Input) Install {
	files := map[string]string{
		"/etc/slurm/slurm.conf": in.Spec.SlurmConf(),
		"/etc/slurm/gres.conf":  in.Spec.GresConf(),
		mungeKeyPath:            base64.StdEncoding.EncodeToString(MungeKey(in.Keys)),
	}
	return Install{Files: files, Script: slurmScript(in.Rank == 0)}
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
