package models

import "context"

// CheckNodeGPUs is a check-in's GPU check (step b), for the X19 tests.
func CheckNodeGPUs(s *Store, ctx context.Context, c Cluster, n ClusterNode, smi string) (string, error) {
	return s.checkNodeGPUs(ctx, c, n, smi)
}

// ForgetGPUMachine is a replacement's reset of a machine's GPU state.
func ForgetGPUMachine(s *Store, ctx context.Context, c Cluster, rank int) error {
	return s.forgetGPUMachine(ctx, c.ID, rank)
}
