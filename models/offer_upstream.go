package models

import "gorm.io/gorm"

func up0850OfferUpstream(tx *gorm.DB) error {
	// The cloud behind an aggregator's offer (OP1): kept, not overwritten
	// by the aggregator's own name.
	return tx.Exec("ALTER TABLE offers ADD COLUMN upstream varchar(64) NOT NULL DEFAULT ''").Error
}

func up0990OfferNics(tx *gorm.DB) error {
	// Each offer's fabric cards and their line rate (X13): a ring's bus
	// bandwidth is judged by what the cards carry.
	if err := tx.Exec("ALTER TABLE offers ADD COLUMN nics integer NOT NULL DEFAULT 0").Error; err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE offers ADD COLUMN nic_gbps integer NOT NULL DEFAULT 0").Error
}

func up0991ClusterNics(tx *gorm.DB) error {
	// A cluster keeps its offer's fabric cards from launch (X13), as it
	// keeps its price.
	if err := tx.Exec("ALTER TABLE clusters ADD COLUMN nics integer NOT NULL DEFAULT 0").Error; err != nil {
		return err
	}
	return tx.Exec("ALTER TABLE clusters ADD COLUMN nic_gbps integer NOT NULL DEFAULT 0").Error
}
