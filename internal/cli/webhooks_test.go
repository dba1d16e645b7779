package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X8, API3: "webhooks create/list/get/update/rotate-secret/test/deliveries/
// redeliver/delete" over the real API; the secret is printed once; a bad
// type is the API's field error (exit 1) and creates nothing.
func TestCLIWebhooks(t *testing.T) {
	eachDeckSet(t, func(s *models.Settings) { s.WebhookAllowLoopback = true }, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "webhooks", "list")
		if code != 0 || !strings.Contains(out, "No webhook endpoints") || !strings.Contains(out, "cluster.ready") {
			t.Fatalf("empty list: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "webhooks", "create", "--url", "https://example.com/h", "--types", "cluster.exploded"); code != 1 || !strings.Contains(errOut, "types") {
			t.Errorf("bad type: %d %s", code, errOut)
		}
		out, errOut, code = d.gpu(t, "webhooks", "create", "--url", "https://example.com/h", "--types", "cluster.ready, cluster.failed", "--description", "chat-ops")
		if code != 0 {
			t.Fatalf("create: %d %s", code, errOut)
		}
		id := regexp.MustCompile(`we_[a-z0-9]+`).FindString(out)
		secret := regexp.MustCompile(`whsec_[0-9a-f]+`).FindString(out)
		if id == "" || secret == "" {
			t.Fatalf("create printed no id or secret: %s", out)
		}
		out, _, _ = d.gpu(t, "webhooks", "list")
		mustContain(t, "list", out, id, "https://example.com/h", "enabled", "cluster.ready,cluster.failed")
		if strings.Contains(out, secret) {
			t.Error("list shows the secret")
		}
		out, errOut, code = d.gpu(t, "webhooks", "update", id, "--pause", "--types", "cluster.terminated")
		if code != 0 {
			t.Fatalf("update: %d %s", code, errOut)
		}
		mustContain(t, "update", out, "paused", "cluster.terminated", "chat-ops")
		out, errOut, code = d.gpu(t, "webhooks", "rotate-secret", id, "--overlap-hours", "2")
		if code != 0 || !strings.Contains(out, "whsec_") || strings.Contains(out, secret) || !strings.Contains(out, "old secret also signs until") {
			t.Fatalf("rotate: %d %s %s", code, out, errOut)
		}
		out, errOut, code = d.gpu(t, "webhooks", "test", id)
		if code != 0 || !strings.Contains(out, "Test event evt_") {
			t.Fatalf("test: %d %s %s", code, out, errOut)
		}
		delivery := regexp.MustCompile(`delivery (\d+)`).FindStringSubmatch(out)
		if out, _, code := d.gpu(t, "webhooks", "deliveries", id); code != 0 || !strings.Contains(out, "Nothing sent") {
			t.Errorf("deliveries before the job ran: %d %s", code, out)
		}
		if out, errOut, code := d.gpu(t, "webhooks", "redeliver", id, delivery[1]); code != 0 || !strings.Contains(out, "queued again") {
			t.Errorf("redeliver: %d %s %s", code, out, errOut)
		}
		if out, _, code := d.gpu(t, "webhooks", "get", id, "--json"); code != 0 || mustJSON(t, "get --json", out)["enabled"].(bool) {
			t.Errorf("get --json: %d %s", code, out)
		}
		if out, errOut, code := d.gpu(t, "webhooks", "delete", id); code != 0 || !strings.Contains(out, "deleted") {
			t.Errorf("delete: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "webhooks", "get", id); code != 1 || !strings.Contains(errOut, "not_found") {
			t.Errorf("get after delete: %d %s", code, errOut)
		}
	})
}
