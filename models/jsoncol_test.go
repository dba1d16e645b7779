package models_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// A JSON column reads back what was written, and a value that is not its
// type's JSON fails the read with an error naming the column's type: the
// row is never read as empty (on SQLite and PostgreSQL).
func TestJSONColumnsRoundTripAndRefuseCorruptValues(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		store := models.NewStore(db, models.NewFakeClock(now))
		c := models.Cluster{ID: models.NewID("cl"), OrgID: "org_j", Name: "json", Status: models.StatusReady,
			EnvJSON: models.JSONOf(map[string]string{"A": "1", "B": "two"}), PortsJSON: models.JSONOf([]int{22, 8888}),
			SSHKeysJSON: models.JSONOf([]string{"ssh-ed25519 AAAA x@y"}), CreatedAt: now, UpdatedAt: now}
		if err := db.Create(&c).Error; err != nil {
			t.Fatal(err)
		}
		got, err := store.ClusterByID(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.Env(), c.Env()) || !slices.Equal(got.Ports(), []int{22, 8888}) || !slices.Equal(got.SSHKeys(), c.SSHKeys()) {
			t.Fatalf("read back env %v ports %v keys %v", got.Env(), got.Ports(), got.SSHKeys())
		}
		if got.Recovery().Outcomes != nil {
			t.Errorf("an empty recovery_outcome reads %v, want none", got.Recovery().Outcomes)
		}

		rows := []any{
			&models.GPUMachine{ClusterID: c.ID, Rank: 0, OrgID: c.OrgID},
			&models.VerifyRun{ClusterID: c.ID, OrgID: c.OrgID, Run: 1, StartedAt: now, Deadline: now, UpdatedAt: now},
			&models.VerifyTask{ID: "vt_json", ClusterID: c.ID, OrgID: c.OrgID, Run: 1, Round: 1, Check: "ring", CreatedAt: now},
			&models.SoftwareTask{ID: "tk_json", ClusterID: c.ID, OrgID: c.OrgID, Kind: "install", CreatedAt: now},
		}
		for _, r := range rows {
			if err := db.Create(r).Error; err != nil {
				t.Fatalf("%T: %v", r, err)
			}
		}
		cluster := func() error { _, err := store.ClusterByID(ctx, c.ID); return err }
		first := func(row any) func() error {
			return func() error { return db.Where("cluster_id = ?", c.ID).First(row).Error }
		}
		for _, tc := range []struct {
			table, column, restore string
			read                   func() error
		}{
			{"clusters", "env_json", `{"A":"1"}`, cluster},
			{"clusters", "ports_json", `[22]`, cluster},
			{"clusters", "ssh_keys_json", `[]`, cluster},
			{"clusters", "recovery_outcome", ``, cluster},
			{"gpu_machines", "gpus", `[]`, first(&models.GPUMachine{})},
			{"gpu_machines", "ecc", `{}`, first(&models.GPUMachine{})},
			{"gpu_machines", "xids", `[]`, first(&models.GPUMachine{})},
			{"cluster_verifications", "report", ``, first(&models.VerifyRun{})},
			{"verify_tasks", "env", `{}`, first(&models.VerifyTask{})},
			{"software_tasks", "payload", `{"script":""}`, first(&models.SoftwareTask{})},
		} {
			if err := tc.read(); err != nil {
				t.Fatalf("%s before the corruption: %v", tc.table, err)
			}
			set := func(v string) {
				key := "cluster_id"
				if tc.table == "clusters" {
					key = "id"
				}
				if err := db.Exec("UPDATE "+tc.table+" SET "+tc.column+" = ? WHERE "+key+" = ?", v, c.ID).Error; err != nil {
					t.Fatal(err)
				}
			}
			for _, bad := range []string{`{"A":`, `"a string"`, `[1,`} {
				set(bad)
				if err := tc.read(); err == nil || !strings.Contains(err.Error(), "JSON column") {
					t.Errorf("%s.%s = %s: read gave %v, want the JSON column's error", tc.table, tc.column, bad, err)
				}
			}
			set(tc.restore)
			if err := tc.read(); err != nil {
				t.Errorf("%s.%s = %q again: %v", tc.table, tc.column, tc.restore, err)
			}
		}
	})
}

// JSON's Scan takes text and bytes, reads NULL and "" as the zero value,
// and refuses other types.
func TestJSONScan(t *testing.T) {
	var j models.JSON[map[string]int]
	if err := j.Scan([]byte(`{"a":1}`)); err != nil || j.V["a"] != 1 {
		t.Fatalf("bytes: %v %v", j.V, err)
	}
	if err := j.Scan(nil); err != nil || j.V != nil {
		t.Fatalf("NULL: %v %v", j.V, err)
	}
	if err := j.Scan(""); err != nil || j.V != nil {
		t.Fatalf(`"": %v %v`, j.V, err)
	}
	if err := j.Scan(int64(3)); err == nil {
		t.Fatal("an integer was read as JSON")
	}
	if v, err := models.JSONOf([]int{1, 2}).Value(); err != nil || v != "[1,2]" {
		t.Fatalf("Value: %v %v", v, err)
	}
}
