package models

import "context"

// Terminate records the actor's intent to terminate a cluster of their
// organisation (L7), with its event and audit entry in one transaction.
// Repeating it is harmless and audited again. The terminate job releases
// the machines.
func (x Actions) Terminate(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.RequestTerminate(ctx, x.a.OrgID, clusterID, x.a.Name); err != nil {
			return nil, err
		}
		return x.audit("cluster.terminate", c.ID, c.Name), nil
	})
	return c, err
}

// RetryInstall is L6's "retry install" of a cluster degraded by its
// software: the new attempt, the transition, its event and the audit entry
// commit together.
func (x Actions) RetryInstall(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.RetryInstall(ctx, x.a.OrgID, clusterID, x.a.Name); err != nil {
			return nil, err
		}
		return x.audit("cluster.retry_install", c.ID, c.Name), nil
	})
	return c, err
}

// Kubeconfig hands a Kubernetes cluster's kubeconfig to the actor (S1): it
// is given out only once its download is in the audit log.
func (x Actions) Kubeconfig(ctx context.Context, clusterID string) (string, error) {
	var kc string
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if kc, err = tx.Kubeconfig(ctx, x.a.OrgID, clusterID); err != nil {
			return nil, err
		}
		return x.audit("cluster.kubeconfig", clusterID, "downloaded"), nil
	})
	return kc, err
}

// Resume is B6's resume of a stopped cluster by the actor: admission (L2)
// and the quotas are checked under the organisation's lock, and the
// request, its event and the audit entry commit together. The stop job
// starts the machines.
func (x Actions) Resume(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.RequestResume(ctx, x.a.OrgID, clusterID, x.a.Name); err != nil {
			return nil, err
		}
		return x.audit("cluster.resume", c.ID, c.Name), nil
	})
	return c, err
}

// Stop is the customer's stop of a ready cluster (B6's machinery, reason
// customer): the request, its event and the audit entry commit together;
// the stop job stops every machine. See Store.RequestCustomerStop.
func (x Actions) Stop(ctx context.Context, clusterID string) (Cluster, error) {
	var c Cluster
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		var err error
		if c, err = tx.RequestCustomerStop(ctx, x.a.OrgID, clusterID, x.a.Name); err != nil {
			return nil, err
		}
		return x.audit("cluster.stop", c.ID, c.Name), nil
	})
	return c, err
}
