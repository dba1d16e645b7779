package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Markup (OP2) is applied in one place, domain.CustomerPrice (with its
// rounding rule), to the catalog's two provider rates as the stored
// catalog is read (O7, Q3, Q6).

// withMarkup is o at the rates its customers pay.
func withMarkup(o Offer, bp MarkupBP) Offer {
	o.PerGPUHour = CustomerPrice(o.PerGPUHour, bp)
	o.DiskGBHour = CustomerPrice(o.DiskGBHour, bp)
	return o
}

// ProviderSetting is the operator's setting for one provider: its markup.
// A provider without a row uses the store's DefaultMarkup.
type ProviderSetting struct {
	Provider  string `gorm:"primaryKey;size:64"`
	MarkupBP  int    `gorm:"column:markup_bp"`
	UpdatedBy string `gorm:"size:300"`
	UpdatedAt time.Time
}

func up0600ProviderSettings(tx *gorm.DB) error {
	type providerSetting struct {
		Provider  string `gorm:"primaryKey;size:64"`
		MarkupBP  int    `gorm:"column:markup_bp"`
		UpdatedBy string `gorm:"size:300"`
		UpdatedAt time.Time
	}
	return tx.Table("provider_settings").Migrator().CreateTable(&providerSetting{})
}

// Markups is each provider's markup: the environment's (EnvMarkups) first,
// then the operator's setting, else the store's default (Markups.For).
type Markups struct {
	Default MarkupBP
	ByName  map[string]MarkupBP
	Env     map[string]MarkupBP
}

// Where a provider's markup comes from (Markups.Source).
const (
	MarkupFromEnv      = "environment"
	MarkupFromOperator = "operator"
	MarkupFromDefault  = "default"
)

// For is provider's markup.
func (m Markups) For(provider string) MarkupBP {
	if bp, ok := m.Env[provider]; ok {
		return bp
	}
	if bp, ok := m.ByName[provider]; ok {
		return bp
	}
	return m.Default
}

// Source is where provider's markup comes from: MarkupFromEnv,
// MarkupFromOperator or MarkupFromDefault.
func (m Markups) Source(provider string) string {
	if _, ok := m.Env[provider]; ok {
		return MarkupFromEnv
	}
	if _, ok := m.ByName[provider]; ok {
		return MarkupFromOperator
	}
	return MarkupFromDefault
}

// ErrMarkupFromEnv refuses a change of a markup the environment sets.
var ErrMarkupFromEnv = fmt.Errorf("the markup is set by the environment: %w", ErrConflict)

// Markups reads every provider's markup.
func (s *Store) Markups(ctx context.Context) (Markups, error) {
	var rows []ProviderSetting
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return Markups{}, fmt.Errorf("models: markups: %w", err)
	}
	m := Markups{Default: s.settings.DefaultMarkup, ByName: make(map[string]MarkupBP, len(rows)), Env: s.settings.EnvMarkups}
	for _, r := range rows {
		m.ByName[r.Provider] = r.MarkupBP
	}
	return m, nil
}

// customerPrices turns catalog rows into what customers pay: each offer at
// its provider's markup. Every read of the catalog that prices for a
// customer goes through it (the picker's snapshot, FitOffer).
func (s *Store) customerPrices(ctx context.Context, offers []Offer) ([]Offer, error) {
	m, err := s.Markups(ctx)
	if err != nil {
		return nil, err
	}
	for i := range offers {
		offers[i] = withMarkup(offers[i], m.For(offers[i].Provider))
	}
	return offers, nil
}

// SetProviderMarkup is the operator's markup for provider (OP2), as a
// percentage string (refused with ErrMarkupFromEnv when the environment
// sets it); it applies to prices quoted from now on (locked quotes
// and running clusters keep their rates). The setting and the audit entry
// commit together, with a bump of the catalog version, so the picker's
// snapshot of customer prices (catalog.go) is reloaded at once.
func (x Actions) SetProviderMarkup(ctx context.Context, provider, percent string) (MarkupBP, error) {
	bp, err := ParsePercent(percent)
	switch {
	case err != nil:
		return 0, FieldErrors{"markup": "Enter a percentage like 12 or 12.5 (at most two decimals)."}
	case bp > MaxMarkupBP:
		return 0, FieldErrors{"markup": "Enter at most 500%."}
	case provider == "" || len(provider) > 64:
		return 0, FieldErrors{"provider": "Unknown provider."}
	}
	if _, ok := x.s.settings.EnvMarkups[provider]; ok {
		return 0, ErrMarkupFromEnv
	}
	err = x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		row := ProviderSetting{Provider: provider, MarkupBP: bp, UpdatedBy: x.a.Name, UpdatedAt: tx.Now()}
		err := tx.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "provider"}},
			DoUpdates: clause.AssignmentColumns([]string{"markup_bp", "updated_by", "updated_at"})}).Create(&row).Error
		if err != nil {
			return nil, fmt.Errorf("models: set markup of %s: %w", provider, err)
		}
		if err := tx.bumpCatalogVersion(ctx); err != nil {
			return nil, err
		}
		return x.audit("provider.markup", provider, PercentText(bp)), nil
	})
	return bp, err
}
