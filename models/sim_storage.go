package models

import (
	"time"

	"gorm.io/gorm"
)

// simCloudV0970 is the simulated cloud's table as migration 0970 created
// it: one row per simulated cloud with its versioned state and the lease of
// the instance running its machines' agents (OP1, OP4). The simulated cloud
// (providers/sim) reads and writes it; the table is created here, like
// every table, so a fresh schema has it and the cloud creates nothing.
type simCloudV0970 struct {
	Name        string `gorm:"primaryKey;size:64"`
	Version     int64  `gorm:"not null"`
	State       string `gorm:"type:text;not null"`
	AgentHolder string `gorm:"size:200;not null;default:''"`
	AgentUntil  time.Time
	UpdatedAt   time.Time
}

func (simCloudV0970) TableName() string { return "sim_clouds" }

func up0970SimClouds(tx *gorm.DB) error {
	// Earlier versions of the simulated cloud created the same table
	// themselves: keep a database that already has it.
	if tx.Migrator().HasTable(&simCloudV0970{}) {
		return nil
	}
	return tx.Migrator().CreateTable(&simCloudV0970{})
}
