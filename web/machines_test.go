package web

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

func pastedKey(t *testing.T) string {
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

// OP1: /admin/machines lists the machines file's machines (read-only) and
// those added there; an operator adds one (validated; a pasted key is
// stored sealed and never shown back, not even on a refused form) and
// removes one, refused with 409 while a cluster uses it; each change is
// audited. Non-operators get 403. On SQLite and PostgreSQL.
func TestAdminMachines(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		app := newTestAppSet(t, db, func(s *models.Settings) { s.MachineKeySecret = bytes.Repeat([]byte{7}, 32) }, func(d *Deps) {
			d.Config.Providers = []string{"sim", "ssh"}
			d.Config.SSHMachinesFile = "/etc/clusterdeck/machines.yaml"
			d.Config.SSHFileMachines = []models.SSHMachine{{Name: "rack-a", Host: "192.0.2.10", Port: 22, User: "root",
				KeyPath: "/etc/clusterdeck/id_ed25519", GPUs: 8, Accelerator: "H100_80GB", Location: "rack-1", LocationName: "Berlin", PricePerHour: 20_000_000}}
		})
		cust := app.signupAccount("ada@example.com", "Ada Labs")
		cc := app.login(cust)
		if rec := cc.get("/admin/machines"); rec.Code != http.StatusForbidden {
			t.Errorf("a customer sees the machines page: %d", rec.Code)
		}
		if rec := cc.post("/admin/machines", url.Values{"name": {"x"}}); rec.Code != http.StatusForbidden {
			t.Errorf("a customer adds a machine: %d", rec.Code)
		}
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		d := doc(t, oc.get("/admin/machines"))
		if d.Find(`[data-testid=admin-tabs] a[href="/admin/machines"][aria-current=page]`).Length() != 1 {
			t.Error("no current Machines tab in the admin nav")
		}
		file := d.Find(`[data-testid=admin-machine-row][data-machine=rack-a]`)
		if file.AttrOr("data-source", "") != "file" || file.Find(`form`).Length() != 0 ||
			!strings.Contains(file.Text(), "8× H100_80GB") || !strings.Contains(file.Text(), "$20.00/h") || !strings.Contains(file.Text(), "rack-1 (Berlin)") {
			t.Errorf("the file's machine: %q", file.Text())
		}
		if d.Find(`[data-testid=ssh-disabled]`).Length() != 0 {
			t.Error("ssh is enabled, the page says it is not")
		}

		key := pastedKey(t)
		keyBody := strings.Split(key, "\n")[2] // a line of the key's base64
		// Refused: every problem named; the pasted key is not sent back.
		bad := url.Values{"name": {"rack-a"}, "host": {"bad host"}, "port": {"70000"}, "private_key": {key}, "key_path": {"/k"},
			"gpus": {"3"}, "accelerator": {"H100_80GB"}, "location": {"rack 1"}, "price": {"1.000001"}}
		rec := oc.post("/admin/machines", bad)
		if rec.Code != http.StatusUnprocessableEntity || strings.Contains(rec.Body.String(), keyBody) {
			t.Fatalf("a bad machine: %d", rec.Code)
		}
		d = doc(t, rec)
		for _, f := range []string{"name", "host", "port", "key", "location", "price"} {
			if d.Find(`[data-testid=problem-`+f+`]`).Length() != 1 {
				t.Errorf("no problem for %s: %s", f, d.Find(`[data-testid=add-machine-form]`).Text())
			}
		}
		if d.Find(`#host`).AttrOr("value", "") != "bad host" || d.Find(`#private_key`).Text() != "" {
			t.Error("the form does not keep what was typed (bar the key)")
		}
		if rec := oc.post("/admin/machines", url.Values{"name": {"desk-1"}, "host": {"192.0.2.20"}, "location": {"office"}, "price": {"3"}}); rec.Code != 422 ||
			doc(t, rec).Find(`[data-testid=problem-key]`).Length() != 1 {
			t.Errorf("no key: %d", rec.Code)
		}

		good := url.Values{"name": {"desk-1"}, "host": {"192.0.2.20"}, "port": {"2222"}, "user": {"ubuntu"}, "private_key": {key},
			"gpus": {"2"}, "accelerator": {"L40S"}, "location": {"office"}, "location_name": {"Desk"}, "price": {"3.00"}, "vcpus": {"16"}}
		if rec := oc.post("/admin/machines", good); rec.Code != http.StatusSeeOther || location(rec) != "/admin/machines" {
			t.Fatalf("add: %d %s", rec.Code, rec.Body)
		}
		if rec := oc.post("/admin/machines", good); rec.Code != 422 {
			t.Errorf("the same name twice: %d", rec.Code)
		}
		rec = oc.get("/admin/machines")
		if strings.Contains(rec.Body.String(), keyBody) {
			t.Fatal("the page shows the pasted key")
		}
		row := doc(t, rec).Find(`[data-testid=admin-machine-row][data-machine=desk-1]`)
		if row.AttrOr("data-source", "") != "page" || strings.TrimSpace(row.Find(`[data-testid=machine-key]`).Text()) != "pasted key (stored sealed)" ||
			!strings.Contains(row.Text(), "ubuntu@192.0.2.20:2222") || !strings.Contains(row.Text(), "2× L40S") || row.Find(`[data-testid=remove-machine]`).Length() != 1 {
			t.Errorf("the added machine: %q", row.Text())
		}
		var stored models.SSHMachine
		if err := db.Where("name = ?", "desk-1").Take(&stored).Error; err != nil || stored.PricePerHour != 3_000_000 ||
			strings.Contains(stored.KeySealed, keyBody) || stored.KeySealed == "" {
			t.Errorf("stored: %+v %v", stored, err)
		}
		if opened, err := app.store.SSHMachineKey(stored); err != nil || string(opened) != key {
			t.Errorf("the sealed key does not open to the pasted one: %v", err)
		}

		// In use by a cluster: 409 naming it; once terminated, removed.
		now := app.clock.Now()
		cl := models.Cluster{ID: "cl_sshuse", OrgID: cust.org.ID, Name: "mine", Status: models.StatusReady, Provider: "ssh", Nodes: 1, PlacedAt: &now}
		if err := db.Create(&cl).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.ClusterNode{ID: "nd_sshuse", ClusterID: cl.ID, OrgID: cust.org.ID, Name: "node-0", ProviderNodeID: "desk-1", Status: models.NodeReady}).Error; err != nil {
			t.Fatal(err)
		}
		rec = oc.post("/admin/machines/desk-1/delete", nil)
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "cl_sshuse") {
			t.Errorf("remove a machine in use: %d %s", rec.Code, rec.Body)
		}
		if rec := oc.post("/admin/machines/rack-a/delete", nil); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "machines file") {
			t.Errorf("remove a file machine: %d", rec.Code)
		}
		if rec := oc.post("/admin/machines/nope/delete", nil); rec.Code != http.StatusNotFound {
			t.Errorf("remove an unknown machine: %d", rec.Code)
		}
		if err := db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("status", models.StatusTerminated).Error; err != nil {
			t.Fatal(err)
		}
		// An ssh cluster being placed has not said which machines it took yet.
		placing := models.Cluster{ID: "cl_sshplacing", OrgID: cust.org.ID, Name: "next", Status: models.StatusProvisioning, Provider: "ssh", Nodes: 2}
		if err := db.Create(&placing).Error; err != nil {
			t.Fatal(err)
		}
		if rec := oc.post("/admin/machines/desk-1/delete", nil); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "being placed") {
			t.Errorf("remove while a cluster is placed: %d", rec.Code)
		}
		if err := db.Model(&models.Cluster{}).Where("id = ?", placing.ID).Updates(map[string]any{"status": models.StatusFailed, "released_at": now}).Error; err != nil {
			t.Fatal(err)
		}
		if rec := oc.post("/admin/machines/desk-1/delete", nil); rec.Code != http.StatusSeeOther {
			t.Fatalf("remove: %d %s", rec.Code, rec.Body)
		}
		if doc(t, oc.get("/admin/machines")).Find(`[data-machine=desk-1]`).Length() != 0 {
			t.Error("the removed machine is listed")
		}
		acts := app.auditActions(oc.orgOf(t, app))
		if !contains(acts, "ssh_machine.add") || !contains(acts, "ssh_machine.remove") {
			t.Errorf("audit: %v", acts)
		}
	})
}

// Without ssh in PROVIDERS the page says the machines are not sold.
func TestAdminMachinesProviderOff(t *testing.T) {
	noSecret := func(s *models.Settings) { s.MachineKeySecret = nil } // no secret configured
	eachAppSet(t, noSecret, func(t *testing.T, app *testApp) {
		oc := operatorFor(t, app, app.signupAccount("op@deck.example", "Deck Ops"))
		d := doc(t, oc.get("/admin/machines"))
		if d.Find(`[data-testid=ssh-disabled]`).Length() != 1 || d.Find(`[data-testid=no-machines]`).Length() != 1 {
			t.Errorf("page: %s", d.Find(`[data-testid=admin-machines-page]`).Text())
		}
		// No secret configured: a pasted key is refused, a key path works.
		rec := oc.post("/admin/machines", url.Values{"name": {"desk-1"}, "host": {"h"}, "private_key": {pastedKey(t)}, "location": {"office"}, "price": {"1"}})
		if rec.Code != 422 || !strings.Contains(doc(t, rec).Find(`[data-testid=problem-key]`).Text(), "key path") {
			t.Errorf("a pasted key without a secret: %d", rec.Code)
		}
		if rec := oc.post("/admin/machines", url.Values{"name": {"desk-1"}, "host": {"h"}, "key_path": {"/etc/k"}, "location": {"office"}, "price": {"1"}}); rec.Code != 303 {
			t.Errorf("a key path: %d %s", rec.Code, rec.Body)
		}
	})
}
