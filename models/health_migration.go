package models

import (
	"strings"

	"gorm.io/gorm"
)

// 0500: health, recovery and reconcile (R1–R5, X10). Plain SQL per
// dialect, frozen here: later model changes never rewrite it. 0202 created
// its tables from frozen structs, so every database gets these columns here.
func up0500ClusterHealth(tx *gorm.DB) error {
	ts, serial := "datetime", "INTEGER PRIMARY KEY AUTOINCREMENT"
	if tx.Dialector.Name() == "postgres" {
		ts, serial = "timestamptz", "BIGSERIAL PRIMARY KEY"
	}
	columns := []struct{ table, name, def string }{
		{"clusters", "recovery_mode", "varchar(16) NOT NULL DEFAULT ''"},
		{"clusters", "recovery_max_attempts", "integer NOT NULL DEFAULT 0"},
		{"clusters", "recovery_cooldown_minutes", "integer NOT NULL DEFAULT 0"},
		{"clusters", "degraded_from", "varchar(16) NOT NULL DEFAULT ''"},
		{"clusters", "episodes", "integer NOT NULL DEFAULT 0"},
		{"clusters", "episode_started_at", "TS"},
		{"clusters", "recovery_attempts", "integer NOT NULL DEFAULT 0"},
		{"clusters", "recovery_last_at", "TS"},
		{"clusters", "recovery_next_at", "TS"},
		{"clusters", "recovery_outcome", "text NOT NULL DEFAULT ''"},
		{"clusters", "recover_requested_at", "TS"},
		{"clusters", "reconciled_at", "TS"},
		{"cluster_nodes", "down_since", "TS"},
		{"cluster_nodes", "down_passes", "integer NOT NULL DEFAULT 0"},
		{"cluster_nodes", "seen", "varchar(255) NOT NULL DEFAULT ''"},
	}
	for _, c := range columns {
		def := strings.Replace(c.def, "TS", ts, 1)
		if err := tx.Exec("ALTER TABLE " + c.table + " ADD COLUMN " + c.name + " " + def).Error; err != nil {
			return err
		}
	}
	for _, q := range []string{
		`CREATE TABLE provider_leaks (
			id ` + serial + `,
			cluster_id varchar(32) NOT NULL,
			org_id varchar(32) NOT NULL,
			provider varchar(64) NOT NULL,
			group_name varchar(191) NOT NULL,
			node_id varchar(128) NOT NULL,
			state varchar(32) NOT NULL,
			found_at ` + ts + ` NOT NULL,
			released_at ` + ts + `
		)`,
		"CREATE UNIQUE INDEX idx_provider_leaks_node ON provider_leaks (cluster_id, node_id)",
		"CREATE INDEX idx_clusters_status_id ON clusters (status, id)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}
