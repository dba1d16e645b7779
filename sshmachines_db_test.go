package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
)

// testPrivateKey is a fresh OpenSSH ed25519 private key.
func testPrivateKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// OP1: the ssh provider sells the machines added on the admin page (the
// database) beside its machines file: an added machine is an offer at the
// next catalog run, with its pasted key opened for the provider only (the
// row holds it sealed); a removed one is no longer sold. PROVIDERS=ssh works
// without a machines file. On SQLite and PostgreSQL.
func TestSSHProviderReadsDBMachines(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		dir := t.TempDir()
		file := filepath.Join(dir, "machines.yaml")
		writeFile(t, file, "machines:\n  - {name: rack-a, host: 192.0.2.10, key_path: /k, gpus: 8, accelerator: H100_80GB, location: rack-1, price_per_hour: \"20.00\"}\n")
		env := map[string]string{"PROVIDERS": "ssh", "SSH_MACHINES_FILE": file, "DATA_DIR": dir,
			"SESSION_ENC_KEY": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}
		cfg, err := loadConfig(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		c, err := buildProviders(cfg, models.RealClock{}, db, "test")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.SSHFile) != 1 || c.SSHFile[0].Name != "rack-a" {
			t.Errorf("the file's machines: %+v", c.SSHFile)
		}
		p, _ := c.Registry.Get("ssh")
		offers, err := p.ListOffers(ctx)
		if err != nil || len(offers) != 1 {
			t.Fatalf("file only: %+v %v", offers, err)
		}

		store := models.NewStoreWith(db, models.RealClock{}, cfg.settings(nil))
		op := store.As(models.Actor{OrgID: "org_ops", Name: "op@deck.example"})
		key := testPrivateKey(t)
		if _, err := op.AddSSHMachine(ctx, models.SSHMachineInput{Name: "desk-1", Host: "192.0.2.20", Port: "2222", User: "ubuntu",
			PrivateKey: key, GPUs: "2", Accelerator: "L40S", Location: "office", PriceHour: "3.00"}, []string{"rack-a"}); err != nil {
			t.Fatal(err)
		}
		var row models.SSHMachine
		if err := db.Where("name = ?", "desk-1").Take(&row).Error; err != nil || row.KeySealed == "" ||
			bytes.Contains([]byte(row.KeySealed), []byte("PRIVATE KEY")) || row.PricePerHour != 3_000_000 {
			t.Fatalf("stored: %+v %v", row, err)
		}
		offers, err = p.ListOffers(ctx)
		if err != nil || len(offers) != 2 {
			t.Fatalf("after the add: %+v %v", offers, err)
		}
		var desk *providers.Offer
		for i := range offers {
			if offers[i].Location == "office" {
				desk = &offers[i]
			}
		}
		if desk == nil || desk.Accelerator != "L40S" || desk.GPUsPerNode != 2 || desk.PerGPUHourUSD != 1_500_000 || *desk.NodesAvailable != 1 {
			t.Errorf("the added machine's offer: %+v", desk)
		}
		ms, err := sshMachineSource(store)(ctx)
		if err != nil || len(ms) != 1 || string(ms[0].PrivateKey) != key || ms[0].Port != 2222 || ms[0].User != "ubuntu" {
			t.Errorf("the provider's view of it: %+v %v", ms, err)
		}
		// Another secret does not open the key: the machine is left out, not sold with a broken key.
		other := models.NewStoreWith(db, models.RealClock{}, models.Settings{MachineKeySecret: machineKeySecret([]byte("another session encryption key!!"))})
		if ms, err := sshMachineSource(other)(ctx); err != nil || len(ms) != 0 {
			t.Errorf("a key sealed under another secret: %+v %v", ms, err)
		}

		if err := op.RemoveSSHMachine(ctx, "desk-1"); err != nil {
			t.Fatal(err)
		}
		if offers, err = p.ListOffers(ctx); err != nil || len(offers) != 1 || offers[0].Location != "rack-1" {
			t.Errorf("after the removal: %+v %v", offers, err)
		}

		// Without a machines file the provider sells the page's machines only.
		delete(env, "SSH_MACHINES_FILE")
		cfg, _ = loadConfig(func(k string) string { return env[k] })
		c, err = buildProviders(cfg, models.RealClock{}, db, "test")
		if err != nil {
			t.Fatal(err)
		}
		p, _ = c.Registry.Get("ssh")
		if offers, err := p.ListOffers(ctx); err != nil || len(offers) != 0 {
			t.Errorf("no file, no machines: %+v %v", offers, err)
		}
		if _, err := op.AddSSHMachine(ctx, models.SSHMachineInput{Name: "desk-2", Host: "desk2.lan", KeyPath: "/etc/clusterdeck/id_ed25519",
			Location: "office", PriceHour: "0.40"}, nil); err != nil {
			t.Fatal(err)
		}
		if offers, err := p.ListOffers(ctx); err != nil || len(offers) != 1 || offers[0].Accelerator != "CPU" {
			t.Errorf("a key-path machine without GPUs: %+v %v", offers, err)
		}
	})
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
