package models

import "gorm.io/gorm"

func init() {
	register(Migration{ID: "0850_offer_upstream", Up: func(tx *gorm.DB) error {
		// The cloud behind an aggregator's offer (OP1): kept, not overwritten
		// by the aggregator's own name.
		return tx.Exec("ALTER TABLE offers ADD COLUMN upstream varchar(64) NOT NULL DEFAULT ''").Error
	}})
}
