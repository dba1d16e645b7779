package models

// Problem is the cluster's lastError as a value (domain.LastError).
func (c Cluster) Problem() LastError { return c.Lifecycle().Problem() }
