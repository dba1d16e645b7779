package readiness

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SlurmJobBegin and SlurmJobEnd enclose the test job's output in the Slurm
// check (see [SlurmReady]).
const (
	SlurmJobBegin = "-----BEGIN CLUSTERDECK SRUN-----"
	SlurmJobEnd   = "-----END CLUSTERDECK SRUN-----"
)

// slurmJobLine is what each task of the test job prints:
// "<slurm node name> <host name> gpus=<count of nvidia-smi -L GPU lines>".
var slurmJobLine = regexp.MustCompile(`^(\S+) (\S+) gpus=(\d+)$`)

// SlurmReady judges the full Slurm check (S2): sinfo's node states
// followed by the output of a test job that ran one task on every node
// (`srun -N<n> --ntasks-per-node=1`, with `--gres=gpu:<g>` and
// `nvidia-smi -L` when the nodes have GPUs), between [SlurmJobBegin] and
// [SlurmJobEnd]. An idle node is not enough: Slurm can list a node idle
// while every job on it fails to launch (a process tracking plugin the
// machine cannot run), so a node passes only when it is idle AND the job
// ran on it AND, with gpusPerNode > 0, the job saw at least that many GPUs.
// When some node is not idle or missing, the report says so and the job
// section is not read (the check starts the job only on an all-idle
// cluster). Lines of the job section that are not task lines (srun's errors) are
// quoted in the reason of the nodes the job missed.
func SlurmReady(output string, expected []string, gpusPerNode int) (Report, error) {
	states, job, hasJob := strings.Cut(output, SlurmJobBegin)
	job, _, _ = strings.Cut(job, SlurmJobEnd)
	rep, err := Slurm(states, expected)
	if err != nil {
		return Report{}, err
	}
	ran := map[string]int{}
	var errs []string
	for line := range strings.Lines(strings.ReplaceAll(job, "\r\n", "\n")) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if m := slurmJobLine.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[3])
			if err == nil {
				ran[m[1]] = n
				continue
			}
		}
		if len(errs) < 3 {
			errs = append(errs, clipN(line, 160))
		}
	}
	why := "the test job did not run on it"
	switch {
	case !hasJob:
		why = "no test job output (the check must run srun on every node)"
	case len(errs) > 0:
		why += ": " + strings.Join(errs, " / ")
	}
	if !rep.Ready {
		// Some node is not idle or missing: that is the reason, and the
		// job (run only when every node is idle) proves nothing either way.
		return rep, nil
	}
	rep.Healthy = 0
	for i := range rep.Nodes {
		n := &rep.Nodes[i]
		if !n.OK {
			continue
		}
		gpus, ok := ran[n.Node]
		switch {
		case !ok:
			n.OK, n.Reason = false, why
		case gpus < gpusPerNode:
			n.OK, n.Reason = false, fmt.Sprintf("the test job saw %d of %d GPUs (nvidia-smi -L)", gpus, gpusPerNode)
		default:
			rep.Healthy++
		}
	}
	rep.Ready = len(rep.Nodes) > 0 && len(rep.Missing) == 0 && len(rep.Failing()) == 0
	rep.Summary = summarize(rep, len(expected))
	return rep, nil
}
