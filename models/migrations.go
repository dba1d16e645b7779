package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Migration is one append-only schema step. IDs are "NNNN_snake_description";
// each step declares its own struct copies, so later model changes never
// rewrite history (never pass a live model to a migration). Never edit or
// reorder a migration that has shipped: add one at the end of migrations.
// TestMigrationsCoverModels checks that migrating an empty database gives
// every model field its column; TestMigrationListIsAppendOnly holds the
// shipped ids (OP4).
type Migration struct {
	ID string
	Up func(tx *gorm.DB) error
}

// migrations is the schema's whole history, in the order it is applied.
// Each step's function lives beside the models it shapes; this list is the
// one place that orders them. A new step goes at the end, with an id above
// the last one here.
var migrations = []Migration{
	{ID: "0001_offers", Up: up0001Offers},
	{ID: "0002_job_leases", Up: up0002JobLeases},
	{ID: "0003_catalog_version", Up: up0003CatalogVersion},
	{ID: "0100_accounts", Up: up0100Accounts},
	{ID: "0101_environment_names", Up: up0101EnvironmentNames},
	{ID: "0102_invites", Up: up0102Invites},
	{ID: "0103_login_throttles", Up: up0103LoginThrottles},
	{ID: "0104_ssh_keys", Up: up0104SshKeys},
	{ID: "0105_api_keys", Up: up0105ApiKeys},
	{ID: "0106_audit_log", Up: up0106AuditLog},
	{ID: "0107_mail_outbox", Up: up0107MailOutbox},
	{ID: "0110_ended_sessions", Up: up0110EndedSessions},
	{ID: "0200_ledger", Up: up0200Ledger},
	{ID: "0201_quotes", Up: up0201Quotes},
	{ID: "0202_clusters", Up: up0202Clusters},
	{ID: "0203_node_logs", Up: up0203NodeLogs},
	{ID: "0210_software_tasks", Up: up0210SoftwareTasks},
	{ID: "0220_node_gpu_checks", Up: up0220NodeGpuChecks},
	{ID: "0221_cluster_nccl_checks", Up: up0221ClusterNcclChecks},
	{ID: "0230_node_starts", Up: up0230NodeStarts},
	{ID: "0231_drop_generated_kubeconfigs", Up: up0231DropGeneratedKubeconfigs},
	{ID: "0300_capacity_requests", Up: up0300CapacityRequests},
	{ID: "0400_usage", Up: migrateUsage},
	{ID: "0401_top_ups", Up: up0401TopUps},
	{ID: "0410_auto_recharge", Up: up0410AutoRecharge},
	{ID: "0500_cluster_health", Up: up0500ClusterHealth},
	{ID: "0600_provider_settings", Up: up0600ProviderSettings},
	{ID: "0601_private_offers", Up: up0601PrivateOffers},
	{ID: "0602_capacity_request_idempotency", Up: up0602CapacityRequestIdempotency},
	{ID: "0700_stop", Up: migrateStop},
	{ID: "0701_balance_episodes", Up: up0701BalanceEpisodes},
	{ID: "0720_budgets", Up: up0720Budgets},
	{ID: "0740_node_join", Up: up0740NodeJoin},
	{ID: "0760_volumes", Up: up0760Volumes},
	{ID: "0761_node_mounts", Up: up0761NodeMounts},
	{ID: "0780_password_resets", Up: up0780PasswordResets},
	{ID: "0850_offer_upstream", Up: up0850OfferUpstream},
	{ID: "0870_node_claims", Up: up0870NodeClaims},
	{ID: "0871_node_mesh_port", Up: up0871NodeMeshPort},
	{ID: "0880_ssh_machines", Up: up0880SshMachines},
	{ID: "0910_payment_mismatches", Up: up0910PaymentMismatches},
	{ID: "0920_idem_keys_per_env", Up: up0920IdemKeysPerEnv},
	{ID: "0921_org_volume_quota", Up: up0921OrgVolumeQuota},
	{ID: "0950_webhooks", Up: up0950Webhooks},
	{ID: "0960_verification", Up: up0960Verification},
	{ID: "0965_health_damping", Up: up0965HealthDamping},
	{ID: "0966_machine_track", Up: up0966MachineTrack},
	{ID: "0970_sim_clouds", Up: up0970SimClouds},
	{ID: "0980_gpu_telemetry", Up: up0980GpuTelemetry},
	{ID: "0985_gpu_watch", Up: up0985GpuWatch},
	{ID: "0990_offer_nics", Up: up0990OfferNics},
	{ID: "0991_cluster_nics", Up: up0991ClusterNics},
	{ID: "0992_launch_outcomes", Up: up0992LaunchOutcomes},
	{ID: "0993_tenant_bounds", Up: up0993TenantBounds},
	{ID: "0995_webhook_secrets_sealed", Up: up0995WebhookSecretsSealed},
	{ID: "0996_verify_unbilled", Up: up0996VerifyUnbilled},
	{ID: "1010_cluster_billed_price", Up: up1010ClusterBilledPrice},
	{ID: "1030_handed_over", Up: up1030HandedOver},
	{ID: "1080_mail_outbox_kind", Up: up1080MailOutboxKind},
}

// Migrations returns every migration in the order Migrate applies them.
func Migrations() []Migration { return append([]Migration(nil), migrations...) }

type schemaMigration struct {
	ID        string `gorm:"primaryKey;size:128"`
	AppliedAt time.Time
}

func (schemaMigration) TableName() string { return "schema_migrations" }

// migrationLockKey is the PostgreSQL advisory lock that serialises start-up
// migrations across instances (OP4).
const migrationLockKey = 7_404_031_001

// Migrate applies every pending migration in one transaction. On PostgreSQL
// the transaction holds an advisory lock, so instances starting together
// migrate once; SQLite's immediate transactions serialise writers already.
// It returns the ids it applied.
func Migrate(ctx context.Context, db *gorm.DB) ([]string, error) {
	var applied []string
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockKey).Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		if err := tx.AutoMigrate(&schemaMigration{}); err != nil {
			return fmt.Errorf("schema_migrations: %w", err)
		}
		var done []string
		if err := tx.Model(&schemaMigration{}).Pluck("id", &done).Error; err != nil {
			return err
		}
		have := make(map[string]bool, len(done))
		for _, id := range done {
			have[id] = true
		}
		for _, m := range Migrations() {
			if have[m.ID] {
				continue
			}
			if err := m.Up(tx); err != nil {
				return fmt.Errorf("migration %s: %w", m.ID, err)
			}
			if err := tx.Create(&schemaMigration{ID: m.ID, AppliedAt: time.Now().UTC()}).Error; err != nil {
				return err
			}
			applied = append(applied, m.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("models: migrate: %w", err)
	}
	return applied, nil
}
