package models_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// shippedMigrations is every migration id that has shipped, in the order it
// was applied. A released database has run these: none may be edited,
// removed or reordered, and a new one goes after the last. Append the ids of
// a release here when it ships (OP4).
var shippedMigrations = []string{
	"0001_offers", "0002_job_leases", "0003_catalog_version", "0100_accounts",
	"0101_environment_names", "0102_invites", "0103_login_throttles", "0104_ssh_keys",
	"0105_api_keys", "0106_audit_log", "0107_mail_outbox", "0110_ended_sessions", "0200_ledger",
	"0201_quotes", "0202_clusters", "0203_node_logs", "0210_software_tasks", "0220_node_gpu_checks",
	"0221_cluster_nccl_checks", "0230_node_starts", "0231_drop_generated_kubeconfigs",
	"0300_capacity_requests", "0400_usage", "0401_top_ups", "0410_auto_recharge",
	"0500_cluster_health", "0600_provider_settings", "0601_private_offers",
	"0602_capacity_request_idempotency", "0700_stop", "0701_balance_episodes", "0720_budgets",
	"0740_node_join", "0760_volumes", "0761_node_mounts", "0780_password_resets",
	"0850_offer_upstream", "0870_node_claims", "0871_node_mesh_port", "0880_ssh_machines",
	"0910_payment_mismatches", "0920_idem_keys_per_env", "0921_org_volume_quota", "0950_webhooks",
	"0960_verification", "0965_health_damping", "0966_machine_track", "0970_sim_clouds",
	"0980_gpu_telemetry", "0985_gpu_watch", "0990_offer_nics", "0991_cluster_nics",
	"0992_launch_outcomes", "0993_tenant_bounds", "0995_webhook_secrets_sealed",
	"0996_verify_unbilled", "1010_cluster_billed_price", "1030_handed_over",
	"1080_mail_outbox_kind", "1100_runs", "1200_reservations", "1201_private_offer_terms",
}

var migrationID = regexp.MustCompile(`^[0-9]{4}_[a-z0-9]+(_[a-z0-9]+)*$`)

// checkMigrationList refuses a list that does not start with the shipped
// ids in their order, has an id twice, an id not "NNNN_snake_name", or an
// id that does not sort after the one before it (so a new id below the last
// shipped one is refused too).
func checkMigrationList(shipped, ids []string) error {
	var problems []string
	for i, want := range shipped {
		if i >= len(ids) {
			problems = append(problems, fmt.Sprintf("shipped migration %s is missing", want))
			continue
		}
		if ids[i] != want {
			problems = append(problems, fmt.Sprintf("position %d is %s but %s shipped there: a shipped migration is never edited, removed or reordered", i, ids[i], want))
		}
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if !migrationID.MatchString(id) {
			problems = append(problems, fmt.Sprintf("%s is not NNNN_snake_name", id))
		}
		if seen[id] {
			problems = append(problems, fmt.Sprintf("%s is listed twice", id))
		}
		seen[id] = true
		if i > 0 && id <= ids[i-1] {
			problems = append(problems, fmt.Sprintf("%s comes after %s but does not sort after it: a new migration takes an id above the last one", id, ids[i-1]))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// TestMigrationListIsAppendOnly holds the shipped migration ids: the list
// Migrate applies starts with them in their order, and every id after them
// sorts above the one before (OP4).
func TestMigrationListIsAppendOnly(t *testing.T) {
	var ids []string
	for _, m := range models.Migrations() {
		if m.Up == nil {
			t.Errorf("%s has no Up", m.ID)
		}
		ids = append(ids, m.ID)
	}
	if err := checkMigrationList(shippedMigrations, ids); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationListCheckRefuses: the check behind TestMigrationListIsAppendOnly
// refuses each way a list can rewrite history.
func TestMigrationListCheckRefuses(t *testing.T) {
	shipped := []string{"0001_offers", "0100_accounts", "1030_handed_over"}
	for _, tc := range []struct {
		name string
		ids  []string
		want string // "" = accepted
	}{
		{"shipped only", []string{"0001_offers", "0100_accounts", "1030_handed_over"}, ""},
		{"a new id at the end", []string{"0001_offers", "0100_accounts", "1030_handed_over", "1050_settings"}, ""},
		{"a new id below the last shipped", []string{"0001_offers", "0100_accounts", "1030_handed_over", "1020_late"}, "does not sort after"},
		{"a new id slipped in between shipped ones", []string{"0001_offers", "0050_between", "0100_accounts", "1030_handed_over"}, "shipped there"},
		{"a duplicate", []string{"0001_offers", "0100_accounts", "1030_handed_over", "1050_a", "1050_a"}, "listed twice"},
		{"shipped ones reordered", []string{"0100_accounts", "0001_offers", "1030_handed_over"}, "shipped there"},
		{"a shipped one renamed", []string{"0001_offers", "0100_accounts_v2", "1030_handed_over"}, "shipped there"},
		{"a shipped one removed", []string{"0001_offers", "1030_handed_over"}, "missing"},
		{"new ones out of order", []string{"0001_offers", "0100_accounts", "1030_handed_over", "1060_b", "1055_a"}, "does not sort after"},
		{"a malformed id", []string{"0001_offers", "0100_accounts", "1030_handed_over", "1050-Bad"}, "NNNN_snake_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMigrationList(shipped, tc.ids)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted %v", tc.ids)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("refused for another reason: %v (want %q)", err, tc.want)
			}
		})
	}
}
