package models

import (
	"context"
	"fmt"
	"time"
)

// No check runs on a cluster's GPUs once it is the customer's (X13),
// unless the customer confirms a warning that names the disruption.

// DisruptionError refuses "run verification again" on a handed-over
// cluster without the customer's confirmation; its message names what the
// checks do to the cluster's jobs. It unwraps to ErrConflict.
type DisruptionError struct {
	Cluster      Cluster
	StartRunning int // machines whose start command runs now
}

func (e *DisruptionError) Error() string { return e.Cluster.VerifyDisruption(e.StartRunning) }

// Unwrap makes the refusal a conflict with the cluster's state.
func (e *DisruptionError) Unwrap() error { return ErrConflict }

// VerifyDisruption is the warning the customer confirms before
// verification runs again on a cluster handed over to them: what runs on
// which GPUs, for how long, and what it does to a job running there.
func (c Cluster) VerifyDisruption(startRunning int) string {
	job := "any job running on it"
	if startRunning > 0 {
		job = fmt.Sprintf("the start command running on %d of its %d machines", startRunning, c.Nodes)
	}
	return fmt.Sprintf("Running verification again takes every GPU of all %d machines for about %d minutes "+
		"(dcgmi diag and a stress test on each machine, then NCCL all-reduce tests across the fabric): "+
		"%s slows down, runs out of GPU memory or fails meanwhile. Confirm the disruption to run it.",
		c.Nodes, c.VerifyMinutes(), job)
}

// VerifyMinutes is about how long verification takes on c (whole minutes,
// rounded up): the machine check, the ring all-reduce and, with three
// machines or more, the waves of pairs (two, three when odd).
func (c Cluster) VerifyMinutes() int {
	d := MachineCheckDuration + RingCheckDuration
	if c.Nodes >= 3 {
		waves := 2
		if c.Nodes%2 == 1 {
			waves = 3
		}
		d += time.Duration(waves) * PairWaveDuration
	}
	return int((d + time.Minute - 1) / time.Minute)
}

// StartCommandsRunning counts the cluster's machines whose start command
// runs now (N3).
func (s *Store) StartCommandsRunning(ctx context.Context, clusterID string) (int, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&NodeStart{}).Where("cluster_id = ? AND state = ?", clusterID, StartRunning).Count(&n).Error
	return int(n), err
}

// VerifyBillingLine says what verification costs the customer on a
// launch of nodes machines (X13): nothing.
func VerifyBillingLine(nodes int) string {
	return fmt.Sprintf("Verification (about %d min) and any swap are not billed; billing starts at hand-over "+
		"(with software, when its install starts).", Cluster{Nodes: nodes}.VerifyMinutes())
}
