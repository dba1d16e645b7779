package models_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// allModels is every struct the store reads and writes as a table row. A new
// model goes here; TestMigrationsCoverModels fails until it does.
var allModels = []any{
	&models.Org{}, &models.User{}, &models.Membership{}, &models.Environment{},
	&models.Invite{}, &models.LoginThrottle{}, &models.SSHKey{}, &models.APIKey{},
	&models.AuditRecord{}, &models.OutboxMail{},
	&models.GPUWatch{},                       // gpuwatch.go (X15)
	&models.Run{}, &models.RunInterruption{}, // run.go (X17)
	&models.Reservation{}, &models.ReservationEvent{}, // reservation.go (X18)
	&models.Offer{}, &models.CatalogVersion{}, &models.JobLease{}, &models.JobRun{},
	&models.LedgerEntry{}, &models.Quote{},
	&models.Cluster{}, &models.ClusterNode{}, &models.ClusterEvent{}, &models.NodeLogLine{},
	&models.SoftwareRun{}, &models.SoftwareTask{},
	&models.QuoteRequest{}, &models.EndedSession{},
	&models.NodeGPUCheck{}, &models.NCCLCheck{}, &models.ProviderLeak{},
	&models.ProviderSetting{}, &models.PrivateOffer{}, &models.NodeStart{},
	&models.UsageMark{}, &models.MachineInterval{}, &models.TopUp{}, &models.ReceivedPaymentEvent{},
	&models.AutoRecharge{}, &models.Charge{}, &models.BillingGap{}, &models.LaunchRecord{}, &models.MachineFault{}, &models.MachineQuarantine{}, &models.BalanceEpisode{}, &models.Budget{}, &models.BudgetAlert{},
	&models.WebhookEndpoint{}, &models.WebhookDelivery{}, &models.WebhookAttempt{},
	&models.Volume{}, &models.PasswordReset{}, &models.NodeMount{}, &models.SSHMachine{},
	&models.PaymentMismatch{}, &models.GPUPoint{}, &models.GPUHour{}, &models.GPUMachine{},
	&models.VerifyRun{}, &models.VerifyTask{},
	&sim.CloudRow{}, // the simulated cloud's table, created by the product's migrations
}

// readModels read a table another model owns; their columns are checked
// too, but they add no table.
var readModels = []any{&models.UsageEntry{}}

// TestMigrationsCoverModels migrates an empty database and checks that every
// field of every model has its column, and every table belongs to a model.
// Migrations are frozen (they never read the live structs), so a field added
// to a model without a migration fails here instead of in production, where
// upgraded databases would lack the column.
func TestMigrationsCoverModels(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		tables := map[string]bool{}
		for i, m := range append(append([]any{}, allModels...), readModels...) {
			s, err := schema.Parse(m, &sync.Map{}, db.NamingStrategy)
			if err != nil {
				t.Fatalf("parse %T: %v", m, err)
			}
			if i < len(allModels) {
				tables[s.Table] = true
			}
			cols, err := db.Migrator().ColumnTypes(s.Table)
			if err != nil || len(cols) == 0 {
				t.Errorf("%s: no table %q after migrating (%v)", s.Name, s.Table, err)
				continue
			}
			have := make([]string, 0, len(cols))
			for _, c := range cols {
				have = append(have, c.Name())
			}
			for _, f := range s.Fields {
				if f.DBName != "" && !slices.Contains(have, f.DBName) {
					t.Errorf("%s.%s: no column %s.%s after migrating: add a migration", s.Name, f.Name, s.Table, f.DBName)
				}
			}
		}
		names, err := db.Migrator().GetTables()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !tables[name] && name != "schema_migrations" && name != "sqlite_sequence" {
				t.Errorf("table %s has no model in allModels", name)
			}
		}
		if len(tables) != len(allModels) {
			t.Errorf("allModels lists %d models for %d tables", len(allModels), len(tables))
		}
	})
}
