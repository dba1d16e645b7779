package models

import "gorm.io/gorm"

// An Idempotency-Key belongs to the environment it was sent in (L1, A3): an
// API key acts in its own environment only, so another environment's key
// replaying the same key and body makes its own launch (or quote request)
// instead of answering with an object it cannot see (A3).
// Keys are unique per organisation, environment and key.
func up0920IdemKeysPerEnv(tx *gorm.DB) error {
	for _, q := range []string{
		"DROP INDEX idx_clusters_org_idem",
		"CREATE UNIQUE INDEX idx_clusters_env_idem ON clusters (org_id, env_id, idem_key)",
		"DROP INDEX idx_capacity_requests_idem",
		"CREATE UNIQUE INDEX idx_capacity_requests_env_idem ON capacity_requests (org_id, env_id, idem_key)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
